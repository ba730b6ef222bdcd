// Package labproc builds `labserver` (and `labagent` beside it) and runs
// it as a child process on a loopback port with its own database, for the
// tests that need the real server as a separate process: the load test
// (loadtest/), the fault tests that stop, kill and restart it (faults/),
// and the benchmark report.
package labproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StartTimeout bounds the wait for a started server to answer /healthz:
// generous, because the machines' two cores are shared with builds and a
// QEMU guest.
const StartTimeout = 90 * time.Second

// Build compiles cmd/labserver into dir and returns the binary's path,
// with cmd/labagent beside it (the Soft-RoCE guest runs labagent; see
// BuildAgent). race builds labserver with the race detector (tests under
// -race then also check the server they load). $LAB_TEST_LABSERVER names
// a prebuilt binary instead.
func Build(ctx context.Context, dir string, race bool) (string, error) {
	if p := os.Getenv("LAB_TEST_LABSERVER"); p != "" {
		return p, nil
	}
	out := filepath.Join(dir, "labserver")
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "github.com/rdmalab/rdmalab/cmd/labserver")
	cmd := exec.CommandContext(ctx, "go", args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build labserver: %w\n%s", err, b)
	}
	if _, err := BuildAgent(ctx, dir); err != nil {
		return "", err
	}
	return out, nil
}

// BuildAgent compiles cmd/labagent, the agent binary the Soft-RoCE guest
// runs, into dir and returns its path. With $LAB_TEST_LABSERVER it is the
// labagent beside that binary (make build builds both) when one is there.
func BuildAgent(ctx context.Context, dir string) (string, error) {
	if p := os.Getenv("LAB_TEST_LABSERVER"); p != "" {
		beside := filepath.Join(filepath.Dir(p), "labagent")
		if _, err := os.Stat(beside); err == nil {
			return beside, nil
		}
	}
	out := filepath.Join(dir, "labagent")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/rdmalab/rdmalab/cmd/labagent")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build labagent: %w\n%s", err, b)
	}
	return out, nil
}

// Options says how to start a server. Zero fields take defaults.
type Options struct {
	Bin string   // the labserver binary (required)
	Dir string   // working directory; the database is Dir/lab.db unless DB is set
	DB  string   // database path
	Env []string // added to the environment (KEY=value)
	// Args are extra `serve` flags.
	Args []string
	// Output, when set, also receives the server's log lines.
	Output io.Writer
}

// Server is one running `labserver serve`.
type Server struct {
	URL string // http://127.0.0.1:PORT
	DB  string
	Pid int

	cmd  *exec.Cmd
	logs *logBuffer
	done chan error
}

// servingRE finds the address in the "serving" log line.
var servingRE = regexp.MustCompile(`msg=serving url=(http://\S+)`)

// Start starts `labserver serve` on 127.0.0.1:0 and returns once it
// answers /healthz. The child leads its own process group (its agents
// join it), so Kill can take everything down at once; it is killed when
// the test process ends, also when that is killed, and its guests die
// with it (see startOnSpawner). By default no Soft-RoCE guest boots
// (LAB_BACKEND=none), no run is shared (LAB_SHARE_RUNS=0) and one paused
// spare terminal guest is kept, after the first terminal (LAB_SPARES=1: a
// test's lab does not restore a class of spares it never uses); pass
// others in Env to change that.
func Start(opt Options) (*Server, error) {
	if opt.Bin == "" {
		return nil, errors.New("labproc: Options.Bin is required")
	}
	if opt.Dir == "" {
		return nil, errors.New("labproc: Options.Dir is required")
	}
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return nil, err
	}
	if opt.DB == "" {
		opt.DB = filepath.Join(opt.Dir, "lab.db")
	}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", opt.DB}, opt.Args...)
	cmd := exec.Command(opt.Bin, args...)
	cmd.Dir = opt.Dir
	// Runs are not shared between learners (LAB_SHARE_RUNS=0): a test's
	// learners each get the run they asked for; a test of shared runs
	// passes its own LAB_SHARE_RUNS in Env.
	cmd.Env = append(os.Environ(), "LAB_VM_DIR="+filepath.Join(opt.Dir, "vm"), "LAB_BACKEND=none", "LAB_SHARE_RUNS=0", "LAB_SPARES=1")
	cmd.Env = append(cmd.Env, opt.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	s := &Server{DB: opt.DB, cmd: cmd, logs: &logBuffer{tee: opt.Output}, done: make(chan error, 1)}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	if err := startOnSpawner(cmd); err != nil {
		return nil, fmt.Errorf("labproc: start %s: %w", opt.Bin, err)
	}
	s.Pid = cmd.Process.Pid
	go func() { s.done <- cmd.Wait(); pw.Close() }()

	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.logs.add(line)
			if m := servingRE.FindStringSubmatch(line); m != nil {
				select {
				case urlc <- strings.TrimSuffix(m[1], "/"):
				default:
				}
			}
		}
		// A line past the scanner's 1 MiB ends the reading of lines;
		// what follows that line's first MiB is still counted.
		n, _ := io.Copy(io.Discard, pr)
		s.logs.mu.Lock()
		s.logs.bytes += n
		s.logs.mu.Unlock()
	}()
	select {
	case u := <-urlc:
		s.URL = u
	case err := <-s.done:
		s.done <- err
		return nil, fmt.Errorf("labproc: labserver exited before serving (%v):\n%s", err, s.Logs())
	case <-time.After(StartTimeout):
		_ = s.Kill()
		return nil, fmt.Errorf("labproc: labserver did not report its address within %s:\n%s", StartTimeout, s.Logs())
	}
	if err := s.waitHealthy(); err != nil {
		_ = s.Kill()
		return nil, err
	}
	return s, nil
}

