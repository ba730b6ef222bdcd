package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab"
)

// TestRunDurations: per experiment, the newest n done runs, averaged as the
// runner averages (newer counts more); failed runs and older runs beyond n
// do not count.
func TestRunDurations(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	t0 := time.Now().Add(-time.Hour)
	n := 0
	add := func(exp string, took time.Duration, final rdmalab.Status) {
		t.Helper()
		n++
		id := fmt.Sprintf("run%02d", n)
		start := t0.Add(time.Duration(n) * 5 * time.Minute) // finishes in the order added
		if err := db.CreateRun(ctx, rdmalab.RunInfo{ID: id, Learner: NewLearnerID(), Experiment: exp,
			Params: rdmalab.Params{}, Status: rdmalab.StatusQueued, Created: start}); err != nil {
			t.Fatal(err)
		}
		for i, ev := range []rdmalab.Event{
			{Type: rdmalab.EvStatus, Status: rdmalab.StatusRunning, Backend: "vm", Time: start},
			{Type: rdmalab.EvStatus, Status: final, Time: start.Add(took)},
		} {
			ev.Seq = int64(i + 1)
			if err := db.AppendRunEvent(ctx, id, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := time.Second
	add("a", 90*s, rdmalab.StatusDone) // beyond the newest 3 of "a"
	add("a", 30*s, rdmalab.StatusDone)
	add("a", 60*s, rdmalab.StatusDone)
	add("b", 5*s, rdmalab.StatusFailed)
	add("a", 90*s, rdmalab.StatusDone)
	add("b", 12*s, rdmalab.StatusDone)
	got, err := db.RunDurations(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	// "a": 30 s, then (30·2+60)/3 = 40 s, then (40·2+90)/3 ≈ 56.67 s.
	wantA := ((30*s*2+60*s)/3*2 + 90*s) / 3
	if got["a"] != wantA || got["b"] != 12*s || len(got) != 2 {
		t.Errorf("RunDurations = %v, want a %v and b 12s", got, wantA)
	}
}
