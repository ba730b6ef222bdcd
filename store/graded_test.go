package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestGradedLessons (issue 29, graded mode): a class's setting and time
// zone are stored and read back; the setting that applies to a learner is
// the one of the open class they joined last; answers and reveals come
// with their times, from a given moment on (the store's clock moved
// forward, no sleeping); impossible settings are refused.
func TestGradedLessons(t *testing.T) {
	ctx := context.Background()
	db := openInstructorsDB(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	a, _ := db.CreateCohort(ctx, "A", 0)
	b, _ := db.CreateCohort(ctx, "B", 0)
	if a.TimeZone != "UTC" {
		t.Errorf("a new class's zone %q, want UTC", a.TimeZone)
	}
	must(db.SetCohortTimeZone(ctx, a.ID, "Asia/Shanghai"))
	var ve *ValidationError
	if err := db.SetCohortTimeZone(ctx, a.ID, "Mars/Olympus"); !errors.As(err, &ve) {
		t.Errorf("unknown zone: %v", err)
	}
	if c, _ := db.Cohort(ctx, a.ID); c.TimeZone != "Asia/Shanghai" {
		t.Errorf("zone read back %q", c.TimeZone)
	}
	start := clock()
	opens, closes := start.Add(time.Hour), start.Add(3*time.Hour)
	g := GradedLesson{Cohort: a.ID, Lesson: "01-why-rdma", Opens: opens, Closes: closes, Limit: 2, Counts: "best"}
	must(db.SetGradedLesson(ctx, g, 0))
	if err := db.SetGradedLesson(ctx, GradedLesson{Cohort: a.ID, Lesson: "x", Opens: closes, Closes: opens, Limit: 2, Counts: "best"}, 0); !errors.As(err, &ve) {
		t.Errorf("closes before opens: %v", err)
	}
	if err := db.SetGradedLesson(ctx, GradedLesson{Cohort: a.ID, Lesson: "x", Opens: opens, Closes: closes, Limit: 2, Counts: "mean"}, 0); !errors.As(err, &ve) {
		t.Errorf("unknown counts: %v", err)
	}
	all, err := db.GradedLessons(ctx, a.ID)
	must(err)
	if got := all["01-why-rdma"]; len(all) != 1 || !got.Opens.Equal(opens) || !got.Closes.Equal(closes) || got.Limit != 2 || got.Counts != "best" {
		t.Errorf("read back %+v", all)
	}

	ann := NewLearnerID()
	if _, ok, _ := db.LearnerGradedLesson(ctx, ann, "01-why-rdma"); ok {
		t.Error("a learner of no class is graded")
	}
	_, err = db.AddAttempt(ctx, ann, "why/q1", []byte(`"a"`), true, false) // practice, before joining
	must(err)
	advanceClock(t, time.Minute)
	_, err = db.JoinCohort(ctx, ann, a.Code)
	must(err)
	lg, ok, err := db.LearnerGradedLesson(ctx, ann, "01-why-rdma")
	must(err)
	if !ok || lg.Cohort != a.ID || lg.TimeZone != "Asia/Shanghai" || lg.ClassName != "A" || lg.Limit != 2 {
		t.Fatalf("graded for ann: %+v %v", lg, ok)
	}
	if _, ok, _ := db.LearnerGradedLesson(ctx, ann, "02-lossless-roce"); ok {
		t.Error("another lesson is graded")
	}
	advanceClock(t, 90*time.Minute) // inside the window
	_, err = db.AddAttempt(ctx, ann, "why/q1", []byte(`"b"`), false, false)
	must(err)
	must(db.AddQuizEvent(ctx, ann, "why/q2", QuizReveal, ""))
	tries, err := db.LearnerAttempts(ctx, ann, []string{"why/q1", "why/q2"}, lg.JoinedAt)
	must(err)
	if len(tries) != 1 || tries[0].Correct || tries[0].CreatedAt.Before(opens) || !tries[0].CreatedAt.Before(closes) {
		t.Errorf("answers since joining: %+v", tries)
	}
	reveals, err := db.LearnerReveals(ctx, ann, []string{"why/q1", "why/q2"}, lg.JoinedAt)
	must(err)
	if len(reveals["why/q2"]) != 1 || reveals["why/q2"][0].Before(opens) {
		t.Errorf("reveals: %v", reveals)
	}
	class, err := db.ClassRevealsIn(ctx, Scope{Cohort: a.ID})
	must(err)
	if len(class) != 1 || !class[0].At.Equal(reveals["why/q2"][0]) {
		t.Errorf("class reveals %+v", class)
	}

	// Joining a second open class that grades the lesson too: the newer
	// membership decides; archiving it hands back to the first.
	advanceClock(t, time.Minute)
	_, err = db.JoinCohort(ctx, ann, b.Code)
	must(err)
	must(db.SetGradedLesson(ctx, GradedLesson{Cohort: b.ID, Lesson: "01-why-rdma", Opens: opens, Closes: closes, Limit: 5, Counts: "first"}, 0))
	if lg, _, _ := db.LearnerGradedLesson(ctx, ann, "01-why-rdma"); lg.Cohort != b.ID || lg.Limit != 5 {
		t.Errorf("two classes: %+v", lg)
	}
	must(db.ArchiveCohort(ctx, b.ID, true))
	if lg, _, _ := db.LearnerGradedLesson(ctx, ann, "01-why-rdma"); lg.Cohort != a.ID {
		t.Errorf("after archiving B: %+v", lg)
	}
	must(db.ClearGradedLesson(ctx, a.ID, "01-why-rdma"))
	if _, ok, _ := db.LearnerGradedLesson(ctx, ann, "01-why-rdma"); ok {
		t.Error("cleared, still graded")
	}
}
