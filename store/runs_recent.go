package store

import (
	"context"
	"fmt"
	"time"
)

// RunDurations returns, per experiment, how long its last n runs that
// finished successfully took (start to finish), weighted like the runner's
// own moving average (each newer run counts a third): what the runner's
// wait estimate starts from after a restart. Runs of experiments that no
// longer exist are harmless (the runner never asks for them).
func (db *DB) RunDurations(ctx context.Context, n int) (map[string]time.Duration, error) {
	// The newest runs first, bounded: a busy lab's history is not read whole.
	rows, err := db.r.QueryContext(ctx, `SELECT experiment, started_at, finished_at FROM runs
		WHERE status = 'done' AND started_at IS NOT NULL AND finished_at IS NOT NULL
		ORDER BY finished_at DESC LIMIT 2000`)
	if err != nil {
		return nil, fmt.Errorf("store: run durations: %w", err)
	}
	defer rows.Close()
	newestFirst := map[string][]time.Duration{}
	for rows.Next() {
		var exp, a, b string
		if err := rows.Scan(&exp, &a, &b); err != nil {
			return nil, fmt.Errorf("store: run durations: %w", err)
		}
		t0, err0 := parseTime(a)
		t1, err1 := parseTime(b)
		if err0 != nil || err1 != nil || t1.Before(t0) || len(newestFirst[exp]) >= n {
			continue
		}
		newestFirst[exp] = append(newestFirst[exp], t1.Sub(t0))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: run durations: %w", err)
	}
	out := make(map[string]time.Duration, len(newestFirst))
	for exp, ds := range newestFirst {
		avg := ds[len(ds)-1] // the oldest, then played forward as the runner does
		for i := len(ds) - 2; i >= 0; i-- {
			avg = (avg*2 + ds[i]) / 3
		}
		out[exp] = avg
	}
	return out, nil
}
