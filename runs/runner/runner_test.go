package runner

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/sandboxtest"
)

// newTestRunner is a runner over the test experiments (sandboxtest), run
// by the in-process backend; RDMA experiments have no backend.
func newTestRunner(t *testing.T, cfg Config) (*Runner, *sandboxtest.Recorder) {
	t.Helper()
	rec := sandboxtest.NewRecorder(t)
	reg := sandboxtest.Registry()
	if cfg.Registry == nil {
		cfg.Registry = reg
	}
	if cfg.Backend == nil {
		be := sandbox.InProcess{Registry: cfg.Registry}
		cfg.Backend = func(n sandbox.Need) sandbox.Backend {
			if n == sandbox.NeedRDMA {
				return sandbox.NoBackend{Reason: sandbox.Text{"en": "this machine's kernel has no rdma_rxe and the Soft-RoCE guest is not built", "zh": "本机内核没有 rdma_rxe，Soft-RoCE 虚拟机也没有构建"}}
			}
			return be
		}
	}
	cfg.Sink = rec
	r := New(cfg)
	t.Cleanup(r.Close)
	return r, rec
}

func positions(evs []sandbox.Event) []int {
	var ps []int
	for _, e := range evs {
		if e.Type == sandbox.EvStatus && e.Status == sandbox.StatusQueued {
			ps = append(ps, e.Position)
		}
	}
	return ps
}

func TestRunnerQueueOrderAndPositions(t *testing.T) {
	r, rec := newTestRunner(t, Config{})
	var ids []string
	var opens []func()
	for i := range 3 {
		g, open := sandboxtest.NewGate()
		opens = append(opens, open)
		info, err := r.Submit(fmt.Sprintf("learner%d", i), "gate", map[string]any{"id": g})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
		wantStatus, wantPos := sandbox.StatusQueued, i
		if i == 0 {
			wantStatus, wantPos = sandbox.StatusRunning, 0
		}
		if info.Status != wantStatus || info.Position != wantPos {
			t.Errorf("submit %d: status %s position %d, want %s %d", i, info.Status, info.Position, wantStatus, wantPos)
		}
	}
	rec.WaitFor(ids[0], "phase waiting", func(evs []sandbox.Event) bool { return len(evs) >= 3 })
	for i, open := range opens {
		open()
		if f := rec.Final(ids[i]); f.Status != sandbox.StatusDone {
			t.Fatalf("run %d: final %s (%s)", i, f.Status, f.Message)
		}
	}
	// FIFO: each run started only after the previous one finished.
	var order []string
	for _, s := range rec.Statuses() {
		if strings.HasSuffix(s, ":running") {
			order = append(order, strings.TrimSuffix(s, ":running"))
		}
	}
	if strings.Join(order, ",") != strings.Join(ids, ",") {
		t.Errorf("start order %v, want %v", order, ids)
	}
	// The last run moved from position 2 to 1 as the queue advanced.
	if got := positions(rec.Events(ids[2])); fmt.Sprint(got) != "[2 1]" {
		t.Errorf("positions of third run: %v, want [2 1]", got)
	}
	if got := positions(rec.Events(ids[0])); fmt.Sprint(got) != "[1]" {
		t.Errorf("positions of first run: %v, want [1]", got)
	}
}

func TestRunnerOneActiveRunPerLearner(t *testing.T) {
	r, rec := newTestRunner(t, Config{Concurrency: 2})
	g, open := sandboxtest.NewGate()
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
	rec.Final(a.ID)
	b, err := r.Submit("ann", "echo", nil)
	if err != nil {
		t.Fatalf("after the first run finished: %v", err)
	}
	if f := rec.Final(b.ID); f.Status != sandbox.StatusDone {
		t.Errorf("final %s", f.Status)
	}
}

func TestRunnerQueueBound(t *testing.T) {
	r, rec := newTestRunner(t, Config{Concurrency: 1, QueueMax: 2})
	var opens []func()
	var ids []string
	for i := range 3 { // one running + two waiting
		g, open := sandboxtest.NewGate()
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
	if f := rec.Final(ids[1]); f.Status != sandbox.StatusCancelled {
		t.Errorf("cancelled queued run: %s", f.Status)
	}
	// The third run's new position comes through its own ordered writer,
	// which may deliver it after the cancelled run's final status.
	evs := rec.WaitFor(ids[2], "a second position", func(evs []sandbox.Event) bool { return len(positions(evs)) >= 2 })
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
	r, _ := newTestRunner(t, Config{})
	if _, err := r.Submit("x", "nope", nil); !errors.Is(err, sandbox.ErrUnknownExperiment) {
		t.Errorf("unknown experiment: %v", err)
	}
	_, err := r.Submit("x", "echo", map[string]any{"n": 1000.0})
	var pe *sandbox.ParamError
	if !errors.As(err, &pe) || pe.Param != "n" || !strings.Contains(pe.Message, "between 1 and 100") {
		t.Errorf("bad param: %v", err)
	}
	if err := r.Cancel("no-such-run"); !errors.Is(err, ErrUnknownRun) {
		t.Errorf("cancel unknown: %v", err)
	}
}

func TestRunnerNoBackendFailsWithReason(t *testing.T) {
	r, rec := newTestRunner(t, Config{})
	info, err := r.Submit("x", "needs-rdma", nil)
	if err != nil {
		t.Fatal(err)
	}
	f := rec.Final(info.ID)
	if f.Status != sandbox.StatusFailed || !strings.Contains(f.Message, "no rdma_rxe") {
		t.Errorf("final %s %q", f.Status, f.Message)
	}
	evs := rec.Events(info.ID)
	if evs[1].Backend != "none" {
		t.Errorf("running event backend %q, want none", evs[1].Backend)
	}
}

func TestRunnerReportsExperimentErrorWithCall(t *testing.T) {
	r, rec := newTestRunner(t, Config{})
	info, _ := r.Submit("x", "fails", nil)
	f := rec.Final(info.ID)
	if f.Status != sandbox.StatusFailed || !strings.Contains(f.Message, "boom") {
		t.Fatalf("final %s %q", f.Status, f.Message)
	}
	var errs []sandbox.Event
	for _, e := range rec.Events(info.ID) {
		if e.Type == sandbox.EvError {
			errs = append(errs, e)
		}
	}
	if len(errs) != 1 || errs[0].Call != "open" {
		t.Errorf("error events %+v, want one with call open", errs)
	}
}
