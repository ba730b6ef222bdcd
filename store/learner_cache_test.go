package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab"
)

// TestLearnerQuizSummary: one query gives each attempted question's count,
// whether any attempt was right and whether the latest was; it agrees
// with LearnerQuestionStatus, ignores other learners, and follows each
// new attempt although it is cached.
func TestLearnerQuizSummary(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	me, other := NewLearnerID(), NewLearnerID()
	add := func(learner, q string, correct bool) {
		t.Helper()
		if _, err := db.AddAttempt(ctx, learner, q, json.RawMessage(`"a"`), correct, false); err != nil {
			t.Fatal(err)
		}
	}
	if s, err := db.LearnerQuizSummary(ctx, me); err != nil || len(s) != 0 {
		t.Fatalf("no attempts yet: %v, %v", s, err)
	}
	add(me, "l/q1", false)
	add(me, "l/q1", true)
	add(me, "l/q1", false)
	add(me, "l/q2", true)
	add(me, "l/q3", false)
	add(other, "l/q3", true)
	add(other, "l/q4", true)

	want := map[string]QuestionSummary{
		"l/q1": {Attempts: 3, EverCorrect: true, LatestCorrect: false},
		"l/q2": {Attempts: 1, EverCorrect: true, LatestCorrect: true},
		"l/q3": {Attempts: 1, EverCorrect: false, LatestCorrect: false},
	}
	check := func(want map[string]QuestionSummary) {
		t.Helper()
		got, err := db.LearnerQuizSummary(ctx, me)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("summary = %v, want %v", got, want)
		}
		ids := []string{"l/q1", "l/q2", "l/q3", "l/q4"}
		st, err := db.LearnerQuestionStatus(ctx, me, ids)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			s := st[id]
			fromStatus := QuestionSummary{Attempts: s.Attempts, EverCorrect: s.Best != nil, LatestCorrect: s.Attempts > 0 && s.Latest.Correct}
			if got[id] != fromStatus {
				t.Errorf("%s: summary %+v, LearnerQuestionStatus says %+v", id, got[id], fromStatus)
			}
		}
	}
	check(want)
	check(want) // from the cache now
	add(me, "l/q3", true)
	add(me, "l/q4", false)
	want["l/q3"] = QuestionSummary{Attempts: 2, EverCorrect: true, LatestCorrect: true}
	want["l/q4"] = QuestionSummary{Attempts: 1}
	check(want)
}

// TestLatestResults: one query gives the newest done run with a result of
// each experiment, and the cached answer follows runs that finish later.
func TestLatestResults(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	me := NewLearnerID()
	t0 := time.Now().Add(-time.Hour)
	ok := true
	run := func(id, exp string, at time.Time, final rdmalab.Status, figure float64) {
		t.Helper()
		if err := db.CreateRun(ctx, rdmalab.RunInfo{ID: id, Learner: me, Experiment: exp,
			Params: rdmalab.Params{}, Status: rdmalab.StatusQueued, Created: at}); err != nil {
			t.Fatal(err)
		}
		evs := []rdmalab.Event{{Type: rdmalab.EvStatus, Status: rdmalab.StatusRunning, Backend: "host"}}
		if figure > 0 {
			evs = append(evs, rdmalab.Event{Type: rdmalab.EvResult, OK: &ok, Figures: map[string]float64{"x": figure}})
		}
		if final != "" {
			evs = append(evs, rdmalab.Event{Type: rdmalab.EvStatus, Status: final})
		}
		for i := range evs {
			evs[i].Seq, evs[i].Time = int64(i+1), at
			if err := db.AppendRunEvent(ctx, id, evs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	latest := func() string {
		t.Helper()
		all, err := db.LatestResults(ctx, me)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for exp, r := range all {
			if r.Experiment != exp || r.Result == nil {
				t.Errorf("%s: run %+v", exp, r)
				continue
			}
			out[exp] = fmt.Sprintf("%s=%g", r.ID, r.Result.Figures["x"])
		}
		return fmt.Sprint(out)
	}
	if got := latest(); got != "map[]" {
		t.Fatalf("no runs: %s", got)
	}
	run("a1", "a", t0, rdmalab.StatusDone, 1)
	run("a2", "a", t0.Add(time.Minute), rdmalab.StatusDone, 2)
	run("b1", "b", t0, rdmalab.StatusDone, 3)
	run("b2", "b", t0.Add(time.Minute), rdmalab.StatusFailed, 4)
	if got, want := latest(), "map[a:a2=2 b:b1=3]"; got != want {
		t.Fatalf("latest = %s, want %s", got, want)
	}
	latest() // cached
	// A run still going has its result but is not done: not yet.
	run("a3", "a", t0.Add(2*time.Minute), "", 5)
	if got, want := latest(), "map[a:a2=2 b:b1=3]"; got != want {
		t.Fatalf("while a3 runs: %s, want %s", got, want)
	}
	if err := db.AppendRunEvent(ctx, "a3", rdmalab.Event{Seq: 3, Time: t0, Type: rdmalab.EvStatus, Status: rdmalab.StatusDone}); err != nil {
		t.Fatal(err)
	}
	if got, want := latest(), "map[a:a3=5 b:b1=3]"; got != want {
		t.Fatalf("after a3 finished: %s, want %s", got, want)
	}
	if r, err := db.LatestResult(ctx, me, "c"); !errors.Is(err, ErrRunNotFound) {
		t.Errorf("experiment never run: %+v, %v", r, err)
	}
}

// A load that a write overtakes must not be cached: it may hold what the
// database said before the write.
func TestLearnerCacheDropsOvertakenLoad(t *testing.T) {
	c := newLearnerCache[int](10)
	v, err := c.load("me", func() (int, error) {
		c.invalidate("me") // a write commits while the load runs
		return 1, nil
	})
	if v != 1 || err != nil {
		t.Fatalf("load = %d, %v", v, err)
	}
	if _, ok := c.get("me"); ok {
		t.Error("an overtaken load was cached")
	}
	c.load("me", func() (int, error) { return 2, nil })
	if v, ok := c.get("me"); !ok || v != 2 {
		t.Errorf("cached %d, %v; want 2", v, ok)
	}
	c.invalidateAll()
	if _, ok := c.get("me"); ok {
		t.Error("invalidateAll kept a value")
	}
	for i := range 11 {
		c.load(fmt.Sprint(i), func() (int, error) { return i, nil })
	}
	if len(c.m) > 10 {
		t.Errorf("cache holds %d values, max 10", len(c.m))
	}
}

// Readers racing writers: once the writers are done, the cached summary
// is the database's.
func TestLearnerQuizSummaryConcurrent(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	me := NewLearnerID()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 10 {
				if _, err := db.AddAttempt(ctx, me, fmt.Sprint("l/q", w), json.RawMessage(`1`), i%2 == 0, false); err != nil {
					t.Error(err)
				}
			}
		})
		wg.Go(func() {
			for range 20 {
				if _, err := db.LearnerQuizSummary(ctx, me); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got, err := db.LearnerQuizSummary(ctx, me)
	if err != nil {
		t.Fatal(err)
	}
	for w := range 4 {
		if s := got[fmt.Sprint("l/q", w)]; s != (QuestionSummary{Attempts: 10, EverCorrect: true, LatestCorrect: false}) {
			t.Errorf("l/q%d: %+v", w, s)
		}
	}
}
