package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab"
)

func TestRunsLifecycle(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	learner := NewLearnerID()
	info := rdmalab.RunInfo{ID: "r1", Learner: learner, Experiment: "memlock",
		Params: rdmalab.Params{"size": int64(1 << 20)}, Status: rdmalab.StatusQueued, Created: time.Now()}
	if err := db.CreateRun(ctx, info); err != nil {
		t.Fatal(err)
	}
	ok := true
	evs := []rdmalab.Event{
		{Type: rdmalab.EvStatus, Status: rdmalab.StatusQueued, Position: 1},
		{Type: rdmalab.EvStatus, Status: rdmalab.StatusRunning, Backend: "host"},
		{Type: rdmalab.EvError, ErrnoName: "ENOMEM", Errno: 12, Message: "mlock failed"},
		{Type: rdmalab.EvResult, OK: &ok, Message: "verdict", Messages: rdmalab.Text{"zh": "结论", "en": "verdict"}},
		{Type: rdmalab.EvStatus, Status: rdmalab.StatusDone},
	}
	for i := range evs {
		evs[i].Seq = int64(i + 1)
		evs[i].Time = time.Now()
		if err := db.AppendRunEvent(ctx, "r1", evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AppendRunEvent(ctx, "r1", evs[0]); err == nil {
		t.Error("a duplicate seq was accepted")
	}
	r, err := db.Run(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != rdmalab.StatusDone || r.Backend != "host" || r.Error != "" || r.Result == nil ||
		r.Result.Messages["zh"] != "结论" || r.StartedAt.IsZero() || r.FinishedAt.IsZero() || string(r.Params) != `{"size":1048576}` {
		t.Errorf("run %+v", r)
	}
	got, err := db.RunEvents(ctx, "r1", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Seq != 3 || got[0].ErrnoName != "ENOMEM" {
		t.Errorf("events after 2: %+v", got)
	}
	if got, _ := db.RunEvents(ctx, "r1", 0, 2); len(got) != 2 {
		t.Errorf("limit 2: %d events", len(got))
	}
	list, err := db.LearnerRuns(ctx, learner, 10)
	if err != nil || len(list) != 1 || list[0].ID != "r1" {
		t.Errorf("history %+v %v", list, err)
	}
	if _, err := db.Run(ctx, "nope"); !errors.Is(err, ErrRunNotFound) {
		t.Errorf("missing run: %v", err)
	}
}

func TestInterruptRuns(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	learner := NewLearnerID()
	for _, id := range []string{"queued", "running", "done"} {
		if err := db.CreateRun(ctx, rdmalab.RunInfo{ID: id, Learner: learner, Experiment: "tcp-cost", Status: rdmalab.StatusQueued}); err != nil {
			t.Fatal(err)
		}
		_ = db.AppendRunEvent(ctx, id, rdmalab.Event{Seq: 1, Time: time.Now(), Type: rdmalab.EvStatus, Status: rdmalab.StatusQueued, Position: 1})
	}
	_ = db.AppendRunEvent(ctx, "running", rdmalab.Event{Seq: 2, Time: time.Now(), Type: rdmalab.EvStatus, Status: rdmalab.StatusRunning})
	_ = db.AppendRunEvent(ctx, "done", rdmalab.Event{Seq: 2, Time: time.Now(), Type: rdmalab.EvStatus, Status: rdmalab.StatusDone})
	n, err := db.InterruptRuns(ctx, "the lab server stopped")
	if err != nil || n != 2 {
		t.Fatalf("interrupted %d, %v; want 2", n, err)
	}
	for id, seq := range map[string]int64{"queued": 2, "running": 3} {
		r, _ := db.Run(ctx, id)
		evs, _ := db.RunEvents(ctx, id, 0, 0)
		last := evs[len(evs)-1]
		if r.Status != rdmalab.StatusInterrupted || r.Error != "the lab server stopped" || last.Seq != seq || last.Status != rdmalab.StatusInterrupted {
			t.Errorf("%s: run %+v, last event %+v", id, r, last)
		}
	}
	if r, _ := db.Run(ctx, "done"); r.Status != rdmalab.StatusDone {
		t.Errorf("a finished run was touched: %s", r.Status)
	}
}

// A burst of events is one transaction: all stored, the summary folded
// from them, or (a seq already stored) none at all.
func TestAppendRunEventsAllOrNone(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	if err := db.CreateRun(ctx, rdmalab.RunInfo{ID: "b1", Learner: NewLearnerID(), Experiment: "memlock",
		Status: rdmalab.StatusQueued, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	mk := func(seqs ...int64) ([]rdmalab.Event, [][]byte) {
		var evs []rdmalab.Event
		var data [][]byte
		for _, s := range seqs {
			ev := rdmalab.Event{Seq: s, Type: rdmalab.EvLog, Message: "line", Time: time.Now()}
			if s == 1 {
				ev = rdmalab.Event{Seq: s, Type: rdmalab.EvStatus, Status: rdmalab.StatusRunning, Backend: "host", Time: time.Now()}
			}
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			evs, data = append(evs, ev), append(data, b)
		}
		return evs, data
	}
	evs, data := mk(1, 2, 3)
	if err := db.AppendRunEventsJSON(ctx, "b1", evs, data); err != nil {
		t.Fatal(err)
	}
	// 4 and 5 are new, 3 is not: the batch fails whole.
	evs, data = mk(4, 3, 5)
	if err := db.AppendRunEventsJSON(ctx, "b1", evs, data); err == nil {
		t.Error("a batch repeating seq 3 was accepted")
	}
	if err := db.AppendRunEventsJSON(ctx, "b1", evs[:1], nil); err == nil {
		t.Error("events without their encodings were accepted")
	}
	got, err := db.RunEventsJSON(ctx, "b1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2].Event.Seq != 3 {
		t.Fatalf("stored %d events (want 1..3, none of the failed batch): %+v", len(got), got)
	}
	r, err := db.Run(ctx, "b1")
	if err != nil || r.Status != rdmalab.StatusRunning || r.Backend != "host" {
		t.Errorf("summary %+v %v: the batch's status event was not folded", r, err)
	}
}
