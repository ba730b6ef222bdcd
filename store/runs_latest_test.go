package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab"
)

// TestLatestResult: the newest done run with a result wins; failed runs,
// runs without a result, other experiments and other learners do not count.
func TestLatestResult(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	me, other := NewLearnerID(), NewLearnerID()
	if _, err := db.LatestResult(ctx, me, "tcp-cost"); !errors.Is(err, ErrRunNotFound) {
		t.Fatalf("no runs yet: err = %v, want ErrRunNotFound", err)
	}
	t0 := time.Now().Add(-time.Hour)
	ok := true
	add := func(id, learner, exp string, at time.Time, final rdmalab.Status, ghz float64) {
		t.Helper()
		if err := db.CreateRun(ctx, rdmalab.RunInfo{ID: id, Learner: learner, Experiment: exp,
			Params: rdmalab.Params{}, Status: rdmalab.StatusQueued, Created: at}); err != nil {
			t.Fatal(err)
		}
		evs := []rdmalab.Event{{Type: rdmalab.EvStatus, Status: rdmalab.StatusRunning, Backend: "host"}}
		if ghz > 0 {
			evs = append(evs, rdmalab.Event{Type: rdmalab.EvResult, OK: &ok, Figures: map[string]float64{"ghz_per_gbps": ghz}})
		}
		evs = append(evs, rdmalab.Event{Type: rdmalab.EvStatus, Status: final})
		for i := range evs {
			evs[i].Seq, evs[i].Time = int64(i+1), at
			if err := db.AppendRunEvent(ctx, id, evs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	add("old", me, "tcp-cost", t0, rdmalab.StatusDone, 0.7)
	add("want", me, "tcp-cost", t0.Add(time.Minute), rdmalab.StatusDone, 0.5)
	add("noresult", me, "tcp-cost", t0.Add(2*time.Minute), rdmalab.StatusDone, 0)
	add("failed", me, "tcp-cost", t0.Add(3*time.Minute), rdmalab.StatusFailed, 0.9)
	add("memlock", me, "memlock", t0.Add(4*time.Minute), rdmalab.StatusDone, 0.1)
	add("theirs", other, "tcp-cost", t0.Add(5*time.Minute), rdmalab.StatusDone, 0.2)

	r, err := db.LatestResult(ctx, me, "tcp-cost")
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "want" || r.Result == nil || r.Result.Figures["ghz_per_gbps"] != 0.5 {
		t.Errorf("latest result = %s %+v, want run \"want\" with 0.5 GHz/Gbps", r.ID, r.Result)
	}
}
