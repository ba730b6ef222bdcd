package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab"
)

// programResult stores one finished program run of learner with the
// result event a check that reported figs would give (web/program.go).
func programResult(t *testing.T, db *DB, learner, lesson, program string, created time.Time, ok bool, figs map[string]float64) string {
	t.Helper()
	ctx := context.Background()
	id := NewLearnerID()[:16]
	if err := db.CreateRun(ctx, rdmalab.RunInfo{ID: id, Learner: learner, Experiment: "program",
		Params: rdmalab.Params{"lesson": lesson, "program": program}, Status: rdmalab.StatusRunning, Created: created}); err != nil {
		t.Fatal(err)
	}
	okv := ok
	for i, ev := range []rdmalab.Event{
		{Type: rdmalab.EvResult, OK: &okv, Name: "check", Figures: figs},
		{Type: rdmalab.EvStatus, Status: rdmalab.StatusDone},
	} {
		ev.Seq, ev.Time = int64(i+1), created.Add(time.Duration(i+1)*time.Second)
		if err := db.AppendRunEvent(ctx, id, ev); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// TestLeaderboard: only members who chose to are on a board; each row is
// the learner's best checked run made in the class, with the interval the
// check reported; leaving removes the row; a hidden class refuses joins;
// another class's board is another board.
func TestLeaderboard(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	c1, err := db.CreateCohort(ctx, "A", 0)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := db.CreateCohort(ctx, "B", 0)
	if err != nil {
		t.Fatal(err)
	}
	ann, bob, cat, dan := NewLearnerID(), NewLearnerID(), NewLearnerID(), NewLearnerID()
	for _, l := range []string{ann, bob, cat} {
		if _, err := db.JoinCohort(ctx, l, c1.Code); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.JoinCohort(ctx, dan, c2.Code); err != nil {
		t.Fatal(err)
	}
	if err := db.SetDisplayName(ctx, ann, "Ann Real"); err != nil {
		t.Fatal(err)
	}
	const lesson, prog = "06-performance", "write-rate"
	b1 := Board{Cohort: c1.ID, Lesson: lesson, Program: prog, Figure: "ratio"}
	b2 := Board{Cohort: c2.ID, Lesson: lesson, Program: prog, Figure: "ratio"}
	now := time.Now()
	fig := func(v, lo, hi float64) map[string]float64 {
		return map[string]float64{"ratio": v, "ratio_low": lo, "ratio_high": hi, "compile_ms": 10}
	}
	// Before joining the class: not the class's.
	programResult(t, db, ann, lesson, prog, now.Add(-time.Hour), true, fig(9.99, 9.9, 9.99))
	programResult(t, db, ann, lesson, prog, now.Add(time.Minute), false, fig(1.12, 1.05, 1.20))
	best := programResult(t, db, ann, lesson, prog, now.Add(2*time.Minute), true, fig(1.41, 1.35, 1.48))
	programResult(t, db, ann, lesson, prog, now.Add(3*time.Minute), false, fig(1.25, 1.18, 1.33))
	programResult(t, db, ann, lesson, "other", now.Add(3*time.Minute), true, fig(5, 5, 5))
	programResult(t, db, ann, lesson, prog, now.Add(4*time.Minute), false, map[string]float64{"compile_ms": 3}) // did not compile
	programResult(t, db, bob, lesson, prog, now.Add(time.Minute), false, fig(1.20, 1.10, 1.31))
	programResult(t, db, cat, lesson, prog, now.Add(time.Minute), true, fig(2, 1.9, 2.1)) // never joins the board
	programResult(t, db, dan, lesson, prog, now.Add(time.Minute), true, fig(3, 2.9, 3.1))

	if rows, err := db.Leaderboard(ctx, b1); err != nil || len(rows) != 0 {
		t.Fatalf("nobody opted in: %+v %v", rows, err)
	}
	ea, err := db.JoinLeaderboard(ctx, b1, ann, false)
	if err != nil {
		t.Fatal(err)
	}
	eb, err := db.JoinLeaderboard(ctx, b1, bob, true)
	if err != nil {
		t.Fatal(err)
	}
	if ea.Number != 1 || eb.Number != 2 || ea.ShowName || !eb.ShowName {
		t.Errorf("entries %+v %+v", ea, eb)
	}
	if _, err := db.JoinLeaderboard(ctx, b2, ann, false); !errors.Is(err, ErrNotMember) {
		t.Errorf("ann joins class B's board: %v, want ErrNotMember", err)
	}
	if _, err := db.JoinLeaderboard(ctx, Board{Cohort: 999, Lesson: lesson, Program: prog, Figure: "ratio"}, ann, false); !errors.Is(err, ErrNotMember) {
		t.Errorf("a class that does not exist: %v", err)
	}
	rows, err := db.Leaderboard(ctx, b1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	a, b := rows[0], rows[1]
	if a.Learner != ann || a.Rank != 1 || a.Value != 1.41 || a.Low != 1.35 || a.High != 1.48 || !a.Passed || a.RunID != best || a.Name != "Ann Real" || a.ShowName {
		t.Errorf("first row %+v, want ann's 1.41 (1.35–1.48) of run %s", a, best)
	}
	if b.Learner != bob || b.Rank != 2 || b.Value != 1.20 || b.Passed || !b.ShowName || b.Number != 2 {
		t.Errorf("second row %+v", b)
	}
	if rows, _ := db.Leaderboard(ctx, b2); len(rows) != 0 {
		t.Errorf("class B's board shows %+v", rows)
	}
	// Leaving removes the row; coming back gives a new label.
	if err := db.LeaveLeaderboard(ctx, b1, ann); err != nil {
		t.Fatal(err)
	}
	if rows, _ := db.Leaderboard(ctx, b1); len(rows) != 1 || rows[0].Learner != bob {
		t.Errorf("after ann left: %+v", rows)
	}
	if _, ok, _ := db.LeaderboardEntry(ctx, b1, ann); ok {
		t.Error("ann still has an entry after leaving")
	}
	if e, err := db.JoinLeaderboard(ctx, b1, ann, false); err != nil || e.Number != 3 {
		t.Errorf("ann back: %+v %v, want label 3", e, err)
	}
	// Hidden: joining refused; the entries stay for when it shows again.
	if err := db.SetLeaderboardHidden(ctx, c1.ID, true); err != nil {
		t.Fatal(err)
	}
	if h, _ := db.HiddenLeaderboards(ctx); !h[c1.ID] || h[c2.ID] {
		t.Errorf("hidden %v", h)
	}
	if _, err := db.JoinLeaderboard(ctx, b1, cat, false); !errors.Is(err, ErrLeaderboardHidden) {
		t.Errorf("join a hidden board: %v", err)
	}
	if err := db.SetLeaderboardHidden(ctx, 999, true); !errors.Is(err, ErrNoCohort) {
		t.Errorf("hide an unknown class: %v", err)
	}
}

// TestActivityCountsProgramRecords: a learner whose only work is on a
// program exercise (a hint revealed, the solution shown, no run) is a
// learner of the dashboard's "all learners" everywhere: ClassLearners
// lists them, so the progress rows and lesson counts beside it must count
// them too (activityExists).
func TestActivityCountsProgramRecords(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	hinted, shown, idle := NewLearnerID(), NewLearnerID(), NewLearnerID()
	for _, l := range []string{hinted, shown, idle} {
		if err := db.MarkOpened(ctx, l, "06-performance"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.RevealProgramHint(ctx, hinted, "06-performance", "write-rate", 4); err != nil {
		t.Fatal(err)
	}
	if err := db.RecordSolutionShown(ctx, shown, "06-performance", "write-rate"); err != nil {
		t.Fatal(err)
	}
	page, err := db.ClassLearners(ctx, 0, 0, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 2 {
		t.Fatalf("ClassLearners counts %d learners, want the 2 with program records", page.Total)
	}
	prog, err := db.ClassProgress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, p := range prog {
		got[p.Learner] = true
	}
	if !got[hinted] || !got[shown] || got[idle] || len(got) != 2 {
		t.Errorf("ClassProgress learners %v: want the hinted and the shown learner, not the idle one", got)
	}
	counts, err := db.ClassLessonCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := counts["06-performance"]; c.Opened != 2 {
		t.Errorf("lesson counts %+v: opened %d, want 2", c, c.Opened)
	}
	for _, l := range []string{hinted, shown} {
		if in, err := db.LearnerInScope(ctx, Scope{}, l); err != nil || !in {
			t.Errorf("LearnerInScope(%s) = %v %v", l, in, err)
		}
	}
}
