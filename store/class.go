package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// The class queries feed the instructor dashboard and its CSV exports. They
// read every learner's rows, so only instructor handlers may call them.

// LearnerSummary is one learner as the instructor dashboard lists them.
type LearnerSummary struct {
	ID          string
	DisplayName string
	Created     time.Time
	LastActive  time.Time // latest lesson open/complete, attempt or run; Created if none
	Opened      int       // lessons opened
	Completed   int       // lessons completed
	Attempts    int
	Correct     int // questions answered correctly at least once
	Runs        int
	TasksDone   int // lesson :::task steps verified done (all lessons)
	ProgramsOK  int // lesson :::program exercises whose check passed (all lessons)
}

// LearnerPage is one page of the class's learners, most recently active
// first, with the counts over all of them.
type LearnerPage struct {
	Learners []LearnerSummary
	Total    int // learners who have written anything
	Active   int // of those, active since the activeSince given
}

// ClassLearners lists the learners who have written anything, most
// recently active first: limit of them from offset (limit ≤ 0: all), and
// how many there are and how many were active since activeSince (both 0
// when offset is past the end). A class
// dashboard shows one page: with 100k learners (a flood of anonymous
// clients, say) the page stays small.
func (db *DB) ClassLearners(ctx context.Context, limit, offset int, activeSince time.Time) (LearnerPage, error) {
	return db.ClassLearnersIn(ctx, Scope{}, limit, offset, activeSince)
}

// ClassLearnersIn is ClassLearners for the learners in scope.
func (db *DB) ClassLearnersIn(ctx context.Context, sc Scope, limit, offset int, activeSince time.Time) (LearnerPage, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := db.r.QueryContext(ctx, `
		WITH p AS (SELECT learner, COUNT(*) AS opened, COUNT(CASE WHEN `+sc.during("learner", "completed_at")+` THEN completed_at END) AS completed,
		                  MAX(MAX(opened_at), COALESCE(MAX(completed_at), '')) AS last
		           FROM progress GROUP BY learner),
		     a AS (SELECT learner, COUNT(*) AS n, COUNT(DISTINCT CASE WHEN correct = 1 THEN question_id END) AS ok,
		                  MAX(created_at) AS last
		           FROM attempts WHERE `+sc.during("attempts.learner", "attempts.created_at")+` GROUP BY learner),
		     r AS (SELECT learner, COUNT(*) AS n, MAX(COALESCE(finished_at, started_at, created_at)) AS last
		           FROM runs WHERE `+sc.during("runs.learner", "runs.created_at")+` GROUP BY learner),
		     t AS (SELECT learner, COUNT(CASE WHEN `+sc.during("learner", "done_at")+` THEN done_at END) AS done, MAX(last_at) AS last
		           FROM task_progress GROUP BY learner),
		     g AS (SELECT learner, COUNT(CASE WHEN `+sc.during("learner", "passed_at")+` THEN passed_at END) AS ok, MAX(last_at) AS last
		           FROM program_progress GROUP BY learner),
		     s AS (SELECT l.id, l.display_name, l.created,
		                  MAX(l.created, COALESCE(p.last, ''), COALESCE(a.last, ''), COALESCE(r.last, ''), COALESCE(t.last, ''), COALESCE(g.last, '')) AS last,
		                  COALESCE(p.opened, 0) AS opened, COALESCE(p.completed, 0) AS completed,
		                  COALESCE(a.n, 0) AS attempts, COALESCE(a.ok, 0) AS correct, COALESCE(r.n, 0) AS runs,
		                  COALESCE(t.done, 0) AS tasks_done, COALESCE(g.ok, 0) AS programs_ok
		           FROM learners l
		           LEFT JOIN p ON p.learner = l.id
		           LEFT JOIN a ON a.learner = l.id
		           LEFT JOIN r ON r.learner = l.id
		           LEFT JOIN t ON t.learner = l.id
		           LEFT JOIN g ON g.learner = l.id
		           WHERE `+sc.cond(`(l.display_name != '' OR a.n > 0 OR r.n > 0 OR p.completed > 0 OR t.learner IS NOT NULL OR g.learner IS NOT NULL
		                             OR EXISTS (SELECT 1 FROM cohort_members m WHERE m.learner = l.id))`)+`)
		SELECT id, display_name, created, last, opened, completed, attempts, correct, runs, tasks_done, programs_ok,
		       COUNT(*) OVER (), SUM(last >= ?1) OVER ()
		FROM s ORDER BY last DESC, id LIMIT ?2 OFFSET ?3`, formatTime(activeSince), limit, max(0, offset))
	if err != nil {
		return LearnerPage{}, fmt.Errorf("store: class learners: %w", err)
	}
	defer rows.Close()
	var out LearnerPage
	for rows.Next() {
		var (
			s             LearnerSummary
			created, last string
		)
		if err := rows.Scan(&s.ID, &s.DisplayName, &created, &last, &s.Opened, &s.Completed, &s.Attempts, &s.Correct, &s.Runs, &s.TasksDone, &s.ProgramsOK,
			&out.Total, &out.Active); err != nil {
			return LearnerPage{}, fmt.Errorf("store: class learners: %w", err)
		}
		s.Created, _ = parseTime(created)
		s.LastActive, _ = parseTime(last)
		out.Learners = append(out.Learners, s)
	}
	if err := rows.Err(); err != nil {
		return LearnerPage{}, fmt.Errorf("store: class learners: %w", err)
	}
	return out, nil
}

