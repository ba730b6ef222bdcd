package runner

import (
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// maxPending bounds the events of one run waiting for the Sink before an
// experiment's emit waits (a stalled database slows that run, not memory).
const maxPending = 1024

// runWriter numbers one run's events and hands them to the Sink in that
// order on its own goroutine, so the runner never waits for the Sink (a
// database write) while it holds its lock: a slow or locked database
// delays the stored events, not Submit, Cancel or Lookup of anyone.
//
// Events wait until open (the run's record exists); discard drops them
// (the record could not be made).
type runWriter struct {
	sink  Sink
	runID string
	wg    *sync.WaitGroup // the runner's writers, waited for by Close

	mu      sync.Mutex
	drained *sync.Cond // signalled when pending shrinks
	seq     int64
	pending []sandbox.Event
	open    bool // events may go out
	dropped bool // never: the run was not recorded
	sending bool // a goroutine is delivering
}

func newRunWriter(sink Sink, runID string, wg *sync.WaitGroup) *runWriter {
	w := &runWriter{sink: sink, runID: runID, wg: wg}
	w.drained = sync.NewCond(&w.mu)
	return w
}

// add numbers ev and queues it; it never waits.
func (w *runWriter) add(ev sandbox.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.addLocked(ev)
}

// addPaced is add for an experiment's events: it waits while the run has
// maxPending events not yet written.
func (w *runWriter) addPaced(ev sandbox.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.open && len(w.pending) >= maxPending {
		w.drained.Wait()
	}
	w.addLocked(ev)
}

func (w *runWriter) addLocked(ev sandbox.Event) {
	if w.dropped {
		return
	}
	w.seq++
	ev.Seq = w.seq
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	w.pending = append(w.pending, ev)
	w.kickLocked()
}

// start lets the events go out: the run's record exists.
func (w *runWriter) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.open = true
	w.kickLocked()
}

// discard drops every event, queued and future.
func (w *runWriter) discard() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dropped, w.pending = true, nil
	w.drained.Broadcast()
}

func (w *runWriter) kickLocked() {
	if !w.open || w.sending || len(w.pending) == 0 || w.sink == nil {
		if w.sink == nil {
			w.pending = nil
		}
		return
	}
	w.sending = true
	w.wg.Add(1)
	go w.deliver()
}

// deliver writes the pending events in order until none are left.
func (w *runWriter) deliver() {
	defer w.wg.Done()
	for {
		w.mu.Lock()
		evs := w.pending
		w.pending = nil
		if len(evs) == 0 {
			w.sending = false
			w.mu.Unlock()
			return
		}
		w.drained.Broadcast()
		w.mu.Unlock()
		if b, ok := w.sink.(BatchSink); ok {
			b.RunEvents(w.runID, evs)
			continue
		}
		for _, ev := range evs {
			w.sink.RunEvent(w.runID, ev)
		}
	}
}
