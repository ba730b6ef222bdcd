package vm

import (
	"context"
	"errors"
	"fmt"
	"github.com/rdmalab/rdmalab/internal/labproc"
	"github.com/rdmalab/rdmalab/sandbox/vmimage"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The integration tests boot real guests under QEMU (TCG on machines
// without a working KVM). They need the real labagent binary in the guest
// (and labserver for the host agents the benchmarks compare with): built
// once (a link step when `make build` ran first).

var (
	testTmp       string
	labserverOnce sync.Once
	labserverBin  string
	labserverErr  error
	labagentOnce  sync.Once
	labagentBin   string
	labagentErr   error
	imageOnce     sync.Once
	testImageDir  string
	testImageErr  error
)

func TestMain(m *testing.M) {
	var err error
	testTmp, err = os.MkdirTemp("", "rdmalab-vm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(testTmp)
	os.Exit(code)
}

// labserver returns the path of a labserver binary built from this tree.
func labserver(t testing.TB) string {
	t.Helper()
	labserverOnce.Do(func() {
		if p := os.Getenv("LAB_TEST_LABSERVER"); p != "" {
			labserverBin = p
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		labserverBin = filepath.Join(testTmp, "labserver")
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", labserverBin, "./cmd/labserver")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			labserverErr = fmt.Errorf("go build ./cmd/labserver: %w\n%s", err, out)
		}
	})
	if labserverErr != nil {
		t.Fatal(labserverErr)
	}
	return labserverBin
}

// labagent returns the path of the guest's agent binary built from this
// tree (the one beside $LAB_TEST_LABSERVER when make build made it).
func labagent(t testing.TB) string {
	t.Helper()
	labagentOnce.Do(func() {
		labagentBin, labagentErr = labproc.BuildAgent(context.Background(), testTmp)
	})
	if labagentErr != nil {
		t.Fatal(labagentErr)
	}
	return labagentBin
}

// testImage builds the guest image once for all tests.
// Every test that boots QEMU comes through here (testConfig too), so the
// quick tier (go test -short) skips them in this one place.
func testImage(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: boots a guest (QEMU), not in the quick tier")
	}
	requireImageInputs(t)
	bin := labagent(t)
	imageOnce.Do(func() {
		testImageDir = filepath.Join(testTmp, "image")
		_, _, testImageErr = vmimage.Build(context.Background(), vmimage.BuildOptions{Dir: testImageDir, Agent: bin})
	})
	if testImageErr != nil {
		t.Fatal(testImageErr)
	}
	return testImageDir
}

// testConfig is a guest configuration for tests: the shared image, logs
// to the test log, a boot timeout generous enough for a loaded machine.
func testConfig(t testing.TB) Config {
	return Config{
		Dir:         testImage(t),
		Agent:       labagent(t),
		BootTimeout: 3 * time.Minute, // TCG on 2 shared cores: boots take 5–40 s
		Logger:      slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func newTestLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, nil))
}

// requireImageInputs fails (not skips) when the machine lacks packages: make
// test installs them, so their absence is a real error with a fix command.
func requireImageInputs(t testing.TB) {
	t.Helper()
	if err := vmimage.Preflight(context.Background(), "/proc/self/exe"); err != nil {
		var me *vmimage.MissingError
		if errors.As(err, &me) {
			t.Fatalf("this machine cannot build the guest: %v", me)
		}
		t.Fatal(err)
	}
}
