package agentproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/sandbox"
)

// Agent runs each request in a fresh `labserver agent` child on the kernel
// it runs on: it is the host backend, and inside the guest the runner of
// the port server. The child leads its own process group, so a timeout or
// a cancel kills it together with everything it started, and an experiment
// that changes its own limits or capabilities cannot leak into the next run.
//
// With Spare, the child for the next run is started as soon as one run
// ends (and by Prepare): a Go binary's start-up takes a second or more
// under TCG, and a spare waiting on its stdin answers in milliseconds.
type Agent struct {
	// Command is the agent's argv; default: this executable, "agent".
	Command []string
	// Env is added to the child's environment.
	Env []string
	// MaxLine caps one event line (sandbox.DefaultMaxLine when 0).
	MaxLine int
	// MaxStderr caps the bytes of the child's stderr turned into log
	// events (DefaultMaxStderr when 0); the rest is counted and dropped.
	MaxStderr int
	// Grace is how long Exec waits for the output pipes to drain after the
	// group is killed (DefaultGrace when 0).
	Grace time.Duration
	// Spare keeps the next run's child started.
	Spare bool
	// Nice lowers the children's CPU priority (Spec.Nice): the host runs
	// of a lab whose web server shares the machine (HostNice).
	Nice int

	mu    sync.Mutex
	spare *Proc
	// starting is closed when the spare being started is in place; nil
	// when none is. A run that finds one waits for it rather than start a
	// second child beside it: two Go start-ups at once on the guest's one
	// vCPU stretched a timing run that began right after another.
	starting chan struct{}
}

// Name implements sandbox.Backend.
func (a *Agent) Name() string { return "host" }

// Lab implements sandbox.Backend. Host experiments need no RDMA device, so
// the lab is ready whenever this process runs.
func (a *Agent) Lab(ctx context.Context) sandbox.Lab {
	lab := sandbox.Lab{Backend: "host", State: sandbox.LabReady, Devices: []sandbox.Device{}}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		lab.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	return lab
}

func (a *Agent) spec() (Spec, error) {
	argv := a.Command
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return Spec{}, fmt.Errorf("find the agent binary: %w", err)
		}
		argv = DefaultArgv(exe)
	}
	return Spec{Argv: argv, Env: append(os.Environ(), a.Env...), Group: true, Nice: a.Nice}, nil
}

// HostNice is the priority host runs get below the lab's web server. A
// memlock run costs ~100 ms of CPU (the agent and its helper child); under
// make load, three learners running them back to back, at our priority,
// put the p99 of pages, answers and the event fan-out at 30–140 ms, and
// 12–42 ms at nice 10. What host experiments report is CPU time per byte
// (tcp-cost) or limits (memlock), which priority does not change; the
// guests' timing runs are not host runs.
const HostNice = 10

// SmallAgent is the agent-only binary `make build` puts beside labserver
// (cmd/labagent; the guest image carries it too).
const SmallAgent = "labagent"

// DefaultArgv is how a host run's agent child is started when exe (this
// process's executable) is labserver: the small labagent beside it when
// there is one, else exe's `agent` verb. labagent starts in ~20 ms of CPU
// here against ~110 ms for labserver, which initializes the web, store
// and Markdown stack it never uses in an agent; every host run, and its
// helper children (re-executions of the same binary), pays that, and
// under `make load` those start-ups were a large share of the machine.
func DefaultArgv(exe string) []string {
	if filepath.Base(exe) == SmallAgent {
		return []string{exe}
	}
	small := filepath.Join(filepath.Dir(exe), SmallAgent)
	if st, err := os.Stat(small); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
		return []string{small}
	}
	return []string{exe, "agent"}
}

func (a *Agent) start() (*Proc, error) {
	s, err := a.spec()
	if err != nil {
		return nil, err
	}
	return Start(s)
}

// Prepare starts the spare child if Spare is set and there is none.
func (a *Agent) Prepare() {
	if done := a.claimStart(); done != nil {
		a.startSpare(done)
	}
}

