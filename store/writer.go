package store

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Group commit. The learner-facing writes (quiz answers, lesson opens, run
// events) go through one loop that runs every write queued at that moment
// in one transaction, each inside its own savepoint, and answers each
// once the transaction has committed. SQLite's cost is per transaction
// far more than per row (here: a 2-row transaction 205 µs, 89 µs each
// when 16 share one), and under a class's load the writes had queued for
// the one writer connection: in the block profile of make load, lesson
// pages and quiz answers spent most of their waiting in BeginTx.
//
// A write is acknowledged only after its transaction committed. A write
// that fails is rolled back to its savepoint alone; the batch then stops
// there (SQLite may have rolled the whole transaction back on some errors,
// and a write run after that would commit on its own, unseen), commits
// what ran before it — whose writers learn whether that commit held — and
// the writes behind it start the next batch.

// maxBatch bounds the writes in one transaction, so one batch never holds
// the writer connection for long.
const maxBatch = 64

// errClosed answers writes queued when the database closes.
var errClosed = errors.New("store: the database is closed")

// writeJob is one write waiting for the loop.
type writeJob struct {
	ctx  context.Context
	fn   func(*sql.Tx) error
	done chan error // buffered: the loop never waits on a writer
	// queued is when it was handed to the loop (the write observer's latency).
	queued time.Time
}

// writer is the group-commit loop's state.
type writer struct {
	jobs chan *writeJob
	stop chan struct{}
	// mu orders queueing against closing: once closed is set no write is
	// queued, and the loop commits everything queued before it stops.
	mu     sync.RWMutex
	closed bool
	wg     sync.WaitGroup
	// batches counts committed transactions (tests).
	batches atomic.Int64
	// obs is told every write and commit (observe.go: the metrics).
	obs atomic.Pointer[WriteObserver]
}

// startWriter starts the loop; Close stops it.
func (db *DB) startWriter() {
	db.wr = &writer{jobs: make(chan *writeJob, maxBatch), stop: make(chan struct{})}
	db.wr.wg.Add(1)
	go db.writeLoop()
}

// stopWriter lets the loop commit what is queued, then ends it.
func (db *DB) stopWriter() {
	if db.wr == nil {
		return
	}
	db.wr.mu.Lock()
	already := db.wr.closed
	db.wr.closed = true
	db.wr.mu.Unlock()
	if !already {
		close(db.wr.stop)
	}
	db.wr.wg.Wait()
}

// write runs fn in a transaction shared with the other writes queued with
// it and returns once that transaction committed (or why not). fn must only
// use tx (and ctx for its statements); it must not wait on another write.
func (db *DB) write(ctx context.Context, fn func(*sql.Tx) error) error {
	if db.wr == nil { // before the loop starts (migrations) or after a failed open
		return db.txWrite(ctx, fn)
	}
	j := &writeJob{ctx: ctx, fn: fn, done: make(chan error, 1), queued: time.Now()}
	db.wr.mu.RLock()
	if db.wr.closed {
		db.wr.mu.RUnlock()
		return errClosed
	}
	select {
	case db.wr.jobs <- j:
	case <-ctx.Done():
		db.wr.mu.RUnlock()
		return ctx.Err()
	}
	db.wr.mu.RUnlock()
	// Queued: wait for the answer whatever ctx does, so a write that
	// committed is never reported as failed.
	err := <-j.done
	if o := db.wr.observer(); o != nil {
		o.Wrote(time.Since(j.queued))
	}
	return err
}

// txWrite is fn in a transaction of its own.
func (db *DB) txWrite(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func (db *DB) writeLoop() {
	defer db.wr.wg.Done()
	var pending []*writeJob
	stopping := false
	for {
		if len(pending) == 0 {
			if stopping {
				return
			}
			select {
			case j := <-db.wr.jobs:
				pending = append(pending, j)
			case <-db.wr.stop:
				// Nothing is queued after closed was set: commit what is
				// in the channel, then end.
				stopping = true
			}
		}
		// Take what else is waiting now; never wait for more.
	gather:
		for len(pending) < maxBatch {
			select {
			case j := <-db.wr.jobs:
				pending = append(pending, j)
			default:
				break gather
			}
		}
		if len(pending) == 0 {
			continue
		}
		n := db.commitBatch(pending)
		pending = append(pending[:0], pending[n:]...)
	}
}

// commitBatch runs batch's writes in one transaction until one fails, and
// returns how many it took (answered); the rest go to the next batch.
func (db *DB) commitBatch(batch []*writeJob) int {
	begin := time.Now()
	tx, err := db.w.BeginTx(context.Background(), nil)
	if err != nil {
		for _, j := range batch {
			j.done <- err
		}
		return len(batch)
	}
	var ran []*writeJob
	taken := len(batch)
	for i, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.done <- err // gave up while queued: not run
			continue
		}
		if _, err := tx.Exec(`SAVEPOINT write`); err != nil {
			j.done <- err
			taken = i + 1
			break
		}
		if err := j.fn(tx); err != nil {
			_, _ = tx.Exec(`ROLLBACK TO write`)
			_, _ = tx.Exec(`RELEASE write`)
			j.done <- err
			taken = i + 1
			break
		}
		if _, err := tx.Exec(`RELEASE write`); err != nil {
			j.done <- err
			taken = i + 1
			break
		}
		ran = append(ran, j)
	}
	err = tx.Commit()
	db.wr.batches.Add(1)
	if o := db.wr.observer(); o != nil {
		o.Committed(len(ran), time.Since(begin))
	}
	if err != nil {
		_ = tx.Rollback()
	}
	for _, j := range ran {
		j.done <- err
	}
	return taken
}