// spawner is the thread every server is forked from (startOnSpawner).
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

// startOnSpawner starts cmd from one locked thread that lives as long as
// this process. A child's Pdeathsig fires when the thread that forked it
// ends, not the process, and Go ends a thread when a goroutine locked to
// it returns; forked from any other thread, a server could be killed in
// the middle of a test.
func startOnSpawner(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread never ends
			for req := range spawner.reqs {
				req.err <- req.cmd.Start()
			}
		}()
	})
	req := spawnReq{cmd: cmd, err: make(chan error, 1)}
	spawner.reqs <- req
	return <-req.err
}

func (s *Server) waitHealthy() error {
	deadline := time.Now().Add(StartTimeout)
	for {
		res, err := http.Get(s.URL + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", res.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("labproc: labserver at %s never became healthy: %w\n%s", s.URL, err, s.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop asks the server to shut down (SIGTERM) and waits up to timeout for
// it to exit; past that it kills the process group and says so.
func (s *Server) Stop(timeout time.Duration) error {
	if s.cmd.Process == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		s.done <- err
		if err != nil {
			return fmt.Errorf("labproc: labserver exited with %v:\n%s", err, s.Tail(40))
		}
		return nil
	case <-time.After(timeout):
		_ = s.Kill()
		return fmt.Errorf("labproc: labserver ignored SIGTERM for %s; killed", timeout)
	}
}

// Kill kills the server's whole process group (SIGKILL: no shutdown work
// at all, like a power cut for the process) and waits for it.
func (s *Server) Kill() error {
	if s.cmd.Process == nil {
		return nil
	}
	_ = syscall.Kill(-s.Pid, syscall.SIGKILL)
	err := <-s.done
	s.done <- err
	return nil
}

// Exited reports whether the process has ended, without waiting.
func (s *Server) Exited() bool {
	select {
	case err := <-s.done:
		s.done <- err
		return true
	default:
		return false
	}
}

// LogBytes is how many bytes the server has printed so far (its log,
// counted whole, also past what Logs keeps).
func (s *Server) LogBytes() int64 {
	s.logs.mu.Lock()
	defer s.logs.mu.Unlock()
	return s.logs.bytes
}

// Logs is everything the server has printed so far.
func (s *Server) Logs() string { return s.logs.String() }

// Tail is the last n lines of the server's output.
func (s *Server) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(s.Logs(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}

// logBuffer keeps the server's output for failure messages, bounded: a
// loaded server logs a line per request, so past 1 MiB only the last
// tailLines lines are kept beside the start (how it came up).
type logBuffer struct {
	mu      sync.Mutex
	head    strings.Builder
	tail    []string
	dropped int
	bytes   int64 // every line's, newline included
	tee     io.Writer
}

const tailLines = 500

func (b *logBuffer) add(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bytes += int64(len(line)) + 1
	if b.tee != nil {
		fmt.Fprintln(b.tee, line)
	}
	if b.head.Len() < 1<<20 {
		b.head.WriteString(line + "\n")
		return
	}
	if len(b.tail) == tailLines {
		b.tail = b.tail[1:]
		b.dropped++
	}
	b.tail = append(b.tail, line)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out strings.Builder
	out.WriteString(b.head.String())
	if b.dropped > 0 {
		fmt.Fprintf(&out, "… %d lines not kept …\n", b.dropped)
	}
	for _, l := range b.tail {
		out.WriteString(l + "\n")
	}
	return out.String()
}

// Once builds labserver the first time a test asks for it (Build, without
// the race detector) and gives every later caller the same binary, or the
// same error. The tests that run the real server as a process are not the
// quick tier: under -short Get skips the test with why.
type Once struct {
	Dir  string // where it is built (the package's temporary folder)
	once sync.Once
	path string
	err  error
}

// Get returns the binary's path, skips the test under -short, or fails it.
func (o *Once) Get(t testing.TB, why string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: " + why + ", not in the quick tier")
	}
	o.once.Do(func() { o.path, o.err = Build(context.Background(), o.Dir, false) })
	if o.err != nil {
		t.Fatal(o.err)
	}
	return o.path
}
