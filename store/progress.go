package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Progress is one learner's state in one lesson.
type Progress struct {
	Lesson      string
	OpenedAt    time.Time
	CompletedAt time.Time // zero until the learner marks the lesson complete
}

// Completed reports whether the lesson was marked complete.
func (p Progress) Completed() bool { return !p.CompletedAt.IsZero() }

// MarkOpened records that the learner opened the lesson (the first time
// only). It is called on every lesson page view, so when the cache already
// knows the lesson was opened it returns without touching the database.
func (db *DB) MarkOpened(ctx context.Context, learner, lesson string) error {
	if p, ok := db.progress.get(learner); ok {
		if _, opened := p[lesson]; opened {
			return nil
		}
	}
	err := db.writeProgress(ctx, learner, lesson,
		`INSERT INTO progress (learner, lesson, opened_at) VALUES (?, ?, ?)
		 ON CONFLICT (learner, lesson) DO NOTHING`)
	if err != nil {
		return fmt.Errorf("store: mark %s opened: %w", lesson, err)
	}
	return nil
}

// MarkCompleted records that the learner completed the lesson. Marking again
// keeps the first completion time.
func (db *DB) MarkCompleted(ctx context.Context, learner, lesson string) error {
	err := db.writeProgress(ctx, learner, lesson,
		`INSERT INTO progress (learner, lesson, opened_at, completed_at) VALUES (?1, ?2, ?3, ?3)
		 ON CONFLICT (learner, lesson) DO UPDATE SET completed_at = COALESCE(completed_at, excluded.completed_at)`)
	if err != nil {
		return fmt.Errorf("store: mark %s complete: %w", lesson, err)
	}
	return nil
}

// writeProgress runs one progress upsert (args: learner, lesson, now) after
// making sure the learner row exists, in one transaction.
func (db *DB) writeProgress(ctx context.Context, learner, lesson, query string) error {
	if !ValidLearnerID(learner) {
		return fmt.Errorf("invalid learner id %q", learner)
	}
	defer db.progress.invalidate(learner)
	ts := now()
	return db.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO learners (id, created) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, learner, ts); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, query, learner, lesson, ts)
		return err
	})
}

// LearnerProgress returns the learner's progress by lesson slug. The map is
// shared with the cache: callers must not modify it.
func (db *DB) LearnerProgress(ctx context.Context, learner string) (map[string]Progress, error) {
	return db.progress.load(learner, func() (map[string]Progress, error) {
		return db.loadProgress(ctx, learner)
	})
}

// loadProgress reads the learner's progress from the database.
func (db *DB) loadProgress(ctx context.Context, learner string) (map[string]Progress, error) {
	rows, err := db.r.QueryContext(ctx,
		`SELECT lesson, opened_at, completed_at FROM progress WHERE learner = ?`, learner)
	if err != nil {
		return nil, fmt.Errorf("store: progress: %w", err)
	}
	defer rows.Close()
	p := map[string]Progress{}
	for rows.Next() {
		var (
			lesson, opened string
			completed      sql.NullString
		)
		if err := rows.Scan(&lesson, &opened, &completed); err != nil {
			return nil, fmt.Errorf("store: progress: %w", err)
		}
		pr := Progress{Lesson: lesson}
		if pr.OpenedAt, err = parseTime(opened); err != nil {
			return nil, fmt.Errorf("store: progress %s opened_at: %w", lesson, err)
		}
		if completed.Valid {
			if pr.CompletedAt, err = parseTime(completed.String); err != nil {
				return nil, fmt.Errorf("store: progress %s completed_at: %w", lesson, err)
			}
		}
		p[lesson] = pr
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: progress: %w", err)
	}
	return p, nil
}
