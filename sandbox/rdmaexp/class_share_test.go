package rdmaexp

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
)

// classSink records, per run, when its result and its final status came.
type classSink struct {
	mu     sync.Mutex
	result map[string]time.Time
	final  map[string]sandbox.Status
	shared map[string]bool
	all    chan struct{}
	want   int
}

func (s *classSink) RunEvent(id string, ev sandbox.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case ev.Type == sandbox.EvResult:
		s.result[id] = time.Now()
	case ev.Type == sandbox.EvLog && ev.Name == "shared":
		s.shared[id] = true
	case ev.Type == sandbox.EvStatus && ev.Status.Final():
		s.final[id] = ev.Status
		if len(s.final) == s.want {
			close(s.all)
		}
	}
}

// classBurst has n learners press Run on lesson 01's write-silent (its
// preset params) within about a second, through a runner over the guest
// backend with shared runs for share (0: each runs their own). It returns
// each learner's time from pressing to the result, in order, and how many
// runs said they were shared.
func classBurst(t testing.TB, be sandbox.Backend, n int, share time.Duration) ([]time.Duration, int) {
	sink := &classSink{result: map[string]time.Time{}, final: map[string]sandbox.Status{},
		shared: map[string]bool{}, all: make(chan struct{}), want: n}
	r := runner.New(runner.Config{Registry: registry(), Sink: sink, QueueMax: n, Share: share,
		Backend: func(sandbox.Need) sandbox.Backend { return be }})
	defer r.Close()
	params := map[string]any{"mode": "write", "messages": 10, "size": 4096}
	pressed := map[string]time.Time{}
	var ids []string
	for i := range n {
		at := time.Now()
		info, err := r.Submit(fmt.Sprint("learner", i), "write-silent", params)
		if err != nil {
			t.Fatalf("learner %d: %v", i, err)
		}
		pressed[info.ID] = at
		ids = append(ids, info.ID)
		time.Sleep(time.Second / time.Duration(n)) // a class, not one click
	}
	select {
	case <-sink.all:
	case <-time.After(time.Duration(n) * time.Minute):
		t.Fatalf("the class's runs did not all end")
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var took []time.Duration
	for i, id := range ids {
		if sink.final[id] != sandbox.StatusDone {
			t.Fatalf("learner %d's run ended %s", i, sink.final[id])
		}
		res, ok := sink.result[id]
		if !ok {
			t.Fatalf("learner %d's run has no result", i)
		}
		took = append(took, res.Sub(pressed[id]))
	}
	return took, len(sink.shared)
}

// TestClassSharesWriteSilent: 30 learners press Run on write-silent within
// a second; with shared runs every one gets a done run with a result, and
// all but the first watch a shared run (the guest runs it once or a few
// times, not 30). Times are logged; make bench reports them
// (BenchmarkClassBurst).
func TestClassSharesWriteSilent(t *testing.T) {
	if testing.Short() {
		t.Skip("boots the Soft-RoCE guest (TCG: slow)")
	}
	if _, err := pickTopology(); err == nil {
		t.Skip("this kernel has RDMA devices: the class test is about the guest")
	}
	be := labGuest(t)
	took, shared := classBurst(t, be, 30, 5*time.Second)
	if shared < 25 {
		t.Errorf("only %d of 30 runs were shared", shared)
	}
	slices.Sort(took)
	t.Logf("30 learners, shared runs: %d joined; result after p50 %s, last %s", shared,
		took[len(took)/2].Round(100*time.Millisecond), took[len(took)-1].Round(100*time.Millisecond))
}

// BenchmarkClassBurst: a class of 30 presses Run on write-silent within a
// second, with shared runs and without (each learner's own run, one after
// another through the one guest), measured in the same run.
func BenchmarkClassBurst(b *testing.B) {
	if _, err := pickTopology(); err == nil {
		b.Skip("this kernel has RDMA devices: the class burst is about the guest")
	}
	be := labGuest(b)
	for range b.N {
		shared, _ := classBurst(b, be, 30, 5*time.Second)
		own, _ := classBurst(b, be, 30, 0)
		slices.Sort(shared)
		slices.Sort(own)
		b.ReportMetric(shared[len(shared)/2].Seconds(), "shared-p50-s")
		b.ReportMetric(shared[len(shared)-1].Seconds(), "shared-last-s")
		b.ReportMetric(own[len(own)/2].Seconds(), "own-p50-s")
		b.ReportMetric(own[len(own)-1].Seconds(), "own-last-s")
	}
}
