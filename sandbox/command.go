package sandbox

import (
	"github.com/rdmalab/rdmalab/internal/textclip"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Interactive runs. An experiment with Commands accepts learner commands
// while it runs: a small, typed set per experiment (a command is one of the
// names the experiment declares, nothing else), never free-form input. A
// command travels the same way as the request:
//
//	web  POST /api/runs/{id}/commands {"cmd":"next"}
//	 → runner.Runner.Command (checked against Experiment.Commands; stored as an
//	   EvCommand event before it is delivered)
//	 → the backend, through Session.Commands: the host backend writes it as
//	   one more JSON line on the agent's stdin; the vm backend wraps it in a
//	   "command" envelope to the guest, whose server does the same with its
//	   agent child; the fleet server publishes it to the worker that claimed
//	   the run (lab.cmd.<w>.<run>), whose backend does one of the above
//	 → ServeAgent reads it, checks it against the experiment again and
//	   hands it to Run through CommandsFrom(ctx).
//
// The end of commands is the end of the stream: when the runner stops
// delivering (the learner left and the run went idle), the channel closes,
// stdin reaches EOF, and the experiment's channel closes: it cleans up and
// returns. A run that does not return in IdleGrace after that is killed.

// DefaultIdle ends an interactive run that received no command for this long.
const DefaultIdle = 3 * time.Minute

// IdleGrace is how long an idle run may take to clean up before it is killed.
const IdleGrace = 30 * time.Second

// CommandSpec declares one command of an interactive experiment.
type CommandSpec struct {
	Name  string `json:"name"`
	Title Text   `json:"title"`
	Help  Text   `json:"help,omitempty"`
}

// Command is one learner command to a live run.
type Command struct {
	Cmd string `json:"cmd"`
}

// CommandError is a command the experiment does not accept.
type CommandError struct {
	Cmd     string
	Message string
}

func (e *CommandError) Error() string { return e.Message }

// ErrNotInteractive is a command to an experiment that takes none.
var ErrNotInteractive = errors.New("this run takes no commands")

// Interactive reports whether e accepts commands while it runs.
func (e *Experiment) Interactive() bool { return len(e.Commands) > 0 }

// IdleLimit is e.Idle or DefaultIdle.
func (e *Experiment) IdleLimit() time.Duration {
	if e.Idle > 0 {
		return e.Idle
	}
	return DefaultIdle
}

// ValidateCommand checks that c is one of e's commands.
func (e *Experiment) ValidateCommand(c Command) error {
	if !e.Interactive() {
		return ErrNotInteractive
	}
	for _, s := range e.Commands {
		if s.Name == c.Cmd {
			return nil
		}
	}
	names := make([]string, len(e.Commands))
	for i, s := range e.Commands {
		names[i] = s.Name
	}
	return &CommandError{Cmd: c.Cmd, Message: fmt.Sprintf("unknown command %q for %s (it accepts %v)", textclip.Bytes(c.Cmd, 40), e.ID, names)}
}

// DecodeCommand parses one JSON command strictly: an object with exactly
// the field "cmd", a string.
func DecodeCommand(b []byte) (Command, error) {
	var c Command
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Command{}, &CommandError{Message: "a command is {\"cmd\": NAME}: " + err.Error()}
	}
	if dec.More() {
		return Command{}, &CommandError{Message: "one command at a time"}
	}
	if c.Cmd == "" {
		return Command{}, &CommandError{Message: "a command is {\"cmd\": NAME}: cmd is missing"}
	}
	return c, nil
}

type commandsKey struct{}

// WithCommands returns ctx carrying the command stream of an interactive
// run, for the experiment's Run inside the agent (ServeAgent puts it
// there). Backends never look for it: their stream is Session.Commands.
func WithCommands(ctx context.Context, cmds <-chan Command) context.Context {
	return context.WithValue(ctx, commandsKey{}, cmds)
}

// CommandsFrom returns the command stream of ctx, or nil when the run is
// not interactive. It closes when no more commands will come.
func CommandsFrom(ctx context.Context) <-chan Command {
	c, _ := ctx.Value(commandsKey{}).(<-chan Command)
	return c
}

// ForwardCommands is how every hop passes an interactive run's commands
// on: it calls send with each command of cmds in order, and once with
// ok false when cmds closes (no more will come), until send fails, ctx
// ends or stop is called (stop waits for it). A nil cmds ends at once.
func ForwardCommands(ctx context.Context, cmds <-chan Command, send func(c Command, ok bool) error) (stop func()) {
	return goForward(func(quit <-chan struct{}) { forwardLoop(ctx, quit, cmds, send) })
}

// FeedCommands writes first (the request line) to w, then each command of
// cmds as one JSON line, and closes w when cmds closes (at once when cmds
// is nil: a run that takes no commands) or ctx ends — the agent then reads
// EOF. stop ends it early and closes w. A backend calls it with the write
// end of the agent's stdin pipe.
func FeedCommands(ctx context.Context, w io.WriteCloser, first []byte, cmds <-chan Command) (stop func()) {
	return goForward(func(quit <-chan struct{}) {
		defer w.Close()
		if _, err := w.Write(first); err != nil {
			return
		}
		forwardLoop(ctx, quit, cmds, func(c Command, ok bool) error {
			if !ok {
				return nil // w closes on the way out
			}
			b, _ := json.Marshal(c)
			_, err := w.Write(append(b, '\n'))
			return err
		})
	})
}

// goForward runs f in a goroutine; the stop it returns closes quit and
// waits for f (once).
func goForward(f func(quit <-chan struct{})) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(quit)
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-done }) }
}

// forwardLoop is ForwardCommands' loop, in the caller's goroutine.
func forwardLoop(ctx context.Context, quit <-chan struct{}, cmds <-chan Command, send func(c Command, ok bool) error) {
	if cmds == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-quit:
			return
		case c, ok := <-cmds:
			if send(c, ok) != nil || !ok {
				return
			}
		}
	}
}

// agentCommands reads the command lines that follow the request on the
// agent's stdin, checks each against exp again (nothing that crossed a
// process or VM boundary is trusted) and delivers them in order. The
// channel closes at EOF: no more commands will come.
func agentCommands(ctx context.Context, exp *Experiment, in io.Reader, em Emitter) <-chan Command {
	ch := make(chan Command)
	go func() {
		defer close(ch)
		for {
			line, err := readLine(in, 4096)
			if err != nil {
				return
			}
			c, err := DecodeCommand(line)
			if err == nil {
				err = exp.ValidateCommand(c)
			}
			if err != nil {
				em.Emit(Event{Type: EvLog, Level: "warn", Message: "the agent refused a command: " + err.Error()})
				continue
			}
			select {
			case ch <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}
