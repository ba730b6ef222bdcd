// Package vmtest is what the tests that boot real guests share (packages
// vm and terminal): the guest's agent and labserver built from this tree,
// the guest image built from them, once per test binary, and a logger to
// the test's log. Every test that boots QEMU comes through Image, so the
// quick tier (go test -short) skips them in this one place. Tests only.
package vmtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rdmalab/rdmalab/internal/labproc"
	"github.com/rdmalab/rdmalab/machines/vmimage"
)

// The integration tests boot real guests under QEMU (TCG on machines
// without a working KVM). They need the real labagent binary in the guest
// (and labserver for the host agents the benchmarks compare with): built
// once (a link step when `make build` ran first).

var (
	tmp           string
	labserverOnce sync.Once
	labserverBin  string
	labserverErr  error
	labagentOnce  sync.Once
	labagentBin   string
	labagentErr   error
	imageOnce     sync.Once
	imageDir      string
	imageErr      error
)

// Main runs a package's tests (its TestMain calls it) with a temporary
// folder for the binaries and the image, removed afterwards.
func Main(m *testing.M) {
	var err error
	tmp, err = os.MkdirTemp("", "rdmalab-vm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// Labserver returns the path of a labserver binary built from this tree.
func Labserver(t testing.TB) string {
	t.Helper()
	labserverOnce.Do(func() {
		if p := os.Getenv("LAB_TEST_LABSERVER"); p != "" {
			labserverBin = p
			return
		}
		labserverBin = filepath.Join(tmp, "labserver")
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", labserverBin, "./cmd/labserver")
		cmd.Dir = root()
		if out, err := cmd.CombinedOutput(); err != nil {
			labserverErr = fmt.Errorf("go build ./cmd/labserver: %w\n%s", err, out)
		}
	})
	if labserverErr != nil {
		t.Fatal(labserverErr)
	}
	return labserverBin
}

// root is the module's root folder.
func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Agent returns the path of the guest's agent binary built from this
// tree (the one beside $LAB_TEST_LABSERVER when make build made it).
func Agent(t testing.TB) string {
	t.Helper()
	labagentOnce.Do(func() {
		labagentBin, labagentErr = labproc.BuildAgent(context.Background(), tmp)
	})
	if labagentErr != nil {
		t.Fatal(labagentErr)
	}
	return labagentBin
}

// Image builds the guest image once for all tests and returns its
// folder; under -short it skips the test. The folder is shared by the
// test binaries of every package (vm, terminal) and kept between runs:
// $LAB_TEST_IMAGE_DIR, else .cache/vm-test at the module's root. The
// build is locked and skipped when an image of the same inputs is there
// (vmimage.Build), so `go test ./...` builds it once, not once a package.
func Image(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: boots a guest (QEMU), not in the quick tier")
	}
	RequireImageInputs(t)
	bin := Agent(t)
	imageOnce.Do(func() {
		imageDir = os.Getenv("LAB_TEST_IMAGE_DIR")
		if imageDir == "" {
			imageDir = filepath.Join(root(), ".cache", "vm-test")
		}
		_, _, imageErr = vmimage.Build(context.Background(), vmimage.BuildOptions{Dir: imageDir, Agent: bin})
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageDir
}

// Writer writes to the test's log, a line per write.
type Writer struct{ T testing.TB }

func (w Writer) Write(p []byte) (int, error) {
	w.T.Helper()
	w.T.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Logger logs to the test's log at level Info.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(Writer{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// RequireImageInputs fails (not skips) when the machine lacks packages: make
// test installs them, so their absence is a real error with a fix command.
func RequireImageInputs(t testing.TB) {
	t.Helper()
	if err := vmimage.Preflight(context.Background(), "/proc/self/exe"); err != nil {
		var me *vmimage.MissingError
		if errors.As(err, &me) {
			t.Fatalf("this machine cannot build the guest: %v", me)
		}
		t.Fatal(err)
	}
}

// Median is the middle of xs (the mean of the two middle ones for an even
// count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Round3 rounds xs to three decimals (for a log line).
func Round3(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(int(x*1000+0.5)) / 1000
	}
	return out
}

// OwnCache is a cache directory with the shared test image linked in, so a
// test's snapshot and verdict files are its own.
func OwnCache(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	LinkImage(t, dir)
	return dir
}

// LinkImage links the shared test image's files (kernel, initramfs, the
// on-demand disk, its manifest) into dir.
func LinkImage(t testing.TB, dir string) {
	t.Helper()
	src := Image(t)
	im, err := vmimage.LoadImage(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range im.Files() {
		if err := os.Symlink(filepath.Join(src, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
}
