// Package sandboxtest holds what the tests of the sandbox tree share: a
// registry of experiments that exercise the machinery (not RDMA), gates
// that hold a run until the test opens them, a Sink that records every
// event, and the check that a reason reads in Chinese. Only tests import
// it.
package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
	"github.com/rdmalab/rdmalab/sandbox"
)

// gates holds the gates of the "gate" experiment, by id.
var gates sync.Map // int64 → chan struct{}

var gateSeq atomic.Int64

// NewGate returns the id of a new gate for the "gate" experiment's "id"
// param, and the func that opens it.
func NewGate() (int64, func()) {
	id := 100 + gateSeq.Add(1)
	ch := make(chan struct{})
	gates.Store(id, ch)
	return id, func() { close(ch) }
}

// Registry returns the test experiments, all host ones that start no
// process:
//   - echo: n log lines and a result;
//   - gate: a "waiting" phase, then holds until its gate (param id) opens
//     or the run ends — run by the in-process backend only, since the gate
//     lives in this process;
//   - fails: returns a syscall error;
//   - needs-rdma: needs RDMA (a test's backend refuses it);
//   - counter: interactive; "add" counts, "done" ends the run, and when the
//     command stream closes (idle) it says so and ends.
func Registry() *sandbox.Registry {
	reg := sandbox.NewRegistry()
	reg.Register(&sandbox.Experiment{
		ID: "echo", Needs: sandbox.NeedHost, Timeout: 10 * time.Second,
		Params: []sandbox.Param{{Name: "n", Kind: sandbox.ParamInt, Min: 1, Max: 100, Default: int64(3)}},
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			for i := range p["n"].(int64) {
				emit.Emit(sandbox.Event{Type: sandbox.EvLog, Message: fmt.Sprintf("line %d", i)})
			}
			ok := true
			emit.Emit(sandbox.Event{Type: sandbox.EvResult, OK: &ok, Message: "echoed"})
			return nil
		},
	})
	reg.Register(&sandbox.Experiment{
		ID: "gate", Needs: sandbox.NeedHost, Timeout: 30 * time.Second,
		Params: []sandbox.Param{{Name: "id", Kind: sandbox.ParamInt, Min: 0, Max: 1000, Default: int64(0)}},
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			ch, _ := gates.LoadOrStore(p["id"].(int64), make(chan struct{}))
			emit.Emit(sandbox.Event{Type: sandbox.EvPhase, Name: "waiting"})
			select {
			case <-ch.(chan struct{}):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	})
	reg.Register(&sandbox.Experiment{
		ID: "fails", Needs: sandbox.NeedHost, Timeout: 10 * time.Second,
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			return fmt.Errorf("open the device: %w", os.NewSyscallError("open", errors.New("boom")))
		},
	})
	reg.Register(&sandbox.Experiment{ID: "needs-rdma", Needs: sandbox.NeedRDMA,
		Run: func(context.Context, sandbox.Params, sandbox.Emitter) error { return nil }})
	reg.Register(&sandbox.Experiment{
		ID: "counter", Needs: sandbox.NeedHost, Timeout: time.Minute, Idle: 2 * time.Second,
		Commands: []sandbox.CommandSpec{{Name: "add"}, {Name: "done"}},
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			cmds := sandbox.CommandsFrom(ctx)
			if cmds == nil {
				return errors.New("no command stream")
			}
			emit.Emit(sandbox.Event{Type: sandbox.EvStep, Name: "start", Offers: []string{"add", "done"}})
			n := 0
			for {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case c, ok := <-cmds:
					if !ok {
						emit.Emit(sandbox.Event{Type: sandbox.EvLog, Message: fmt.Sprintf("stream closed at %d", n)})
						return nil
					}
					if c.Cmd == "done" {
						emit.Emit(sandbox.Event{Type: sandbox.EvLog, Message: fmt.Sprintf("done at %d", n)})
						return nil
					}
					n++
					emit.Emit(sandbox.Event{Type: sandbox.EvStep, Name: "add", Message: fmt.Sprintf("n=%d", n), Offers: []string{"add", "done"}})
				}
			}
		},
	})
	return reg
}

