// Package agentproc starts the lab's agent processes: an agent for one run
// (`labserver agent` on the host, `labagent` inside the guest) or an
// experiment's helper (a re-executed agent). Other children are started
// where they are used, with exec directly: QEMU (machines/vm), the learner's
// shells and task checks (machines/vmguest), perftest, strace and tc
// (sandbox/rdmaexp, sandbox/netshape), Soft-RoCE setup (sandbox/rxedev) and
// the image build (machines/vmimage). A child started here gets pipes on all
// three streams and Pdeathsig, so it never outlives labserver; an agent leads its
// own process group, so a cancel kills it with everything it started. Its
// stderr is read with a bounded line reader and a budget in bytes, so a
// runaway child cannot grow memory or flood the store; when it ends, the
// group is swept and the pipes drained with a grace period; its exit is
// described in words.
//
// Agent (agent.go) runs sandbox requests with it, optionally keeping the
// next child started (the guest's spare); Helper (helper.go) is the spec of
// an experiment's helper process.
package agentproc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/internal/lineio"
	"github.com/rdmalab/rdmalab/internal/textclip"
)

// Defaults of Output.
const (
	DefaultMaxStderr = 16 << 10        // stderr bytes passed on per child
	DefaultGrace     = 2 * time.Second // wait for the pipes after the kill
	maxStderrLine    = 4 << 10         // one stderr line is clipped here
	lastLineMax      = 300             // the last words kept for a failure reason
)

// Spec says what to start.
type Spec struct {
	Argv []string
	Env  []string // the child's whole environment; nil: this process's
	// Group makes the child lead a new process group, so Kill ends it and
	// everything it started (an agent). Without it the child stays in our
	// group (a helper in its agent's group, which the run's kill ends).
	Group bool
	// Outlive leaves out the parent-death signal: the child survives
	// labserver's or the agent's death (a guard that restores state).
	Outlive bool
	// Nice lowers the child's CPU priority by this much (its children
	// inherit it); 0 leaves it as ours.
	Nice int
}

// Proc is a started child.
type Proc struct {
	group  bool
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	stderr *os.File
	exited chan struct{}
	err    error // Wait's result, valid once exited is closed
}

// Start starts the child with pipes on stdin, stdout and stderr.
func Start(s Spec) (*Proc, error) {
	if len(s.Argv) == 0 {
		return nil, errors.New("start child: empty command")
	}
	var fds [6]*os.File // in r/w, out r/w, err r/w
	closeAll := func() {
		for _, f := range fds {
			if f != nil {
				f.Close()
			}
		}
	}
	for i := 0; i < 6; i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("start %s: %w", s.Argv[0], err)
		}
		fds[i], fds[i+1] = r, w
	}
	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	cmd.Env = s.Env
	// *os.File streams: the child uses our pipes directly, and exec starts
	// no copying goroutines that Wait would block on while a grandchild
	// still holds a pipe.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = fds[0], fds[3], fds[5]
	// Pdeathsig: if labserver itself dies (SIGKILL, OOM), the child must not
	// run on unwatched; its own children are in its group and see their
	// pipes close.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: s.Group, Pdeathsig: syscall.SIGKILL}
	if s.Outlive {
		cmd.SysProcAttr.Pdeathsig = 0
	}
	err := cmd.Start()
	fds[0].Close()
	fds[3].Close()
	fds[5].Close()
	if err != nil {
		fds[1].Close()
		fds[2].Close()
		fds[4].Close()
		return nil, fmt.Errorf("start %s: %w", s.Argv[0], err)
	}
	if s.Nice > 0 {
		// Set once it runs (exec has no nice attribute): a child it forked
		// in its first microseconds would keep our priority, and an agent
		// forks only once it has its request. A failure only leaves it at
		// our priority. Linux's getpriority answers 20-nice.
		if p, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0); err == nil {
			_ = syscall.Setpriority(syscall.PRIO_PROCESS, cmd.Process.Pid, min(20-p+s.Nice, 19))
		}
	}
	p := &Proc{group: s.Group, cmd: cmd, stdin: fds[1], stdout: fds[2], stderr: fds[4], exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// Pid is the child's process id (its group id with Spec.Group).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Stdout is the child's stdout, for a caller that reads it itself instead
// of through Watch.
func (p *Proc) Stdout() io.Reader { return p.stdout }

// Exited is closed when the child has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Alive reports whether the child has not exited yet.
func (p *Proc) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Send writes v to the child's stdin as one JSON line.
func (p *Proc) Send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode for the child: %w", err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write to the child: %w", err)
	}
	return nil
}