// LessonCounts is how many learners opened and completed one lesson.
type LessonCounts struct {
	Lesson    string
	Opened    int
	Completed int
}

// ClassLessonCounts counts progress per lesson slug (lessons nobody opened
// are absent).
func (db *DB) ClassLessonCounts(ctx context.Context) (map[string]LessonCounts, error) {
	return db.ClassLessonCountsIn(ctx, Scope{})
}

// ClassLessonCountsIn is ClassLessonCounts for the learners in scope.
func (db *DB) ClassLessonCountsIn(ctx context.Context, sc Scope) (map[string]LessonCounts, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT lesson, COUNT(*), COUNT(CASE WHEN `+sc.during("progress.learner", "completed_at")+` THEN completed_at END) FROM progress
		WHERE `+sc.rowOf("progress.learner", activityExists)+` GROUP BY lesson`)
	if err != nil {
		return nil, fmt.Errorf("store: lesson counts: %w", err)
	}
	defer rows.Close()
	out := map[string]LessonCounts{}
	for rows.Next() {
		var c LessonCounts
		if err := rows.Scan(&c.Lesson, &c.Opened, &c.Completed); err != nil {
			return nil, fmt.Errorf("store: lesson counts: %w", err)
		}
		out[c.Lesson] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: lesson counts: %w", err)
	}
	return out, nil
}

// ExperimentRunCounts is how the runs of one experiment ended.
type ExperimentRunCounts struct {
	Experiment string
	Total      int
	ByStatus   map[string]int // run status (rdmalab.Status) → runs
	Learners   int
}

// ClassRunCounts counts runs per experiment and final status, experiments
// sorted by id.
func (db *DB) ClassRunCounts(ctx context.Context) ([]ExperimentRunCounts, error) {
	return db.ClassRunCountsIn(ctx, Scope{})
}

// ClassRunCountsIn is ClassRunCounts for the learners in scope.
func (db *DB) ClassRunCountsIn(ctx context.Context, sc Scope) ([]ExperimentRunCounts, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT experiment, status, COUNT(*),
		(SELECT COUNT(DISTINCT learner) FROM runs r2 WHERE r2.experiment = runs.experiment AND `+sc.rowOf("r2.learner", "1")+`
		 AND `+sc.during("r2.learner", "r2.created_at")+`)
		FROM runs WHERE `+sc.rowOf("runs.learner", "1")+` AND `+sc.during("runs.learner", "runs.created_at")+`
		GROUP BY experiment, status ORDER BY experiment, status`)
	if err != nil {
		return nil, fmt.Errorf("store: run counts: %w", err)
	}
	defer rows.Close()
	var out []ExperimentRunCounts
	for rows.Next() {
		var (
			exp, status  string
			n, nLearners int
		)
		if err := rows.Scan(&exp, &status, &n, &nLearners); err != nil {
			return nil, fmt.Errorf("store: run counts: %w", err)
		}
		if len(out) == 0 || out[len(out)-1].Experiment != exp {
			out = append(out, ExperimentRunCounts{Experiment: exp, ByStatus: map[string]int{}, Learners: nLearners})
		}
		e := &out[len(out)-1]
		e.Total += n
		e.ByStatus[status] += n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: run counts: %w", err)
	}
	return out, nil
}

