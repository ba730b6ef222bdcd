package store

import (
	"context"
	"fmt"
)

// LatestResult returns the learner's most recent run of experiment that
// finished done with a result event (ErrRunNotFound when there is none).
// Lesson widgets use it to show a figure measured on this machine, e.g.
// the CPU budget calculator prefilled from the latest tcp-cost run. The
// run's Result is shared with the cache (see LatestResults): callers must
// not modify it.
func (db *DB) LatestResult(ctx context.Context, learner, experiment string) (Run, error) {
	all, err := db.LatestResults(ctx, learner)
	if err != nil {
		return Run{}, err
	}
	r, ok := all[experiment]
	if !ok {
		return Run{}, ErrRunNotFound
	}
	return r, nil
}

// LatestResults returns, for each experiment, the learner's most recent
// run that finished done with a result event, from one query. Lesson pages
// read it on every view, so it is cached per learner until a run finishes
// or records a result (AppendRunEvent). The map is shared with the cache:
// callers must not modify it.
func (db *DB) LatestResults(ctx context.Context, learner string) (map[string]Run, error) {
	return db.results.load(learner, func() (map[string]Run, error) {
		rows, err := db.r.QueryContext(ctx, `SELECT `+runCols+` FROM (
			SELECT *, ROW_NUMBER() OVER (PARTITION BY experiment ORDER BY created_at DESC, id DESC) AS n
			FROM runs WHERE learner = ? AND status = 'done' AND result IS NOT NULL) WHERE n = 1`, learner)
		if err != nil {
			return nil, fmt.Errorf("store: latest results of %s: %w", learner, err)
		}
		defer rows.Close()
		out := map[string]Run{}
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				return nil, fmt.Errorf("store: latest results of %s: %w", learner, err)
			}
			out[r.Experiment] = r
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("store: latest results of %s: %w", learner, err)
		}
		return out, nil
	})
}