// CloseInput closes the child's stdin: it reads end of file.
func (p *Proc) CloseInput() { _ = p.stdin.Close() }

// Kill sends SIGKILL to the child's group (Spec.Group) or to the child.
// It is safe to call at any time, also after the child exited: for a group
// that sweeps what the child left behind.
func (p *Proc) Kill() {
	if p.group {
		_ = unix.Kill(-p.cmd.Process.Pid, unix.SIGKILL)
		return
	}
	select {
	case <-p.exited: // reaped: the pid may be someone else's now
	default:
		_ = p.cmd.Process.Kill()
	}
}

// Close kills the child, waits for it and closes our pipe ends.
func (p *Proc) Close() {
	p.Kill()
	<-p.exited
	p.stdin.Close()
	p.stdout.Close()
	p.stderr.Close()
}

// ExitError is the child's Wait result once it exited (nil: exit status 0).
func (p *Proc) ExitError() error {
	<-p.exited
	return p.err
}

// Describe says how a child ended, from its Wait error: "exit status 2",
// "killed by signal SIGKILL" or "exited".
func Describe(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + unix.SignalName(ws.Signal())
		}
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	if err == nil {
		return "exited"
	}
	return err.Error()
}

// Output says how Watch treats the child's output.
type Output struct {
	// Stdout reads the child's stdout. It may return early (Watch throws
	// the rest away so the child never blocks on a full pipe) and may
	// Kill the child when what it reads is broken.
	Stdout func(r io.Reader) error
	// Stderr receives each stderr line (clipped to 4 KiB) while the byte
	// budget lasts; nil ignores them (Result still has the last one).
	Stderr func(line string)
	// MaxStderr is the budget of stderr bytes passed to Stderr
	// (DefaultMaxStderr when 0); the rest is counted in Result.Dropped.
	MaxStderr int
	// Grace is how long Watch waits for the pipes after the child is gone
	// (DefaultGrace when 0): a process that escaped the group (setsid)
	// may hold them, and then our ends are closed.
	Grace time.Duration
}

// Result is how a watched child ended.
type Result struct {
	Read    error  // what Output.Stdout returned
	Exit    error  // the child's Wait error (nil: exit status 0)
	Dropped int    // stderr bytes not passed to Output.Stderr
	Last    string // the last non-blank stderr line, clipped, for failure reasons
}

// Watch reads the child's output until it exits, or kills it when ctx is
// done; then it sweeps the child's group and drains the pipes.
func (p *Proc) Watch(ctx context.Context, o Output) Result {
	var (
		res  Result
		wg   sync.WaitGroup
		last lastLine
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		if o.Stdout != nil {
			res.Read = o.Stdout(p.stdout)
		}
		_, _ = io.Copy(io.Discard, p.stdout)
	}()
	go func() {
		defer wg.Done()
		res.Dropped = readStderr(p.stderr, o.MaxStderr, o.Stderr, &last)
	}()

	select {
	case <-p.exited:
	case <-ctx.Done():
		p.Kill()
		<-p.exited
	}
	// Nothing of a run survives the run: sweep what the child left in its
	// group (a forked helper that outlived it).
	p.Kill()

	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	grace := o.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-drained:
	case <-t.C:
		p.stdout.Close()
		p.stderr.Close()
		<-drained
	}
	res.Exit = p.err
	res.Last = last.get()
	return res
}

// readStderr passes stderr lines to fn within max bytes and returns how
// many bytes it dropped. Lines are read with a bound, so an endless line
// costs a fixed buffer, not memory without end.
func readStderr(r io.Reader, max int, fn func(string), last *lastLine) (dropped int) {
	if max <= 0 {
		max = DefaultMaxStderr
	}
	br := bufio.NewReaderSize(r, 4096)
	used := 0
	for {
		b, cut, err := lineio.ReadClipped(br, maxStderrLine)
		dropped += cut
		if len(b) > 0 {
			line := string(b)
			last.set(line)
			if used+len(line) <= max {
				used += len(line)
				if fn != nil {
					fn(line)
				}
			} else {
				dropped += len(line)
			}
		}
		if err != nil {
			return dropped
		}
	}
}

// lastLine keeps the last non-blank stderr line, clipped.
type lastLine struct {
	mu sync.Mutex
	s  string
}

func (l *lastLine) set(s string) {
	if strings.TrimSpace(s) == "" {
		return
	}
	l.mu.Lock()
	l.s = textclip.Bytes(s, lastLineMax)
	l.mu.Unlock()
}

func (l *lastLine) get() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s
}
