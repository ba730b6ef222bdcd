package store

import (
	"context"
	"testing"
	"time"
)

// TestTaskProgress: checks are counted, the first pass is kept, and the
// class queries see the learner (who did nothing else).
func TestTaskProgress(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	learner := NewLearnerID()
	if err := db.RecordTaskCheck(ctx, learner, "01-why-rdma", "memlock", false); err != nil {
		t.Fatal(err)
	}
	got, err := db.LessonTasks(ctx, learner, "01-why-rdma")
	if err != nil {
		t.Fatal(err)
	}
	if p := got["memlock"]; p.Checks != 1 || p.Done() {
		t.Fatalf("after a failed check: %+v", p)
	}
	for range 2 {
		if err := db.RecordTaskCheck(ctx, learner, "01-why-rdma", "memlock", true); err != nil {
			t.Fatal(err)
		}
		advanceClock(t, 2*time.Millisecond)
	}
	if err := db.RecordTaskCheck(ctx, learner, "01-why-rdma", "memlock", false); err != nil {
		t.Fatal(err)
	}
	got, _ = db.LessonTasks(ctx, learner, "01-why-rdma")
	first := got["memlock"].DoneAt
	if p := got["memlock"]; p.Checks != 4 || !p.Done() {
		t.Fatalf("after passes and a later failure: %+v", p)
	}
	if other, _ := db.LessonTasks(ctx, learner, "02-lossless-roce"); len(other) != 0 {
		t.Errorf("another lesson's tasks: %+v", other)
	}
	if other, _ := db.LessonTasks(ctx, NewLearnerID(), "01-why-rdma"); len(other) != 0 {
		t.Errorf("another learner's tasks: %+v", other)
	}
	rows, err := db.ClassTasksIn(ctx, Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Learner != learner || !rows[0].DoneAt.Equal(first) {
		t.Fatalf("class tasks %+v", rows)
	}
	page, err := db.ClassLearners(ctx, 0, 0, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Learners) != 1 || page.Learners[0].ID != learner || page.Learners[0].TasksDone != 1 {
		t.Fatalf("class learners %+v", page.Learners)
	}
}
