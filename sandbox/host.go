package sandbox

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
)

// HostBackend runs each request in a fresh `labserver agent` child on this
// machine's kernel. The child leads its own process group, so a timeout or
// a cancel kills it together with everything it started.
type HostBackend struct {
	// Command is the agent's argv; default: this executable, "agent".
	Command []string
	// Env is added to the child's environment.
	Env []string
	// MaxLine caps one event line (DefaultMaxLine when 0).
	MaxLine int
	// MaxStderr caps the bytes of the child's stderr turned into log
	// events (default 16 KiB); the rest is counted and dropped.
	MaxStderr int
	// Grace is how long Exec waits for the output pipes to drain after the
	// group is killed (default 2 s).
	Grace time.Duration
}

// Name implements Backend.
func (h *HostBackend) Name() string { return "host" }

// Lab implements Backend. The host backend runs experiments that need no
// RDMA device, so it is ready whenever this process runs.
func (h *HostBackend) Lab(ctx context.Context) Lab {
	lab := Lab{Backend: "host", State: LabReady, Devices: []Device{}}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		lab.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	return lab
}

// Exec implements Backend: it starts the agent, writes req to its stdin and
// turns its stdout lines into events and its stderr lines into log events.
func (h *HostBackend) Exec(ctx context.Context, req Request, emit func(Event)) error {
	argv := h.Command
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("host backend: find the agent binary: %w", err)
		}
		argv = []string{exe, "agent"}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("host backend: encode request: %w", err)
	}
	body = append(body, '\n')

	outR, outW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("host backend: %w", err)
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return fmt.Errorf("host backend: %w", err)
	}
	defer errR.Close()

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), h.Env...)
	cmd.Stdin = strings.NewReader(string(body))
	// An interactive run's stdin stays open: commands follow the request.
	inR, inW, err := agentStdinPipe(ctx)
	if err != nil {
		outW.Close()
		errW.Close()
		return fmt.Errorf("host backend: %w", err)
	}
	if inR != nil {
		cmd.Stdin = inR
	}
	// *os.File outputs: the child writes straight into our pipes, and
	// exec starts no copying goroutines that Wait would block on while a
	// grandchild still holds the pipe.
	cmd.Stdout = outW
	cmd.Stderr = errW
	// Pdeathsig: if labserver itself dies (SIGKILL, OOM) the agent must not
	// run on unwatched until its time limit; the agent's own children are
	// in its group and see their pipes close.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if inR != nil {
		inR.Close()
		if err != nil {
			inW.Close()
		} else {
			defer FeedCommands(ctx, inW, body)()
		}
	}
	if err != nil {
		return fmt.Errorf("host backend: start agent %s: %w", argv[0], err)
	}
	pgid := cmd.Process.Pid

	var (
		wg        sync.WaitGroup
		readErr   error
		stderrTxt tail
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		readErr = NewAgentReader(outR, h.MaxLine).ReadRun(emit)
		if _, isProto := errors.AsType[*ProtocolError](readErr); isProto {
			// Garbage on stdout: the agent is broken, stop it now.
			_ = unix.Kill(-pgid, unix.SIGKILL)
		}
		_, _ = io.Copy(io.Discard, outR) // keep the child from blocking on a full pipe
	}()
	go func() {
		defer wg.Done()
		h.readStderr(errR, emit, &stderrTxt)
	}()

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		_ = unix.Kill(-pgid, unix.SIGKILL)
		waitErr = <-waited
	}
	// Sweep whatever the agent left behind in its group (a forked helper
	// that outlived it): nothing of a run survives the run.
	_ = unix.Kill(-pgid, unix.SIGKILL)

	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	grace := h.Grace
	if grace <= 0 {
		grace = 2 * time.Second
	}
	select {
	case <-drained:
	case <-time.After(grace):
		// A process outside the group (it escaped with setsid) holds the
		// pipes; closing our ends unblocks the readers.
		outR.Close()
		errR.Close()
		<-drained
	}

	if ctx.Err() != nil {
		return ctx.Err()
	}
	if readErr == nil {
		return nil
	}
	if af, ok := errors.AsType[*AgentFailure](readErr); ok {
		return af
	}
	// The agent did not finish properly: explain with how it ended and
	// the last thing it said on stderr.
	reason := readErr.Error()
	if waitErr != nil {
		reason += " (" + describeExit(waitErr) + ")"
	}
	if last := stderrTxt.String(); last != "" {
		reason += "; its last words: " + last
	}
	return &ProtocolError{Reason: reason}
}

func describeExit(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "agent killed by signal " + unix.SignalName(ws.Signal())
		}
		return fmt.Sprintf("agent exit status %d", ee.ExitCode())
	}
	return err.Error()
}

// readStderr turns stderr lines into log events, bounded: a chatty or
// runaway agent cannot flood the store.
func (h *HostBackend) readStderr(r io.Reader, emit func(Event), last *tail) {
	limit := h.MaxStderr
	if limit <= 0 {
		limit = 16 << 10
	}
	br := bufio.NewReaderSize(r, 4096)
	used, dropped := 0, 0
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			line = strings.TrimRight(line, "\r\n")
			last.set(line)
			if used+len(line) <= limit {
				used += len(line)
				emit(Event{Type: EvLog, Level: "stderr", Message: line})
			} else {
				dropped += len(line)
			}
		}
		if err != nil {
			break
		}
	}
	if dropped > 0 {
		emit(Event{Type: EvLog, Level: "warn", Message: fmt.Sprintf("%d more bytes of agent stderr were dropped", dropped)})
	}
}

// tail keeps the last stderr line, clipped, for failure reasons.
type tail struct {
	mu sync.Mutex
	s  string
}

func (t *tail) set(s string) {
	if strings.TrimSpace(s) == "" {
		return
	}
	t.mu.Lock()
	t.s = clip(s, 300)
	t.mu.Unlock()
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.s
}

// NoBackend is the backend of a need this machine cannot serve: every run
// fails at once with Reason.
type NoBackend struct {
	Reason string
}

// Name implements Backend.
func (n NoBackend) Name() string { return "none" }

// Lab implements Backend.
func (n NoBackend) Lab(context.Context) Lab {
	return Lab{Backend: "none", State: LabNone, Reason: n.Reason, Devices: []Device{}}
}

// Exec implements Backend.
func (n NoBackend) Exec(context.Context, Request, func(Event)) error {
	return errors.New(n.Reason)
}
