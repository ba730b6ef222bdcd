package vmguest

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

	"github.com/rdmalab/rdmalab/sandbox"
)

// SpareRunner runs each request in a fresh `labserver agent` child in its
// own process group, as sandbox.HostBackend does, but starts the child for
// the next run as soon as the previous one ends. A Go binary's start-up
// (package init of everything linked in) takes one to two seconds under
// TCG; with a spare waiting on its stdin, a run's first event comes in tens
// of milliseconds instead. Every run still gets a process of its own, so an
// experiment that changes its limits or capabilities cannot leak into the
// next, and cancelling kills the whole group.
type SpareRunner struct {
	Argv []string // the agent's command line, e.g. /usr/bin/labserver agent

	mu    sync.Mutex
	spare *agentChild
}

// agentChild is one started agent waiting for its request.
type agentChild struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File
	stderr *os.File
	exited chan struct{}
	err    error // Wait's result, valid after exited
}

func (r *SpareRunner) start() (*agentChild, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := exec.Command(r.Argv[0], r.Argv[1:]...)
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("start agent: %w", err)
	}
	c := &agentChild{cmd: cmd, stdin: stdin, stdout: outR, stderr: errR, exited: make(chan struct{})}
	go func() { c.err = cmd.Wait(); close(c.exited) }()
	return c, nil
}

// Prepare starts the spare child if there is none.
func (r *SpareRunner) Prepare() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.spare != nil {
		return
	}
	if c, err := r.start(); err == nil {
		r.spare = c
	}
}

// take returns the spare if it is still alive, else a fresh child.
func (r *SpareRunner) take() (*agentChild, error) {
	r.mu.Lock()
	c := r.spare
	r.spare = nil
	r.mu.Unlock()
	if c != nil {
		select {
		case <-c.exited:
			c.close()
		default:
			return c, nil
		}
	}
	return r.start()
}

func (c *agentChild) close() {
	c.stdout.Close()
	c.stderr.Close()
}

func (c *agentChild) kill() {
	_ = unix.Kill(-c.cmd.Process.Pid, unix.SIGKILL)
}

// Run performs one request; it has the signature of sandbox.Backend.Exec.
func (r *SpareRunner) Run(ctx context.Context, req sandbox.Request, emit func(sandbox.Event)) error {
	c, err := r.take()
	if err != nil {
		return err
	}
	defer c.close()
	defer func() { go r.Prepare() }()

	body, err := json.Marshal(req)
	if err != nil {
		c.kill()
		return fmt.Errorf("encode request: %w", err)
	}
	if sandbox.CommandsFrom(ctx) != nil {
		// An interactive run: its commands follow the request on stdin.
		defer sandbox.FeedCommands(ctx, c.stdin, append(body, '\n'))()
	} else {
		_, err = c.stdin.Write(append(body, '\n'))
		c.stdin.Close()
	}
	if err != nil {
		c.kill()
		<-c.exited
		return &sandbox.ProtocolError{Reason: "the agent did not take the request: " + describeChildExit(c.err)}
	}

	var (
		wg      sync.WaitGroup
		readErr error
		last    string
		lastMu  sync.Mutex
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		readErr = sandbox.NewAgentReader(c.stdout, 0).ReadRun(emit)
		if _, ok := errors.AsType[*sandbox.ProtocolError](readErr); ok {
			c.kill() // garbage on stdout: the agent is broken
		}
		_, _ = io.Copy(io.Discard, c.stdout)
	}()
	go func() {
		defer wg.Done()
		// stderr lines become log events, bounded like the host backend's.
		br := bufio.NewReader(c.stderr)
		used := 0
		for {
			line, err := br.ReadString('\n')
			if line = strings.TrimRight(line, "\r\n"); line != "" {
				lastMu.Lock()
				last = line
				lastMu.Unlock()
				if used += len(line); used <= 16<<10 {
					emit(sandbox.Event{Type: sandbox.EvLog, Level: "stderr", Message: line})
				}
			}
			if err != nil {
				return
			}
		}
	}()

	select {
	case <-c.exited:
	case <-ctx.Done():
		c.kill()
		<-c.exited
	}
	c.kill() // whatever the agent left in its group ends with the run
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(2 * time.Second):
		c.close() // a process that left the group holds the pipes
		<-drained
	}

	if ctx.Err() != nil {
		return ctx.Err()
	}
	if readErr == nil {
		return nil
	}
	if _, ok := errors.AsType[*sandbox.AgentFailure](readErr); ok {
		return readErr
	}
	reason := readErr.Error() + " (" + describeChildExit(c.err) + ")"
	if last != "" {
		reason += "; its last words: " + last
	}
	return &sandbox.ProtocolError{Reason: reason}
}

// Close kills the spare.
func (r *SpareRunner) Close() {
	r.mu.Lock()
	c := r.spare
	r.spare = nil
	r.mu.Unlock()
	if c != nil {
		c.kill()
		<-c.exited
		c.close()
	}
}

func describeChildExit(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "agent killed by signal " + unix.SignalName(ws.Signal())
		}
		return fmt.Sprintf("agent exit status %d", ee.ExitCode())
	}
	if err == nil {
		return "agent exited"
	}
	return err.Error()
}
