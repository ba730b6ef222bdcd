package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// gates lets an in-process test hold an experiment until it says so.
var gates sync.Map // run id → chan struct{}

// testRegistry holds experiments that exercise the machinery.
func testRegistry() *Registry {
	reg := NewRegistry()
	reg.Register(&Experiment{
		ID: "echo", Needs: NeedHost, Timeout: 10 * time.Second,
		Params: []Param{{Name: "n", Kind: ParamInt, Min: 1, Max: 100, Default: int64(3)}},
		Run: func(ctx context.Context, p Params, emit Emitter) error {
			for i := range p["n"].(int64) {
				emit.Emit(Event{Type: EvLog, Message: fmt.Sprintf("line %d", i)})
			}
			ok := true
			emit.Emit(Event{Type: EvResult, OK: &ok, Message: "echoed"})
			return nil
		},
	})
	// gate blocks until the test closes its gate (in-process backend only)
	// or ctx ends.
	reg.Register(&Experiment{
		ID: "gate", Needs: NeedHost, Timeout: 30 * time.Second,
		Params: []Param{{Name: "id", Kind: ParamInt, Min: 0, Max: 1000, Default: int64(0)}},
		Run: func(ctx context.Context, p Params, emit Emitter) error {
			ch, _ := gates.LoadOrStore(p["id"].(int64), make(chan struct{}))
			emit.Emit(Event{Type: EvPhase, Name: "waiting"})
			select {
			case <-ch.(chan struct{}):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	})
	reg.Register(&Experiment{
		ID: "fails", Needs: NeedHost, Timeout: 10 * time.Second,
		Run: func(ctx context.Context, p Params, emit Emitter) error {
			return fmt.Errorf("open the device: %w", os.NewSyscallError("open", errors.New("boom")))
		},
	})
	reg.Register(&Experiment{ID: "needs-rdma", Needs: NeedRDMA, Run: func(context.Context, Params, Emitter) error { return nil }})
	// counter is interactive: "add" counts, "done" ends the run; when the
	// command stream closes (idle) it says so and ends.
	reg.Register(&Experiment{
		ID: "counter", Needs: NeedHost, Timeout: time.Minute, Idle: 2 * time.Second,
		Commands: []CommandSpec{{Name: "add"}, {Name: "done"}},
		Run: func(ctx context.Context, p Params, emit Emitter) error {
			cmds := CommandsFrom(ctx)
			if cmds == nil {
				return errors.New("no command stream")
			}
			emit.Emit(Event{Type: EvStep, Name: "start", Offers: []string{"add", "done"}})
			n := 0
			for {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case c, ok := <-cmds:
					if !ok {
						emit.Emit(Event{Type: EvLog, Message: fmt.Sprintf("stream closed at %d", n)})
						return nil
					}
					if c.Cmd == "done" {
						emit.Emit(Event{Type: EvLog, Message: fmt.Sprintf("done at %d", n)})
						return nil
					}
					n++
					emit.Emit(Event{Type: EvStep, Name: "add", Message: fmt.Sprintf("n=%d", n), Offers: []string{"add", "done"}})
				}
			}
		},
	})
	return reg
}

// recorder is a Sink that keeps every event and checks their numbering.
type recorder struct {
	mu      sync.Mutex
	t       testing.TB
	events  map[string][]Event
	all     []string // "runID:status" of status events, in arrival order
	changed chan struct{}
}

func newRecorder(t testing.TB) *recorder {
	return &recorder{t: t, events: map[string][]Event{}, changed: make(chan struct{}, 1)}
}

func (r *recorder) RunEvent(id string, ev Event) {
	r.mu.Lock()
	want := int64(len(r.events[id]) + 1)
	if ev.Seq != want {
		r.t.Errorf("run %s: event seq %d, want %d (%+v)", id, ev.Seq, want, ev)
	}
	r.events[id] = append(r.events[id], ev)
	if ev.Type == EvStatus {
		r.all = append(r.all, id+":"+string(ev.Status))
	}
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) get(id string) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events[id]...)
}

// waitFor polls until cond holds on the run's events, or fails the test.
func (r *recorder) waitFor(id string, what string, cond func([]Event) bool) []Event {
	r.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if evs := r.get(id); cond(evs) {
			return evs
		}
		select {
		case <-r.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			r.t.Fatalf("run %s: timed out waiting for %s; events: %+v", id, what, r.get(id))
		}
	}
}

func (r *recorder) final(id string) Event {
	r.t.Helper()
	evs := r.waitFor(id, "a final status", func(evs []Event) bool {
		return len(evs) > 0 && evs[len(evs)-1].Type == EvStatus && evs[len(evs)-1].Status.Final()
	})
	return evs[len(evs)-1]
}
