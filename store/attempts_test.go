package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// openTest opens a fresh database in a temp dir (shared by the store tests).
func openTest(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "lab.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestAttempts(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	ann, bob := NewLearnerID(), NewLearnerID()
	add := func(learner, q, answer string, correct bool) Attempt {
		t.Helper()
		a, err := db.AddAttempt(ctx, learner, q, json.RawMessage(answer), correct, false)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a1 := add(ann, "l/one", `"b"`, false)
	a2 := add(ann, "l/one", `"a"`, true)
	a3 := add(ann, "l/one", `"c"`, false) // a retry after a right answer: latest is wrong, best stays
	add(bob, "l/one", `"a"`, true)
	add(ann, "l/two", `["x","y"]`, false)
	add(ann, "other/q", `12.5`, true)

	if a1.ID == 0 || a2.ID <= a1.ID || a1.CreatedAt.IsZero() || a1.Learner != ann {
		t.Fatalf("attempts = %+v %+v", a1, a2)
	}
	got, err := db.Attempt(ctx, ann, a2.ID)
	if err != nil || string(got.Answer) != `"a"` || !got.Correct || got.QuestionID != "l/one" || !got.CreatedAt.Equal(a2.CreatedAt) {
		t.Fatalf("Attempt = %+v, %v", got, err)
	}
	if _, err := db.Attempt(ctx, bob, a2.ID); !errors.Is(err, ErrAttemptNotFound) {
		t.Errorf("another learner's attempt: err = %v", err)
	}
	if _, err := db.Attempt(ctx, ann, 999); !errors.Is(err, ErrAttemptNotFound) {
		t.Errorf("unknown attempt: err = %v", err)
	}

	st, err := db.LearnerQuestionStatus(ctx, ann, []string{"l/one", "l/two", "l/three"})
	if err != nil {
		t.Fatal(err)
	}
	one, two := st["l/one"], st["l/two"]
	if len(st) != 2 || one.Attempts != 3 || one.Latest.ID != a3.ID || one.Best == nil || one.Best.ID != a2.ID {
		t.Errorf("l/one status = %+v (best %+v)", one, one.Best)
	}
	if two.Attempts != 1 || two.Best != nil || string(two.Latest.Answer) != `["x","y"]` {
		t.Errorf("l/two status = %+v", two)
	}
	if st, _ := db.LearnerQuestionStatus(ctx, ann, nil); len(st) != 0 {
		t.Errorf("no questions: %v", st)
	}

	correct, err := db.CorrectQuestions(ctx, ann)
	if err != nil || fmt.Sprint(correct) != "map[l/one:true other/q:true]" {
		t.Errorf("CorrectQuestions = %v, %v", correct, err)
	}

	all, err := db.AllAttempts(ctx)
	if err != nil || len(all) != 6 {
		t.Fatalf("AllAttempts = %d, %v", len(all), err)
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID <= all[i-1].ID {
			t.Errorf("not in time order: %d after %d", all[i].ID, all[i-1].ID)
		}
	}
	some, err := db.AllAttempts(ctx, "l/one")
	if err != nil || len(some) != 4 || some[3].Learner != bob {
		t.Errorf("AllAttempts(l/one) = %+v, %v", some, err)
	}
}

func TestAddAttemptRejects(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	if _, err := db.AddAttempt(ctx, "not-a-learner", "q", json.RawMessage(`"a"`), true, false); err == nil {
		t.Error("invalid learner id accepted")
	}
	if _, err := db.AddAttempt(ctx, NewLearnerID(), "q", json.RawMessage(`{nope`), true, false); err == nil {
		t.Error("invalid JSON accepted")
	}
	if all, _ := db.AllAttempts(ctx); len(all) != 0 {
		t.Errorf("rejected attempts stored: %v", all)
	}
}

// Concurrent submissions (two tabs, a double click) are all kept.
func TestAddAttemptConcurrent(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	learner := NewLearnerID()
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := db.AddAttempt(ctx, learner, "l/one", json.RawMessage(fmt.Sprint(i)), i%2 == 0, false)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	st, err := db.LearnerQuestionStatus(ctx, learner, []string{"l/one"})
	if err != nil || st["l/one"].Attempts != n {
		t.Errorf("stored %d attempts (err %v), want %d", st["l/one"].Attempts, err, n)
	}
}

// Deleting a learner removes their attempts (foreign key with cascade).
func TestAttemptsFollowLearner(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	learner := NewLearnerID()
	if _, err := db.AddAttempt(ctx, learner, "q", json.RawMessage(`"a"`), true, false); err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.ExecContext(ctx, `DELETE FROM learners WHERE id = ?`, learner); err != nil {
		t.Fatal(err)
	}
	if all, _ := db.AllAttempts(ctx); len(all) != 0 {
		t.Errorf("attempts of a deleted learner remain: %v", all)
	}
}
