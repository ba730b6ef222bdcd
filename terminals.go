package rdmalab

import (
	"context"
	"errors"
	"fmt"
)

// Learner terminals as the lab speaks of them: a learner's shell in a
// guest of their own, the queue for one, and a lesson task's check run
// there. Package terminal hands them out on one machine, package fleet
// places them on this machine or a worker's, and web serves them to the
// browser; all three speak these types, so none mirrors another's. A
// lesson's program (programs.go) runs in the same guest.

// TermQueue is where a learner waiting for a terminal stands: Position 1
// is next; InUse of Max learner guests run.
type TermQueue struct{ Position, InUse, Max int }

// ErrTerminalsFull: every learner guest is taken and the queue for them
// is full too (a *TermsFullError says how many).
var ErrTerminalsFull = errors.New("all terminals are in use")

// TermsFullError says how many terminals there are and how many learners
// wait (0 when not known).
type TermsFullError struct{ Max, Waiting int }

func (e *TermsFullError) Error() string {
	switch {
	case e.Max == 0:
		return ErrTerminalsFull.Error()
	case e.Waiting > 0:
		return fmt.Sprintf("all %d terminals are in use and the queue is full (%d waiting); try again in a few minutes", e.Max, e.Waiting)
	}
	return fmt.Sprintf("all %d terminals are in use; try again in a few minutes", e.Max)
}

// Is makes a *TermsFullError ErrTerminalsFull.
func (e *TermsFullError) Is(target error) bool { return target == ErrTerminalsFull }

// ErrKeysDropped: these keystrokes reached the shell, but some sent
// before them did not (the shell was not reading its input and the
// guest's queue for it was full). The tab tells its learner.
var ErrKeysDropped = errors.New("some keystrokes were dropped: the shell is not reading its input")

// ErrNoTerminal: the learner has no open shell (there) to check a task in.
var ErrNoTerminal = errors.New("no terminal is open")

// TaskVerdict is what a task's check script said.
type TaskVerdict struct {
	Passed bool   // it exited 0
	Output []byte // its output, bounded (4 KiB)
	Detail string // why it did not pass: "exit status 1", "timed out after 30 s"
}

// TermConn is one tab's view of a learner's shell.
type TermConn interface {
	Recent() []byte          // the output before this attach (bounded)
	Output() <-chan []byte   // later output; closed when the shell or the view ends
	Write(keys []byte) error // keystrokes
	Resize(rows, cols uint16) error
	Detach()
	// KeptNote says what became of the learner's kept machine on the
	// first attach after it was reclaimed: "restored", "unreadable",
	// "too-big", "stale", "evicted", or "" (nothing kept, or not the
	// first attach).
	KeptNote() string
	// Lost reports whether Output ended because the machine the shell
	// lived on was lost (a worker that died or broke a bound), not because
	// the shell ended: the tab then places a new machine.
	Lost() bool
}

// TermLoad is how many learner terminals a machine has in use and the
// most it may host (a worker says it in its heartbeats).
type TermLoad struct {
	Max   int `json:"max"`
	InUse int `json:"in_use"`
}

// TermHost is a machine's learner terminals by learner (on a worker, by a
// key the lab server derives from the learner's id), or all of the lab's.
type TermHost interface {
	// Attach returns learner's shell, starting their guest if needed.
	// When every guest is taken it waits in a FIFO queue until a place
	// frees or ctx ends, telling wait (if not nil) the learner's place
	// each time it changes; a full queue gives a *TermsFullError.
	Attach(ctx context.Context, learner string, rows, cols uint16, wait func(TermQueue)) (TermConn, error)
	InUse() (n, max int)
	Waiting() int // learners in the queue
	// Holds reports whether learner has a guest or waits for one.
	Holds(learner string) bool
	// Reset ends learner's machine and deletes what was kept of it: their
	// next attach starts clean.
	Reset(ctx context.Context, learner string) error
	// Verify runs a task's check script in learner's guest, beside their
	// shell (LAB_LANG=lang); ErrNoTerminal when they have none there.
	Verify(ctx context.Context, learner string, script []byte, lang string) (TaskVerdict, error)
}
