package sandbox

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func newTestRunner(t *testing.T, cfg RunnerConfig) (*Runner, *recorder) {
	t.Helper()
	rec := newRecorder(t)
	reg := testRegistry()
	if cfg.Registry == nil {
		cfg.Registry = reg
	}
	if cfg.Backend == nil {
		be := InProcess{Registry: cfg.Registry}
		cfg.Backend = func(n Need) Backend {
			if n == NeedRDMA {
				return NoBackend{Reason: Text{"en": "this machine's kernel has no rdma_rxe and the Soft-RoCE guest is not built", "zh": "本机内核没有 rdma_rxe，Soft-RoCE 虚拟机也没有构建"}}
			}
			return be
		}
	}
	cfg.Sink = rec
	r := NewRunner(cfg)
	t.Cleanup(r.Close)
	return r, rec
}

var gateSeq int64 = 100

// newGate returns a gate id and a func that opens it.
func newGate() (int64, func()) {
	gateSeq++
	id := gateSeq
	ch := make(chan struct{})
	gates.Store(id, ch)
	return id, func() { close(ch) }
}

func positions(evs []Event) []int {
	var ps []int
	for _, e := range evs {
		if e.Type == EvStatus && e.Status == StatusQueued {
			ps = append(ps, e.Position)
		}
	}
	return ps
}

func TestRunnerQueueOrderAndPositions(t *testing.T) {
	r, rec := newTestRunner(t, RunnerConfig{})
	var ids []string
	var opens []func()
	for i := range 3 {
		g, open := newGate()
		opens = append(opens, open)
		info, err := r.Submit(fmt.Sprintf("learner%d", i), "gate", map[string]any{"id": g})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
		wantStatus, wantPos := StatusQueued, i
		if i == 0 {
			wantStatus, wantPos = StatusRunning, 0
		}
		if info.Status != wantStatus || info.Position != wantPos {
			t.Errorf("submit %d: status %s position %d, want %s %d", i, info.Status, info.Position, wantStatus, wantPos)
		}
	}
	rec.waitFor(ids[0], "phase waiting", func(evs []Event) bool { return len(evs) >= 3 })
	for i, open := range opens {
		open()
		if f := rec.final(ids[i]); f.Status != StatusDone {
			t.Fatalf("run %d: final %s (%s)", i, f.Status, f.Message)
		}
	}
	// FIFO: each run started only after the previous one finished.
	var order []string
	rec.mu.Lock()
	for _, s := range rec.all {
		if strings.HasSuffix(s, ":running") {
			order = append(order, strings.TrimSuffix(s, ":running"))
		}
	}
	rec.mu.Unlock()
	if strings.Join(order, ",") != strings.Join(ids, ",") {
		t.Errorf("start order %v, want %v", order, ids)
	}
	// The last run moved from position 2 to 1 as the queue advanced.
	if got := positions(rec.get(ids[2])); fmt.Sprint(got) != "[2 1]" {
		t.Errorf("positions of third run: %v, want [2 1]", got)
	}
	if got := positions(rec.get(ids[0])); fmt.Sprint(got) != "[1]" {
		t.Errorf("positions of first run: %v, want [1]", got)
	}
}

func TestRunnerOneActiveRunPerLearner(t *testing.T) {
	r, rec := newTestRunner(t, RunnerConfig{Concurrency: 2})
	g, open := newGate()
	a, err := r.Submit("ann", "gate", map[string]any{"id": g})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Submit("ann", "echo", nil); !errors.Is(err, ErrLearnerActive) {
		t.Fatalf("second run of the same learner: %v, want ErrLearnerActive", err)
	}
	if _, err := r.Submit("bob", "echo", nil); err != nil {
		t.Fatalf("another learner: %v", err)
	}
	open()
	rec.final(a.ID)
	b, err := r.Submit("ann", "echo", nil)
	if err != nil {
		t.Fatalf("after the first run finished: %v", err)
	}
	if f := rec.final(b.ID); f.Status != StatusDone {
		t.Errorf("final %s", f.Status)
	}
}

func TestRunnerQueueBound(t *testing.T) {
	r, rec := newTestRunner(t, RunnerConfig{Concurrency: 1, QueueMax: 2})
	var opens []func()
	var ids []string
	for i := range 3 { // one running + two waiting
		g, open := newGate()
		opens = append(opens, open)
		info, err := r.Submit(fmt.Sprint("l", i), "gate", map[string]any{"id": g})
		if err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
		ids = append(ids, info.ID)
	}
	_, err := r.Submit("l3", "echo", nil)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("fourth submit: %v, want ErrBusy", err)
	}
	if !strings.Contains(err.Error(), "try again in a minute") {
		t.Errorf("busy message %q", err)
	}
	// Cancelling a waiting run frees a place and moves the one behind it.
	if err := r.Cancel(ids[1]); err != nil {
		t.Fatal(err)
	}
	if f := rec.final(ids[1]); f.Status != StatusCancelled {
		t.Errorf("cancelled queued run: %s", f.Status)
	}
	// The third run's new position comes through its own ordered writer,
	// which may deliver it after the cancelled run's final status.
	evs := rec.waitFor(ids[2], "a second position", func(evs []Event) bool { return len(positions(evs)) >= 2 })
	if got := positions(evs); fmt.Sprint(got) != "[2 1]" {
		t.Errorf("positions after cancel: %v", got)
	}
	if _, err := r.Submit("l3", "echo", nil); err != nil {
		t.Errorf("submit after a place freed: %v", err)
	}
	for _, open := range opens {
		open()
	}
}

func TestRunnerRejectsBadInput(t *testing.T) {
	r, _ := newTestRunner(t, RunnerConfig{})
	if _, err := r.Submit("x", "nope", nil); !errors.Is(err, ErrUnknownExperiment) {
		t.Errorf("unknown experiment: %v", err)
	}
	_, err := r.Submit("x", "echo", map[string]any{"n": 1000.0})
	var pe *ParamError
	if !errors.As(err, &pe) || pe.Param != "n" || !strings.Contains(pe.Message, "between 1 and 100") {
		t.Errorf("bad param: %v", err)
	}
	if err := r.Cancel("no-such-run"); !errors.Is(err, ErrUnknownRun) {
		t.Errorf("cancel unknown: %v", err)
	}
}

func TestRunnerNoBackendFailsWithReason(t *testing.T) {
	r, rec := newTestRunner(t, RunnerConfig{})
	info, err := r.Submit("x", "needs-rdma", nil)
	if err != nil {
		t.Fatal(err)
	}
	f := rec.final(info.ID)
	if f.Status != StatusFailed || !strings.Contains(f.Message, "no rdma_rxe") {
		t.Errorf("final %s %q", f.Status, f.Message)
	}
	evs := rec.get(info.ID)
	if evs[1].Backend != "none" {
		t.Errorf("running event backend %q, want none", evs[1].Backend)
	}
}

func TestRunnerReportsExperimentErrorWithCall(t *testing.T) {
	r, rec := newTestRunner(t, RunnerConfig{})
	info, _ := r.Submit("x", "fails", nil)
	f := rec.final(info.ID)
	if f.Status != StatusFailed || !strings.Contains(f.Message, "boom") {
		t.Fatalf("final %s %q", f.Status, f.Message)
	}
	var errs []Event
	for _, e := range rec.get(info.ID) {
		if e.Type == EvError {
			errs = append(errs, e)
		}
	}
	if len(errs) != 1 || errs[0].Call != "open" {
		t.Errorf("error events %+v, want one with call open", errs)
	}
}
