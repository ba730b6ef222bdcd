package runner

import (
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/sandboxtest"
)

// batchSink is a BatchSink whose first call is slow (a commit behind
// others): the events emitted meanwhile must come in one later call, in
// order, none lost.
type batchSink struct {
	*sandboxtest.Recorder
	mu    sync.Mutex
	calls int
}

func (b *batchSink) RunEvents(id string, evs []sandbox.Event) {
	b.mu.Lock()
	b.calls++
	first := b.calls == 1
	b.mu.Unlock()
	if first {
		time.Sleep(100 * time.Millisecond)
	}
	for _, ev := range evs {
		b.RunEvent(id, ev)
	}
}

// A Sink that takes batches gets a run's waiting events in one call each
// time, in order (the Recorder fails on a gap or a repeat): a burst of
// 100 lines costs a few writes, not 100.
func TestRunnerHandsBatches(t *testing.T) {
	sink := &batchSink{Recorder: sandboxtest.NewRecorder(t)}
	reg := sandboxtest.Registry()
	be := sandbox.InProcess{Registry: reg}
	r := New(Config{Registry: reg, Backend: func(sandbox.Need) sandbox.Backend { return be }, Sink: sink})
	t.Cleanup(r.Close)
	info, err := r.Submit("x", "echo", sandbox.Params{"n": int64(100)})
	if err != nil {
		t.Fatal(err)
	}
	if f := sink.Final(info.ID); f.Status != sandbox.StatusDone {
		t.Fatalf("final %s %q", f.Status, f.Message)
	}
	evs := sink.Events(info.ID)
	lines := 0
	for _, e := range evs {
		if e.Type == sandbox.EvLog {
			lines++
		}
	}
	sink.mu.Lock()
	calls := sink.calls
	sink.mu.Unlock()
	if lines != 100 {
		t.Errorf("%d log lines arrived, want 100", lines)
	}
	if calls == 0 || calls >= len(evs)/2 {
		t.Errorf("%d events came in %d calls: not batched", len(evs), calls)
	}
	t.Logf("%d events in %d calls", len(evs), calls)
}
