package store

import (
	"context"
	"fmt"
	"time"
)

// WriteObserver is told how the group-commit writer (writer.go) does, for
// the lab's metrics (internal/metrics implements it; the store does not
// import it). Its methods run on the writer's goroutine or a writing
// request's: they must be quick.
type WriteObserver interface {
	// Wrote: one write, from queued for the writer to its transaction
	// committed (or failed).
	Wrote(took time.Duration)
	// Committed: one transaction of writes writes, begin to commit.
	Committed(writes int, took time.Duration)
}

// ObserveWrites makes o the database's write observer (nil: none).
func (db *DB) ObserveWrites(o WriteObserver) {
	if db.wr == nil {
		return
	}
	if o == nil {
		db.wr.obs.Store(nil)
		return
	}
	db.wr.obs.Store(&o)
}

// observer is the write observer, nil when none.
func (w *writer) observer() WriteObserver {
	if p := w.obs.Load(); p != nil {
		return *p
	}
	return nil
}

// LTIOutboxDepth is how many LTI scores wait for delivery and how many of
// them have failed at least once (the metrics' outbox gauges).
func (db *DB) LTIOutboxDepth(ctx context.Context) (pending, failing int, err error) {
	err = db.r.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(attempts > 0), 0) FROM lti_outbox`).Scan(&pending, &failing)
	if err != nil {
		return 0, 0, fmt.Errorf("store: outbox depth: %w", err)
	}
	return pending, failing, nil
}
