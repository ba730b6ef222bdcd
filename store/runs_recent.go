package store

import (
	"context"
	"fmt"
	"time"
)

// RecentRunDurations returns how long the last n runs that finished
// successfully took (start to finish), newest first: what a queued
// learner's wait estimate learns from after a restart.
func (db *DB) RecentRunDurations(ctx context.Context, n int) ([]time.Duration, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT started_at, finished_at FROM runs
		WHERE status = 'done' AND started_at IS NOT NULL AND finished_at IS NOT NULL
		ORDER BY finished_at DESC LIMIT ?`, n)
	if err != nil {
		return nil, fmt.Errorf("store: recent run durations: %w", err)
	}
	defer rows.Close()
	var out []time.Duration
	for rows.Next() {
		var a, b string
		if err := rows.Scan(&a, &b); err != nil {
			return nil, fmt.Errorf("store: recent run durations: %w", err)
		}
		t0, err0 := parseTime(a)
		t1, err1 := parseTime(b)
		if err0 != nil || err1 != nil || t1.Before(t0) {
			continue
		}
		out = append(out, t1.Sub(t0))
	}
	return out, rows.Err()
}