// Recorder is a Sink that keeps every event and fails the test when a
// run's events are not numbered 1, 2, 3… in the order they arrive.
type Recorder struct {
	t       testing.TB
	mu      sync.Mutex
	events  map[string][]sandbox.Event
	all     []string // "runID:status" of status events, in arrival order
	changed chan struct{}
}

// NewRecorder returns an empty Recorder reporting to t.
func NewRecorder(t testing.TB) *Recorder {
	return &Recorder{t: t, events: map[string][]sandbox.Event{}, changed: make(chan struct{}, 1)}
}

// RunEvent records ev (the runner's Sink).
func (r *Recorder) RunEvent(id string, ev sandbox.Event) {
	r.mu.Lock()
	want := int64(len(r.events[id]) + 1)
	if ev.Seq != want {
		r.t.Errorf("run %s: event seq %d, want %d (%+v)", id, ev.Seq, want, ev)
	}
	r.events[id] = append(r.events[id], ev)
	if ev.Type == sandbox.EvStatus {
		r.all = append(r.all, id+":"+string(ev.Status))
	}
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// Events returns a copy of run id's events so far.
func (r *Recorder) Events(id string) []sandbox.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sandbox.Event(nil), r.events[id]...)
}

// Statuses returns "runID:status" for every status event of every run, in
// the order they arrived.
func (r *Recorder) Statuses() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.all...)
}

// WaitFor waits until cond holds on run id's events and returns them; it
// fails the test after a minute (a real agent child on a loaded machine),
// naming what, when it does not.
func (r *Recorder) WaitFor(id string, what string, cond func([]sandbox.Event) bool) []sandbox.Event {
	r.t.Helper()
	deadline := time.After(time.Minute)
	for {
		if evs := r.Events(id); cond(evs) {
			return evs
		}
		select {
		case <-r.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			r.t.Fatalf("run %s: timed out waiting for %s; events: %+v", id, what, r.Events(id))
		}
	}
}

// Final waits for run id's final status event and returns it.
func (r *Recorder) Final(id string) sandbox.Event {
	r.t.Helper()
	evs := r.WaitFor(id, "a final status", func(evs []sandbox.Event) bool {
		return len(evs) > 0 && evs[len(evs)-1].Type == sandbox.EvStatus && evs[len(evs)-1].Status.Final()
	})
	return evs[len(evs)-1]
}

// HasPhase reports whether evs hold a phase event named name.
func HasPhase(evs []sandbox.Event, name string) bool {
	for _, e := range evs {
		if e.Type == sandbox.EvPhase && e.Name == name {
			return true
		}
	}
	return false
}

// IsRunning reports whether evs hold the running status.
func IsRunning(evs []sandbox.Event) bool {
	for _, e := range evs {
		if e.Type == sandbox.EvStatus && e.Status == sandbox.StatusRunning {
			return true
		}
	}
	return false
}

// CheckZh fails tb when t has no Chinese or no English, or when its
// Chinese holds English prose (a reason that would reach a zh page in
// English). diag are diagnostics the test put in (an error from the
// system stays as it is), left out of the check.
func CheckZh(tb testing.TB, where string, t sandbox.Text, diag ...string) {
	tb.Helper()
	zh := t["zh"]
	if zh == "" {
		tb.Errorf("%s: no Chinese in %q", where, t)
		return
	}
	for _, d := range diag {
		zh = strings.ReplaceAll(zh, d, "")
	}
	if p := zhcheck.Prose(zh); len(p) > 0 {
		tb.Errorf("%s: English prose %q in the Chinese %q", where, p, t["zh"])
	}
	if t["en"] == "" {
		tb.Errorf("%s: no English in %q", where, t)
	}
}
