package web

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/runner"
	"github.com/rdmalab/rdmalab/store"
)

// An event is encoded once: the bytes a live watcher gets are the bytes
// stored, and a replay (GET …/events from the start) sends those same
// stored bytes (issue 23: SSE frames were marshalled twice, in the store
// and in the fan-out, and again for a replay).
func TestRunEventStoredAsSent(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	id := "sent-run"
	learner := store.NewLearnerID()
	if err := env.DB.CreateRun(context.Background(), sandbox.RunInfo{ID: id, Learner: learner, Experiment: "ticks", Status: sandbox.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	sub := env.Hub.subscribe(id)
	defer env.Hub.unsubscribe(id, sub)
	ok := true
	evs := []sandbox.Event{
		{Seq: 1, Time: time.Now(), Type: sandbox.EvLog, Message: "line", Messages: sandbox.Text{"en": "line", "zh": "一行"}},
		{Seq: 2, Time: time.Now(), Type: sandbox.EvResult, OK: &ok, Figures: map[string]float64{"x": 0.3}},
		{Seq: 3, Time: time.Now(), Type: sandbox.EvStatus, Status: sandbox.StatusDone},
	}
	var live [][]byte
	for _, ev := range evs {
		env.Hub.RunEvent(id, ev)
		live = append(live, (<-sub.ch).b)
	}
	stored, err := env.DB.RunEventsJSON(context.Background(), id, 0, 0)
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
	env := newBenchRunEnv(b)
	id := "bench-hub"
	if err := env.DB.CreateRun(context.Background(), sandbox.RunInfo{ID: id, Learner: store.NewLearnerID(), Experiment: "ticks", Status: sandbox.StatusRunning}); err != nil {
		b.Fatal(err)
	}
	sub := env.Hub.subscribe(id)
	defer env.Hub.unsubscribe(id, sub)
	ev := sandbox.Event{Type: sandbox.EvLog, Message: "a log line of a typical length from an experiment",
		Messages: sandbox.Text{"en": "a log line of a typical length from an experiment", "zh": "实验里一行典型长度的日志"}}
	var seq int64
	for b.Loop() {
		seq++
		ev.Seq, ev.Time = seq, time.Now()
		env.Hub.RunEvent(id, ev)
		<-sub.ch
	}
}
