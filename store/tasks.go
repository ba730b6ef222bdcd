package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// TaskProgress is one learner's record on one :::task of a lesson.
type TaskProgress struct {
	Lesson, Task string
	Checks       int       // times the learner pressed Check
	DoneAt       time.Time // zero until a check passed
}

// Done reports whether a check of the task passed.
func (p TaskProgress) Done() bool { return !p.DoneAt.IsZero() }

// RecordTaskCheck counts one check of lesson's task by learner; passed
// marks it done (the first pass time is kept).
func (db *DB) RecordTaskCheck(ctx context.Context, learner, lesson, task string, passed bool) error {
	if !ValidLearnerID(learner) {
		return fmt.Errorf("store: invalid learner id %q", learner)
	}
	defer db.tasks.invalidate(learner)
	ts := now()
	var done any
	if passed {
		done = ts
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: task check: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO learners (id, created) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, learner, ts); err != nil {
		return fmt.Errorf("store: task check: %w", err)
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO task_progress (learner, lesson, task, checks, last_at, done_at) VALUES (?1, ?2, ?3, 1, ?4, ?5)
		 ON CONFLICT (learner, lesson, task) DO UPDATE SET checks = checks + 1, last_at = excluded.last_at,
		   done_at = COALESCE(done_at, excluded.done_at)`, learner, lesson, task, ts, done); err != nil {
		return fmt.Errorf("store: task check: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: task check: %w", err)
	}
	return nil
}

// LessonTasks returns learner's records on lesson's tasks, by task id.
// Every view of a lesson with a task reads them: they come from the
// per-learner cache (learner_cache.go), which RecordTaskCheck invalidates.
// The map is shared with the cache: callers must not modify it.
func (db *DB) LessonTasks(ctx context.Context, learner, lesson string) (map[string]TaskProgress, error) {
	all, err := db.tasks.load(learner, func() (map[string]map[string]TaskProgress, error) {
		rows, err := db.r.QueryContext(ctx,
			`SELECT lesson, task, checks, done_at FROM task_progress WHERE learner = ?`, learner)
		if err != nil {
			return nil, err
		}
		out := map[string]map[string]TaskProgress{}
		err = scanTasks(rows, func(_ string, p TaskProgress) {
			if out[p.Lesson] == nil {
				out[p.Lesson] = map[string]TaskProgress{}
			}
			out[p.Lesson][p.Task] = p
		})
		return out, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: lesson tasks: %w", err)
	}
	if recs := all[lesson]; recs != nil {
		return recs, nil
	}
	return noTasks, nil
}

// noTasks is LessonTasks' answer for a lesson without records (shared).
var noTasks = map[string]TaskProgress{}

// TaskRow is one learner's record on one task (gradebook, export).
type TaskRow struct {
	Learner string
	TaskProgress
}

// ClassTasksIn returns every task record of the learners in scope, by
// learner, lesson and task.
func (db *DB) ClassTasksIn(ctx context.Context, sc Scope) ([]TaskRow, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT t.learner, t.lesson, t.task, t.checks,
		CASE WHEN `+sc.during("t.learner", "t.done_at")+` THEN t.done_at END FROM task_progress t
		WHERE `+sc.rowOf("t.learner", "1")+` ORDER BY t.learner, t.lesson, t.task`)
	if err != nil {
		return nil, fmt.Errorf("store: class tasks: %w", err)
	}
	var out []TaskRow
	err = scanTasks(rows, func(learner string, p TaskProgress) { out = append(out, TaskRow{learner, p}) })
	if err != nil {
		return nil, fmt.Errorf("store: class tasks: %w", err)
	}
	return out, nil
}

// scanTasks reads rows of (learner?, lesson, task, checks, done_at): with
// four columns the learner is "".
func scanTasks(rows *sql.Rows, each func(learner string, p TaskProgress)) error {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	for rows.Next() {
		var (
			learner string
			p       TaskProgress
			done    sql.NullString
		)
		dst := []any{&p.Lesson, &p.Task, &p.Checks, &done}
		if len(cols) == 5 {
			dst = append([]any{&learner}, dst...)
		}
		if err := rows.Scan(dst...); err != nil {
			return err
		}
		if done.Valid {
			if p.DoneAt, err = parseTime(done.String); err != nil {
				return fmt.Errorf("task %s/%s done_at: %w", p.Lesson, p.Task, err)
			}
		}
		each(learner, p)
	}
	return rows.Err()
}
