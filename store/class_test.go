package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab"
)

func TestClassQueries(t *testing.T) {
	ctx := context.Background()
	db := openInstructorsDB(t)
	ann, bob, cat := NewLearnerID(), NewLearnerID(), NewLearnerID()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.SetDisplayName(ctx, ann, "Ann"))
	must(db.MarkOpened(ctx, ann, "01-a"))
	must(db.MarkCompleted(ctx, ann, "01-a"))
	must(db.MarkOpened(ctx, ann, "02-b"))
	must(db.MarkOpened(ctx, bob, "01-a"))
	_, err := db.AddAttempt(ctx, bob, "a/q1", json.RawMessage(`"x"`), false, false)
	must(err)
	_, err = db.AddAttempt(ctx, bob, "a/q1", json.RawMessage(`"y"`), true, false)
	must(err)
	_, err = db.AddAttempt(ctx, bob, "a/q2", json.RawMessage(`12.5`), true, false)
	must(err)
	_, err = db.AddAttempt(ctx, ann, "a/q1", json.RawMessage(`"y"`), true, false)
	must(err)

	run := func(id, learner, exp string, final rdmalab.Status) {
		t.Helper()
		must(db.CreateRun(ctx, rdmalab.RunInfo{ID: id, Learner: learner, Experiment: exp, Params: rdmalab.Params{}, Status: rdmalab.StatusQueued}))
		must(db.AppendRunEvent(ctx, id, rdmalab.Event{Seq: 1, Time: time.Now(), Type: rdmalab.EvStatus, Status: rdmalab.StatusRunning, Backend: "host"}))
		must(db.AppendRunEvent(ctx, id, rdmalab.Event{Seq: 2, Time: time.Now(), Type: rdmalab.EvStatus, Status: final, Message: "why"}))
	}
	run("r1", cat, "memlock", rdmalab.StatusDone)
	run("r2", cat, "memlock", rdmalab.StatusFailed)
	run("r3", bob, "memlock", rdmalab.StatusDone)
	run("r4", bob, "tcp-cost", rdmalab.StatusTimedOut)

	page, err := db.ClassLearners(ctx, 0, 0, time.Now().Add(-time.Hour))
	must(err)
	ls := page.Learners
	if len(ls) != 3 || page.Total != 3 || page.Active != 3 {
		t.Fatalf("%d learners (total %d, active %d), want 3", len(ls), page.Total, page.Active)
	}
	// One page of two from the second: the counts are over everyone.
	p2, err := db.ClassLearners(ctx, 2, 1, time.Now().Add(time.Hour))
	must(err)
	if len(p2.Learners) != 2 || p2.Total != 3 || p2.Active != 0 || p2.Learners[0].ID != ls[1].ID {
		t.Errorf("page 2 of 2: %d learners, total %d, active %d", len(p2.Learners), p2.Total, p2.Active)
	}
	// bob ran last, so bob is most recently active.
	if ls[0].ID != bob {
		t.Errorf("first = %s, want bob", ls[0].ID)
	}
	by := map[string]LearnerSummary{}
	for _, l := range ls {
		by[l.ID] = l
	}
	want := map[string]LearnerSummary{
		ann: {DisplayName: "Ann", Opened: 2, Completed: 1, Attempts: 1, Correct: 1, Runs: 0},
		bob: {Opened: 1, Completed: 0, Attempts: 3, Correct: 2, Runs: 2},
		cat: {Opened: 0, Completed: 0, Attempts: 0, Correct: 0, Runs: 2},
	}
	for id, w := range want {
		g := by[id]
		if g.DisplayName != w.DisplayName || g.Opened != w.Opened || g.Completed != w.Completed ||
			g.Attempts != w.Attempts || g.Correct != w.Correct || g.Runs != w.Runs {
			t.Errorf("learner %s = %+v, want %+v", id[:6], g, w)
		}
		if g.LastActive.Before(g.Created) || g.LastActive.IsZero() {
			t.Errorf("learner %s last active %v before created %v", id[:6], g.LastActive, g.Created)
		}
	}

	lc, err := db.ClassLessonCounts(ctx)
	must(err)
	if lc["01-a"] != (LessonCounts{"01-a", 2, 1}) || lc["02-b"] != (LessonCounts{"02-b", 1, 0}) || len(lc) != 2 {
		t.Errorf("lesson counts = %v", lc)
	}

	rc, err := db.ClassRunCounts(ctx)
	must(err)
	if len(rc) != 2 || rc[0].Experiment != "memlock" || rc[0].Total != 3 || rc[0].Learners != 2 ||
		rc[0].ByStatus["done"] != 2 || rc[0].ByStatus["failed"] != 1 ||
		rc[1].Experiment != "tcp-cost" || rc[1].ByStatus["timed-out"] != 1 || rc[1].Learners != 1 {
		t.Errorf("run counts = %+v", rc)
	}

	pr, err := db.ClassProgress(ctx)
	must(err)
	if len(pr) != 3 {
		t.Fatalf("progress rows = %d", len(pr))
	}
	for _, p := range pr {
		if p.Learner == ann && p.Lesson == "01-a" && (p.CompletedAt.IsZero() || p.DisplayName != "Ann") {
			t.Errorf("ann 01-a = %+v", p)
		}
		if p.Learner == bob && !p.CompletedAt.IsZero() {
			t.Errorf("bob completed: %+v", p)
		}
	}

	runs, err := db.ClassRuns(ctx)
	must(err)
	if len(runs) != 4 || runs[0].ID != "r1" || runs[3].Status != rdmalab.StatusTimedOut || runs[1].Error != "why" {
		t.Errorf("runs = %+v", runs)
	}

	names, err := db.DisplayNames(ctx)
	must(err)
	if len(names) != 1 || names[ann] != "Ann" {
		t.Errorf("names = %v", names)
	}
}
