package store

import (
	"context"
	"testing"
	"time"
)

// TestTerms (issue 29 item 6): a learner of last term's class, archived,
// joins this term's class: this term counts only what they did since
// joining it, last term keeps its own figures (nothing after the archive
// counts there), and the learner stays in "all learners".
func TestTerms(t *testing.T) {
	ctx := context.Background()
	db := openInstructorsDB(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	spring, _ := db.CreateCohort(ctx, "2026 spring", 0)
	ann := NewLearnerID()
	_, err := db.JoinCohort(ctx, ann, spring.Code)
	must(err)
	advanceClock(t, time.Second)
	_, err = db.AddAttempt(ctx, ann, "why/q1", []byte(`"a"`), true, false)
	must(err)
	must(db.MarkCompleted(ctx, ann, "01-why-rdma"))
	must(db.RecordTaskCheck(ctx, ann, "01-why-rdma", "t1", true))
	advanceClock(t, 2*time.Second)
	must(db.ArchiveCohort(ctx, spring.ID, true))

	advanceClock(t, 3*time.Second)
	autumn, _ := db.CreateCohort(ctx, "2026 autumn", 0)
	_, err = db.JoinCohort(ctx, ann, autumn.Code)
	must(err)
	advanceClock(t, 4*time.Second)
	_, err = db.AddAttempt(ctx, ann, "why/q2", []byte(`"b"`), false, false)
	must(err)

	count := func(sc Scope) (attempts int, completed int, tasks int) {
		t.Helper()
		a, err := db.ClassAttemptsIn(ctx, sc)
		must(err)
		p, err := db.ClassProgressIn(ctx, sc)
		must(err)
		for _, r := range p {
			if !r.CompletedAt.IsZero() {
				completed++
			}
		}
		tk, err := db.ClassTasksIn(ctx, sc)
		must(err)
		for _, r := range tk {
			if !r.DoneAt.IsZero() {
				tasks++
			}
		}
		return len(a), completed, tasks
	}
	if a, c, tk := count(Scope{Cohort: autumn.ID}); a != 1 || c != 0 || tk != 0 {
		t.Errorf("this term: %d attempts, %d completed, %d tasks; want 1, 0, 0 (last term's work came along)", a, c, tk)
	}
	if a, c, tk := count(Scope{Cohort: spring.ID}); a != 1 || c != 1 || tk != 1 {
		t.Errorf("last term: %d attempts, %d completed, %d tasks; want 1, 1, 1", a, c, tk)
	}
	page, err := db.ClassLearnersIn(ctx, Scope{Cohort: autumn.ID}, 0, 0, time.Time{})
	must(err)
	if len(page.Learners) != 1 || page.Learners[0].Attempts != 1 || page.Learners[0].Completed != 0 || page.Learners[0].Correct != 0 {
		t.Errorf("this term's learner list: %+v", page.Learners)
	}
	all, err := db.ClassLearners(ctx, 0, 0, time.Time{})
	must(err)
	if all.Total != 1 || all.Learners[0].Attempts != 2 {
		t.Errorf("all learners: %+v (the learner vanished or lost work)", all)
	}
	// A learner only in the archived class still leaves "all learners".
	bob := NewLearnerID()
	summer, _ := db.CreateCohort(ctx, "summer", 0)
	_, err = db.JoinCohort(ctx, bob, summer.Code)
	must(err)
	must(db.ArchiveCohort(ctx, summer.ID, true))
	if all, _ := db.ClassLearners(ctx, 0, 0, time.Time{}); all.Total != 1 {
		t.Errorf("all learners counts %d, want 1 (bob's only class is archived)", all.Total)
	}
}
