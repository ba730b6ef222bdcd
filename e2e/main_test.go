package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// chromiumPackage is the Debian package that provides the browser; `make
// test` installs it (APT_TEST in the Makefile).
const chromiumPackage = "chromium"

var (
	// labBinary is the labserver built once for the whole package.
	labBinary string
	// chromiumPath is the browser the tests drive.
	chromiumPath string
	// setupErr, when set, fails every test with the reason (a missing
	// browser, a build that failed): never a silent skip.
	setupErr error
	// profileDir is the shared Chromium's fresh --user-data-dir.
	profileDir string
	// shared is one labserver that the learner flows share; each test has
	// its own browser profile, hence its own learner cookie.
	shared *lab
	// timings records how long each flow took, for the summary.
	timings timingLog
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "rdmalab-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)

	chromiumPath, setupErr = findChromium()
	if setupErr == nil {
		if labBinary = os.Getenv("LAB_E2E_LABSERVER"); labBinary == "" {
			labBinary, setupErr = buildLabserver(tmp)
		}
	}
	if setupErr == nil {
		shared, setupErr = startLab(filepath.Join(tmp, "shared"), nil)
	}
	profileDir = filepath.Join(tmp, "chromium-profile")
	defer stopChromium()
	var browserStart time.Duration
	if setupErr == nil {
		t0 := time.Now()
		_, setupErr = startChromium(profileDir)
		browserStart = time.Since(t0)
	}
	t0 := time.Now()
	code := m.Run()
	total := time.Since(t0)
	if shared != nil {
		if err := shared.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: stopping the shared labserver:", err)
			code = 1
		}
	}
	if setupErr == nil && !testing.Short() {
		// The issue asks for every flow together in under two minutes: we
		// report the time, we never assert it (the machine is shared).
		fmt.Fprintf(os.Stderr, "e2e: Chromium started in %s; the browser flows took %s in all\n%s",
			browserStart.Round(100*time.Millisecond), total.Round(100*time.Millisecond), timings.String())
	}
	return code
}

// findChromium locates the browser: $LAB_CHROMIUM, then Debian's path.
func findChromium() (string, error) {
	for _, p := range []string{os.Getenv("LAB_CHROMIUM"), "/usr/bin/chromium"} {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no Chromium found (looked at $LAB_CHROMIUM, /usr/bin/chromium and $PATH): "+
		"install the Debian package %q (`sudo apt-get install %s`, or run `make test`, which installs it); "+
		"the browser tests never download a browser", chromiumPackage, chromiumPackage)
}

// buildLabserver builds cmd/labserver into dir ($LAB_E2E_LABSERVER names
// a prebuilt binary instead). The experiments run in a
// child `labserver agent`, so the tests need the real binary, not an
// in-process server.
func buildLabserver(dir string) (string, error) {
	out := filepath.Join(dir, "labserver")
	cmd := exec.Command("go", "build", "-o", out, "github.com/rdmalab/rdmalab/cmd/labserver")
	cmd.Env = os.Environ()
	b, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build labserver: %w\n%s", err, b)
	}
	return out, nil
}

// lab is one running labserver process.
type lab struct {
	URL  string // http://127.0.0.1:PORT (no trailing slash)
	Dir  string // its working directory (database, VM cache)
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan error
}

// labStartTimeout bounds the wait for the "serving" log line: generous
// because two cores are shared with builds and a QEMU guest.
const labStartTimeout = 90 * time.Second

// startLab starts `labserver serve` on a free loopback port with a fresh
// database in dir. extraEnv adds environment variables (KEY=value).
func startLab(dir string, extraEnv []string) (*lab, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "lab.db")}
	cmd := exec.Command(labBinary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"LAB_VM_DIR="+filepath.Join(dir, "vm"),
		"LAB_ADMIN_PASSWORD="+instructorPassword,
		// RDMA experiments are not part of these flows: no Soft-RoCE guest
		// boots on the shared CPU.
		"LAB_BACKEND=none",
	)
	cmd.Env = append(cmd.Env, extraEnv...)
	// Its own process group, so a stuck server and its agents can be
	// killed together by the group id of the process we started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	l := &lab{Dir: dir, cmd: cmd, logs: &syncBuffer{}, done: make(chan error, 1)}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start labserver: %w", err)
	}
	go func() { l.done <- cmd.Wait(); pw.Close() }()

	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			l.logs.WriteString(line + "\n")
			if m := servingRE.FindStringSubmatch(line); m != nil {
				select {
				case urlc <- strings.TrimSuffix(m[1], "/"):
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case u := <-urlc:
		l.URL = u
	case err := <-l.done:
		l.done <- err
		return nil, fmt.Errorf("labserver exited before serving (%v):\n%s", err, l.logs.String())
	case <-time.After(labStartTimeout):
		l.stop()
		return nil, fmt.Errorf("labserver did not report its address within %s:\n%s", labStartTimeout, l.logs.String())
	}
	if err := l.waitHealthy(); err != nil {
		l.stop()
		return nil, err
	}
	return l, nil
}

// servingRE finds the address in the "serving" log line.
var servingRE = regexp.MustCompile(`msg=serving url=(http://\S+)`)

func (l *lab) waitHealthy() error {
	deadline := time.Now().Add(labStartTimeout)
	for {
		resp, err := http.Get(l.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("labserver at %s never became healthy: %w\n%s", l.URL, err, l.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop asks the server to shut down (SIGTERM), then kills its process
// group if it has not exited within 20 s.
func (l *lab) stop() error {
	if l.cmd.Process == nil {
		return nil
	}
	_ = l.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-l.done:
		l.done <- err
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			return err
		}
		if err != nil {
			return fmt.Errorf("labserver exited with %v:\n%s", err, tail(l.logs.String(), 40))
		}
		return nil
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL)
		err := <-l.done
		l.done <- err
		return fmt.Errorf("labserver ignored SIGTERM for 20 s; killed")
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}

// syncBuffer collects the server's output from its reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.WriteString(s)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// timingLog records how long each flow took.
type timingLog struct {
	mu    sync.Mutex
	lines []string
}

func (tl *timingLog) add(name string, d time.Duration) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.lines = append(tl.lines, fmt.Sprintf("  %-40s %s\n", name, d.Round(10*time.Millisecond)))
}

func (tl *timingLog) String() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return strings.Join(tl.lines, "")
}

// need fails t when the package could not be set up.
func need(t *testing.T) {
	t.Helper()
	if setupErr != nil {
		t.Fatal(setupErr)
	}
}

// instructorPassword is the admin password the test servers start with
// (LAB_ADMIN_PASSWORD), for the instructor flow.
const instructorPassword = "e2e-instructor-pass-123"