// prepareAsync is Prepare in the background, claimed at once: a run that
// comes right after sees the spare on its way and waits for it.
func (a *Agent) prepareAsync() {
	if done := a.claimStart(); done != nil {
		go a.startSpare(done)
	}
}

// claimStart marks a spare as being started and returns the channel to
// close when it is in place; nil if no spare is wanted or one exists or
// is on its way.
func (a *Agent) claimStart() chan struct{} {
	if !a.Spare {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.spare != nil || a.starting != nil {
		return nil
	}
	a.starting = make(chan struct{})
	return a.starting
}

func (a *Agent) startSpare(done chan struct{}) {
	p, err := a.start()
	a.mu.Lock()
	if err == nil {
		a.spare = p
	}
	a.starting = nil
	a.mu.Unlock()
	close(done)
}

// waitStartingLocked waits, with a.mu held on entry and on return, until
// no spare is being started.
func (a *Agent) waitStartingLocked() {
	for a.starting != nil {
		wait := a.starting
		a.mu.Unlock()
		<-wait
		a.mu.Lock()
	}
}

// take returns the spare if it is still alive (waiting for one being
// started), else a fresh child.
func (a *Agent) take() (*Proc, error) {
	a.mu.Lock()
	a.waitStartingLocked()
	p := a.spare
	a.spare = nil
	a.mu.Unlock()
	if p != nil {
		if p.Alive() {
			return p, nil
		}
		p.Close()
	}
	return a.start()
}

// Close kills the spare child.
func (a *Agent) Close() {
	a.mu.Lock()
	a.waitStartingLocked() // a spare on its way: kill it too
	p := a.spare
	a.spare = nil
	a.mu.Unlock()
	if p != nil {
		p.Close()
	}
}

// Exec implements sandbox.Backend: it hands req to an agent child and
// turns its stdout lines into events and its stderr lines into log events.
func (a *Agent) Exec(ctx context.Context, s *sandbox.Session) error {
	line, err := s.Line()
	if err != nil {
		return err
	}
	emit := s.Emit
	p, err := a.take()
	if err != nil {
		return fmt.Errorf("start agent: %w", err)
	}
	defer p.Close()
	defer a.prepareAsync()
	if s.Interactive() {
		// An interactive run: its commands follow the request on stdin,
		// which stays open until the command stream ends.
		defer sandbox.FeedCommands(ctx, p.stdin, line, s.Commands)()
	} else {
		_, err = p.stdin.Write(line)
		p.CloseInput()
	}
	if err != nil {
		p.Kill()
		return &sandbox.ProtocolError{Reason: "the agent did not take the request (agent " + Describe(p.ExitError()) + ")"}
	}
	res := p.Watch(ctx, Output{
		Stdout: func(r io.Reader) error {
			err := sandbox.NewAgentReader(r, a.MaxLine).ReadRun(emit)
			if _, broken := errors.AsType[*sandbox.ProtocolError](err); broken {
				p.Kill() // garbage on stdout: the agent is broken, stop it now
			}
			return err
		},
		Stderr: func(line string) {
			emit(sandbox.Event{Type: sandbox.EvLog, Level: "stderr", Message: line})
		},
		MaxStderr: a.MaxStderr,
		Grace:     a.Grace,
	})
	if res.Dropped > 0 {
		emit(sandbox.Event{Type: sandbox.EvLog, Level: "warn", Message: fmt.Sprintf("%d more bytes of agent stderr were dropped", res.Dropped)})
	}

	if ctx.Err() != nil {
		return ctx.Err()
	}
	if res.Read == nil {
		return nil
	}
	if af, ok := errors.AsType[*sandbox.AgentFailure](res.Read); ok {
		return af
	}
	// The agent did not finish properly: explain with how it ended and
	// the last thing it said on stderr.
	reason := res.Read.Error()
	if res.Exit != nil {
		reason += " (agent " + Describe(res.Exit) + ")"
	}
	if res.Last != "" {
		reason += "; its last words: " + res.Last
	}
	return &sandbox.ProtocolError{Reason: reason}
}
