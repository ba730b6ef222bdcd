package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/testwait"
)

// hold queues a write that blocks the loop until release is closed, and
// returns once the loop is inside it.
func hold(t *testing.T, db *DB) (release chan struct{}, done chan error) {
	t.Helper()
	release, in := make(chan struct{}), make(chan struct{})
	done = make(chan error, 1)
	go func() {
		done <- db.write(context.Background(), func(*sql.Tx) error {
			close(in)
			<-release
			return nil
		})
	}()
	<-in
	return release, done
}

// Writes queued while one is in hand commit together, in one transaction,
// and each is acknowledged with its own result.
func TestGroupCommit(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	learner := NewLearnerID()
	release, first := hold(t, db)
	before := db.wr.batches.Load()
	const n = 20
	var wg sync.WaitGroup
	ids := make(chan int64, n)
	for range n {
		wg.Go(func() {
			a, err := db.AddAttempt(ctx, learner, "q1", []byte(`"a"`), true, false)
			if err != nil {
				t.Error(err)
				return
			}
			ids <- a.ID
		})
	}
	if !testwait.For(10*time.Second, 5*time.Millisecond, func() bool { return len(db.wr.jobs) == n }) {
		t.Fatalf("%d of %d writes queued", len(db.wr.jobs), n)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(ids)
	seen := map[int64]bool{}
	for id := range ids {
		if seen[id] {
			t.Errorf("attempt id %d given twice", id)
		}
		seen[id] = true
		if _, err := db.Attempt(ctx, learner, id); err != nil {
			t.Errorf("acknowledged attempt %d: %v", id, err)
		}
	}
	if len(seen) != n {
		t.Fatalf("%d of %d acknowledged", len(seen), n)
	}
	if got := db.wr.batches.Load() - before; got != 2 {
		t.Errorf("%d transactions for the held write and %d queued ones, want 2", got, n)
	}
}

// A write that fails is rolled back alone: the one before it in the batch
// commits, the one after it runs in the next batch, and each writer hears
// its own result.
func TestGroupCommitFailureAlone(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	learner := NewLearnerID()
	release, first := hold(t, db)
	results := make([]chan error, 3)
	queue := func(i int, fn func(tx *sql.Tx) error) {
		results[i] = make(chan error, 1)
		go func() { results[i] <- db.write(ctx, fn) }()
		if !testwait.For(10*time.Second, 5*time.Millisecond, func() bool { return len(db.wr.jobs) == i+1 }) {
			t.Fatalf("write %d not queued", i)
		}
	}
	insert := func(i int) func(tx *sql.Tx) error {
		return func(tx *sql.Tx) error {
			if _, err := tx.Exec(`INSERT INTO learners (id, created) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, learner, now()); err != nil {
				return err
			}
			res, err := tx.Exec(`INSERT INTO attempts (learner, question_id, answer, correct, seen, created_at) VALUES (?, 'q', ?, 0, 0, ?)`,
				learner, fmt.Sprintf(`"w%d"`, i), now())
			if err != nil {
				return err
			}
			_, err = res.LastInsertId()
			return err
		}
	}
	boom := errors.New("boom")
	queue(0, insert(0))
	queue(1, func(tx *sql.Tx) error {
		if err := insert(1)(tx); err != nil {
			return err
		}
		return boom // after writing: its row must go
	})
	queue(2, insert(2))
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-results[0]; err != nil {
		t.Errorf("the write before the failure: %v", err)
	}
	if err := <-results[1]; !errors.Is(err, boom) {
		t.Errorf("the failing write got %v", err)
	}
	if err := <-results[2]; err != nil {
		t.Errorf("the write after the failure: %v", err)
	}
	// Row ids may be reused after a rollback: look for each write's answer.
	for i, want := range []bool{true, false, true} {
		var n int
		if err := db.r.db.QueryRow(`SELECT COUNT(*) FROM attempts WHERE learner = ? AND answer = ?`, learner, fmt.Sprintf(`"w%d"`, i)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if got := n == 1; got != want || n > 1 {
			t.Errorf("write %d stored %d times, want stored %v", i, n, want)
		}
	}
}

// A write whose context ends while it waits is not run; Close commits
// what is queued, and a write after Close is refused.
func TestGroupCommitCancelAndClose(t *testing.T) {
	db := openTest(t)
	learner := NewLearnerID()
	release, first := hold(t, db)
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, err := db.AddAttempt(ctx, learner, "q", []byte(`"c"`), true, false)
		gone <- err
	}()
	kept := make(chan error, 1)
	var keptID int64
	go func() {
		a, err := db.AddAttempt(context.Background(), learner, "q", []byte(`"k"`), true, false)
		keptID = a.ID
		kept <- err
	}()
	if !testwait.For(10*time.Second, 5*time.Millisecond, func() bool { return len(db.wr.jobs) == 2 }) {
		t.Fatal("writes not queued")
	}
	cancel()
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled write: %v", err)
	}
	if err := <-kept; err != nil {
		t.Errorf("the write queued before Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := db.write(context.Background(), func(*sql.Tx) error { return nil }); !errors.Is(err, errClosed) {
		t.Errorf("a write after Close: %v", err)
	}
	re, err := Open(db.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	if _, err := re.Attempt(context.Background(), learner, keptID); err != nil {
		t.Errorf("the write queued before Close is not stored: %v", err)
	}
}
