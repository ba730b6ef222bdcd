package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// LatestResult returns the learner's most recent run of experiment that
// finished done with a result event (ErrRunNotFound when there is none).
// Lesson widgets use it to show a figure measured on this machine, e.g.
// the CPU budget calculator prefilled from the latest tcp-cost run.
func (db *DB) LatestResult(ctx context.Context, learner, experiment string) (Run, error) {
	r, err := scanRun(db.R.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs
		WHERE learner = ? AND experiment = ? AND status = 'done' AND result IS NOT NULL
		ORDER BY created_at DESC, id DESC LIMIT 1`, learner, experiment))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, ErrRunNotFound
	}
	if err != nil {
		return Run{}, fmt.Errorf("store: latest %s result of %s: %w", experiment, learner, err)
	}
	return r, nil
}
