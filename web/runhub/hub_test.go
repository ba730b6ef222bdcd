package runhub

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	rdmalab "github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/store"
)

// newHub is a hub over a fresh database in a temporary folder.
func newHub(tb testing.TB) (*store.DB, *Hub) {
	tb.Helper()
	db, err := store.Open(filepath.Join(tb.TempDir(), "lab.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db, New(db, nil)
}

// An event is encoded once: the bytes a live watcher gets are the bytes
// stored, and a replay (GET …/events from the start) sends those same
// stored bytes (issue 23: SSE frames were marshalled twice, in the store
// and in the fan-out, and again for a replay).
func TestRunEventStoredAsSent(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "one-by-one", true: "batch"}[batch], func(t *testing.T) {
			testStoredAsSent(t, batch)
		})
	}
}

// testStoredAsSent sends three events, one RunEvent each or in one
// RunEvents (the runner's burst: one write, then the fan-out in order).
func testStoredAsSent(t *testing.T, batch bool) {
	db, hub := newHub(t)
	id := "sent-run"
	learner := store.NewLearnerID()
	if err := db.CreateRun(context.Background(), rdmalab.RunInfo{ID: id, Learner: learner, Experiment: "ticks", Status: rdmalab.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	sub := hub.subscribe(id)
	defer hub.unsubscribe(id, sub)
	ok := true
	evs := []rdmalab.Event{
		{Seq: 1, Time: time.Now(), Type: rdmalab.EvLog, Message: "line", Messages: rdmalab.Text{"en": "line", "zh": "一行"}},
		{Seq: 2, Time: time.Now(), Type: rdmalab.EvResult, OK: &ok, Figures: map[string]float64{"x": 0.3}},
		{Seq: 3, Time: time.Now(), Type: rdmalab.EvStatus, Status: rdmalab.StatusDone},
	}
	var live [][]byte
	if batch {
		hub.RunEvents(id, evs)
		for range evs {
			live = append(live, (<-sub.ch).b)
		}
	} else {
		for _, ev := range evs {
			hub.RunEvent(id, ev)
			live = append(live, (<-sub.ch).b)
		}
	}
	stored, err := db.RunEventsJSON(context.Background(), id, 0, 0)
	if err != nil || len(stored) != len(evs) {
		t.Fatalf("stored %d events, err %v", len(stored), err)
	}
	for i, st := range stored {
		want := "id: " + strconv.FormatInt(st.Event.Seq, 10) + "\ndata: " + string(st.Data) + "\n\n"
		if string(live[i]) != want {
			t.Errorf("event %d: sent %q, stored %q", i+1, live[i], st.Data)
		}
		if replay := frameOf(st.Event, st.Data).b; !bytes.Equal(replay, live[i]) {
			t.Errorf("event %d: replayed %q, sent %q", i+1, replay, live[i])
		}
	}
}

// BenchmarkHubRunEvent is one event through the hub (store, then fan out
// to one watcher): the cost the one encoding saves is json.Marshal of the
// event, small beside the SQLite transaction.
func BenchmarkHubRunEvent(b *testing.B) {
	db, hub := newHub(b)
	id := "bench-hub"
	if err := db.CreateRun(context.Background(), rdmalab.RunInfo{ID: id, Learner: store.NewLearnerID(), Experiment: "ticks", Status: rdmalab.StatusRunning}); err != nil {
		b.Fatal(err)
	}
	sub := hub.subscribe(id)
	defer hub.unsubscribe(id, sub)
	ev := rdmalab.Event{Type: rdmalab.EvLog, Message: "a log line of a typical length from an experiment",
		Messages: rdmalab.Text{"en": "a log line of a typical length from an experiment", "zh": "实验里一行典型长度的日志"}}
	var seq int64
	for b.Loop() {
		seq++
		ev.Seq, ev.Time = seq, time.Now()
		hub.RunEvent(id, ev)
		<-sub.ch
	}
}

func TestSlowSubscriberIsDropped(t *testing.T) {
	_, hub := newHub(t)
	sub := hub.subscribe("r-slow")
	for i := range subscriberBuffer + 1 {
		hub.RunEvent("r-slow", rdmalab.Event{Seq: int64(i + 1), Type: rdmalab.EvLog})
	}
	n := 0
	for range sub.ch {
		n++
	}
	if n != subscriberBuffer || hub.watchers("r-slow") != 0 {
		t.Errorf("slow subscriber got %d events and is still subscribed: %v", n, hub.watchers("r-slow"))
	}
}