// ProgressRow is one learner's progress on one lesson (CSV export).
type ProgressRow struct {
	Learner     string
	DisplayName string
	Lesson      string
	OpenedAt    time.Time
	CompletedAt time.Time // zero when not completed
}

// ClassProgress returns every progress row, by learner then lesson.
func (db *DB) ClassProgress(ctx context.Context) ([]ProgressRow, error) {
	return db.ClassProgressIn(ctx, Scope{})
}

// ClassProgressIn is ClassProgress for the learners in scope.
func (db *DB) ClassProgressIn(ctx context.Context, sc Scope) ([]ProgressRow, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT p.learner, l.display_name, p.lesson, p.opened_at,
		CASE WHEN `+sc.during("p.learner", "p.completed_at")+` THEN p.completed_at END
		FROM progress p JOIN learners l ON l.id = p.learner WHERE `+sc.cond(activityExists)+` ORDER BY p.learner, p.lesson`)
	if err != nil {
		return nil, fmt.Errorf("store: class progress: %w", err)
	}
	defer rows.Close()
	var out []ProgressRow
	for rows.Next() {
		var (
			p         ProgressRow
			opened    string
			completed sql.NullString
		)
		if err := rows.Scan(&p.Learner, &p.DisplayName, &p.Lesson, &opened, &completed); err != nil {
			return nil, fmt.Errorf("store: class progress: %w", err)
		}
		p.OpenedAt, _ = parseTime(opened)
		if completed.Valid {
			p.CompletedAt, _ = parseTime(completed.String)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: class progress: %w", err)
	}
	return out, nil
}

// ClassRuns returns every run's summary in creation order (CSV export).
func (db *DB) ClassRuns(ctx context.Context) ([]Run, error) {
	return db.ClassRunsIn(ctx, Scope{})
}

// ClassRunsIn is ClassRuns for the learners in scope.
func (db *DB) ClassRunsIn(ctx context.Context, sc Scope) ([]Run, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+runCols+` FROM runs WHERE `+sc.rowOf("runs.learner", "1")+`
		AND `+sc.during("runs.learner", "runs.created_at")+` ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("store: class runs: %w", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("store: class runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: class runs: %w", err)
	}
	return out, nil
}

// DisplayNames maps learner ids to their display names (only learners that
// set one).
func (db *DB) DisplayNames(ctx context.Context) (map[string]string, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id, display_name FROM learners WHERE display_name != ''`)
	if err != nil {
		return nil, fmt.Errorf("store: display names: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, fmt.Errorf("store: display names: %w", err)
		}
		out[id] = name
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: display names: %w", err)
	}
	return out, nil
}

// ClassAttemptsIn returns the attempts of the learners in scope in time
// order (dashboard statistics, attempts export, gradebook).
func (db *DB) ClassAttemptsIn(ctx context.Context, sc Scope) ([]Attempt, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+attemptCols+` FROM attempts WHERE `+sc.rowOf("attempts.learner", "1")+`
		AND `+sc.during("attempts.learner", "attempts.created_at")+` ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: class attempts: %w", err)
	}
	defer rows.Close()
	var out []Attempt
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, fmt.Errorf("store: class attempts: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: class attempts: %w", err)
	}
	return out, nil
}
