package store

import (
	"context"
	"testing"
)

func TestMoveLessonProgress(t *testing.T) {
	ctx := context.Background()
	db := openInstructorsDB(t)
	ann, bob := NewLearnerID(), NewLearnerID()
	for _, err := range []error{
		db.MarkCompleted(ctx, ann, "02-old"),
		db.MarkOpened(ctx, bob, "02-old"),
		db.MarkCompleted(ctx, bob, "02-new"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.LearnerProgress(ctx, ann); err != nil { // fill the cache
		t.Fatal(err)
	}
	if _, err := db.MoveLessonProgress(ctx, "02-old", "02-new"); err != nil {
		t.Fatal(err)
	}
	pa, _ := db.LearnerProgress(ctx, ann)
	pb, _ := db.LearnerProgress(ctx, bob)
	if _, old := pa["02-old"]; old || !pa["02-new"].Completed() {
		t.Errorf("ann: %+v", pa)
	}
	if _, old := pb["02-old"]; old || !pb["02-new"].Completed() || pb["02-new"].OpenedAt.After(pb["02-new"].CompletedAt) {
		t.Errorf("bob: %+v", pb)
	}
}
