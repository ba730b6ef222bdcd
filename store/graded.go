package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Graded mode (issue 29): a class makes a lesson graded work with open and
// close dates, an attempt limit and which answer counts. The rules live in
// package quiz (quiz.Graded); the store keeps the settings and the class's
// time zone, and gives the times of a learner's answers and reveals.

// MaxTimeZone bounds a time zone name (IANA names are shorter).
const MaxTimeZone = 64

// GradedLesson is one class's graded setting of one lesson.
type GradedLesson struct {
	Cohort        int64
	Lesson        string
	Opens, Closes time.Time
	Limit         int
	Counts        string // first, last or best
	SetAt         time.Time
}

// CheckTimeZone reports whether zone is a time zone name this server
// knows (time.LoadLocation: the system's zoneinfo, else the copy built in).
func CheckTimeZone(zone string) error {
	if zone == "" || len(zone) > MaxTimeZone || strings.ContainsAny(zone, " \\") {
		return &ValidationError{"the time zone must be a name such as Asia/Shanghai or UTC"}
	}
	if _, err := time.LoadLocation(zone); err != nil {
		return &ValidationError{fmt.Sprintf("unknown time zone %q (a name such as Asia/Shanghai or UTC)", zone)}
	}
	return nil
}

// SetCohortTimeZone sets the zone a class's dates are entered and shown in.
func (db *DB) SetCohortTimeZone(ctx context.Context, cohort int64, zone string) error {
	if err := CheckTimeZone(zone); err != nil {
		return err
	}
	res, err := db.w.ExecContext(ctx, `UPDATE cohorts SET time_zone = ? WHERE id = ?`, zone, cohort)
	if err != nil {
		return fmt.Errorf("store: set time zone: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNoCohort
	}
	return nil
}

// SetGradedLesson makes g.Lesson graded in class g.Cohort (replacing an
// earlier setting). by is the instructor (0: none). Checking the rules of
// the setting is quiz.Graded.Check's; the table refuses the worst too.
func (db *DB) SetGradedLesson(ctx context.Context, g GradedLesson, by int64) error {
	if g.Lesson == "" || len(g.Lesson) > 200 {
		return &ValidationError{"no such lesson"}
	}
	var byArg any
	if by > 0 {
		byArg = by
	}
	_, err := db.w.ExecContext(ctx, `INSERT INTO graded_lessons
		(cohort_id, lesson, opens_at, closes_at, attempt_limit, counts, set_by, set_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (cohort_id, lesson) DO UPDATE SET opens_at = excluded.opens_at,
		closes_at = excluded.closes_at, attempt_limit = excluded.attempt_limit,
		counts = excluded.counts, set_by = excluded.set_by, set_at = excluded.set_at,
		close_sent_at = CASE WHEN closes_at = excluded.closes_at THEN close_sent_at END`,
		g.Cohort, g.Lesson, formatTime(g.Opens), formatTime(g.Closes), g.Limit, g.Counts, byArg, now())
	if err != nil {
		if isConstraint(err) {
			return &ValidationError{"the graded setting is not valid (opens before closes, 1–20 attempts, first/last/best)"}
		}
		return fmt.Errorf("store: set graded lesson: %w", err)
	}
	db.gradedMu.Lock()
	if db.gradedSlugs != nil {
		db.gradedSlugs[g.Lesson] = true
	}
	db.gradedMu.Unlock()
	return nil
}

// ClearGradedLesson makes the lesson practice again in the class. Answers
// already given stay; the gradebook counts them as practice.
func (db *DB) ClearGradedLesson(ctx context.Context, cohort int64, lesson string) error {
	if _, err := db.w.ExecContext(ctx, `DELETE FROM graded_lessons WHERE cohort_id = ? AND lesson = ?`, cohort, lesson); err != nil {
		return fmt.Errorf("store: clear graded lesson: %w", err)
	}
	db.gradedMu.Lock()
	db.gradedSlugs = nil // reloaded on next use: another class may still grade it
	db.gradedMu.Unlock()
	return nil
}

const gradedCols = `g.cohort_id, g.lesson, g.opens_at, g.closes_at, g.attempt_limit, g.counts, g.set_at`

func scanGraded(sc scanner, extra ...any) (GradedLesson, error) {
	var (
		g                  GradedLesson
		opens, closes, set string
	)
	if err := sc.Scan(append([]any{&g.Cohort, &g.Lesson, &opens, &closes, &g.Limit, &g.Counts, &set}, extra...)...); err != nil {
		return GradedLesson{}, err
	}
	g.Opens, _ = parseTime(opens)
	g.Closes, _ = parseTime(closes)
	g.SetAt, _ = parseTime(set)
	return g, nil
}

// GradedLessons returns a class's graded settings by lesson slug.
func (db *DB) GradedLessons(ctx context.Context, cohort int64) (map[string]GradedLesson, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+gradedCols+` FROM graded_lessons g WHERE g.cohort_id = ?`, cohort)
	if err != nil {
		return nil, fmt.Errorf("store: graded lessons: %w", err)
	}
	defer rows.Close()
	out := map[string]GradedLesson{}
	for rows.Next() {
		g, err := scanGraded(rows)
		if err != nil {
			return nil, fmt.Errorf("store: graded lessons: %w", err)
		}
		out[g.Lesson] = g
	}
	return out, rows.Err()
}

// LearnerGraded is the graded setting that applies to a learner on a
// lesson, with the class it comes from.
type LearnerGraded struct {
	GradedLesson
	ClassName string
	TimeZone  string
	JoinedAt  time.Time // answers before this belong to no class's grade
}

// SomeClassGrades reports whether any class grades lesson (cached in the
// process: SetGradedLesson adds to it, ClearGradedLesson drops it).
func (db *DB) SomeClassGrades(ctx context.Context, lesson string) (bool, error) {
	db.gradedMu.Lock()
	defer db.gradedMu.Unlock()
	if db.gradedSlugs != nil {
		return db.gradedSlugs[lesson], nil
	}
	rows, err := db.r.QueryContext(ctx, `SELECT DISTINCT lesson FROM graded_lessons`)
	if err != nil {
		return false, fmt.Errorf("store: graded lessons: %w", err)
	}
	defer rows.Close()
	m := map[string]bool{}
	for rows.Next() {
		var slug string
		if err := rows.Scan(&slug); err != nil {
			return false, fmt.Errorf("store: graded lessons: %w", err)
		}
		m[slug] = true
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("store: graded lessons: %w", err)
	}
	db.gradedSlugs = m
	return m[lesson], nil
}

// LearnerGradedLesson returns the graded setting of lesson that applies to
// the learner: from the open class they joined last that makes the lesson
// graded (a learner in two open classes is graded by the newer
// membership). ok is false when the lesson is practice for them.
func (db *DB) LearnerGradedLesson(ctx context.Context, learner, lesson string) (LearnerGraded, bool, error) {
	if some, err := db.SomeClassGrades(ctx, lesson); err != nil || !some {
		return LearnerGraded{}, false, err
	}
	var (
		lg     LearnerGraded
		joined string
	)
	row := db.r.QueryRowContext(ctx, `SELECT `+gradedCols+`, c.name, c.time_zone, m.joined_at
		FROM graded_lessons g
		JOIN cohort_members m ON m.cohort_id = g.cohort_id
		JOIN cohorts c ON c.id = g.cohort_id
		WHERE m.learner = ? AND g.lesson = ? AND c.archived_at IS NULL
		ORDER BY m.joined_at DESC, g.cohort_id DESC LIMIT 1`, learner, lesson)
	g, err := scanGraded(row, &lg.ClassName, &lg.TimeZone, &joined)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return LearnerGraded{}, false, nil
		}
		return LearnerGraded{}, false, fmt.Errorf("store: learner's graded lesson: %w", err)
	}
	lg.GradedLesson = g
	lg.JoinedAt, _ = parseTime(joined)
	return lg, true, nil
}

// LearnerAttempts returns the learner's attempts at questionIDs made at or
// after since, oldest first (graded mode counts them: quiz.Graded).
func (db *DB) LearnerAttempts(ctx context.Context, learner string, questionIDs []string, since time.Time) ([]Attempt, error) {
	if len(questionIDs) == 0 {
		return nil, nil
	}
	args := []any{learner, formatTime(since)}
	for _, id := range questionIDs {
		args = append(args, id)
	}
	rows, err := db.r.QueryContext(ctx, `SELECT `+attemptCols+` FROM attempts
		WHERE learner = ? AND created_at >= ? AND question_id IN (`+questionPlaceholders(len(questionIDs))+`) ORDER BY id`, args...)
	return collect("learner attempts", rows, err, scanAttempt)
}

// LearnerReveals returns when the learner chose "show answer" at each of
// questionIDs, at or after since.
func (db *DB) LearnerReveals(ctx context.Context, learner string, questionIDs []string, since time.Time) (map[string][]time.Time, error) {
	out := map[string][]time.Time{}
	if len(questionIDs) == 0 {
		return out, nil
	}
	args := []any{learner, formatTime(since)}
	for _, id := range questionIDs {
		args = append(args, id)
	}
	rows, err := db.r.QueryContext(ctx, `SELECT question_id, created_at FROM quiz_events
		WHERE learner = ? AND kind = 'reveal' AND created_at >= ? AND question_id IN (`+questionPlaceholders(len(questionIDs))+`) ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: learner reveals: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var q, at string
		if err := rows.Scan(&q, &at); err != nil {
			return nil, fmt.Errorf("store: learner reveals: %w", err)
		}
		t, _ := parseTime(at)
		out[q] = append(out[q], t)
	}
	return out, rows.Err()
}

// ErrAttemptLimit: a graded answer over the attempt limit, or outside the
// lesson's window; AddGradedAttempt stored nothing.
var ErrAttemptLimit = errors.New("store: graded answer refused: limit reached or lesson not open")

// GradedWindow is what a graded answer is checked against in the write
// that stores it: answers made from Since (the later of the class's open
// date and the learner's joining) until Closes count, at most Limit.
type GradedWindow struct {
	Since, Opens, Closes time.Time
	Limit                int
}

// AddGradedAttempt is AddAttempt for a graded question, atomic with its
// check: in the one write that stores it (the store's single writer) it
// counts the learner's answers to the question in the window and refuses
// with ErrAttemptLimit, storing nothing, when Limit are made already or
// the answer's time falls outside [Opens, Closes). Answers racing each
// other are therefore taken one at a time, and never more than Limit.
func (db *DB) AddGradedAttempt(ctx context.Context, learner, questionID string, answer json.RawMessage, correct, seen bool, w GradedWindow) (Attempt, error) {
	a, err := newAttempt(learner, questionID, answer, correct, seen)
	if err != nil {
		return Attempt{}, err
	}
	defer db.quiz.invalidate(learner)
	at := clock()
	ts := formatTime(at)
	refused := false
	err = db.write(ctx, func(tx *sql.Tx) (err error) {
		refused = false
		if at.Before(w.Opens) || !at.Before(w.Closes) {
			refused = true
			return nil
		}
		since := w.Since
		if since.Before(w.Opens) {
			since = w.Opens
		}
		var made int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM attempts WHERE learner = ? AND question_id = ?
			AND created_at >= ? AND created_at < ?`, learner, questionID, formatTime(since), formatTime(w.Closes)).Scan(&made); err != nil {
			return err
		}
		if made >= w.Limit {
			refused = true
			return nil
		}
		a.ID, err = insertAttempt(ctx, tx, a, ts)
		return err
	})
	if err != nil {
		return Attempt{}, fmt.Errorf("store: add attempt at %s: %w", questionID, err)
	}
	if refused {
		return Attempt{}, ErrAttemptLimit
	}
	a.CreatedAt, _ = parseTime(ts)
	return a, nil
}

// DueGradedCloses lists the graded settings whose close date has passed
// at at and whose close was not sent yet (MarkCloseSent): their classes'
// LMS scores go out once more, final.
func (db *DB) DueGradedCloses(ctx context.Context, at time.Time) ([]GradedLesson, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+gradedCols+` FROM graded_lessons g
		WHERE g.closes_at <= ? AND g.close_sent_at IS NULL ORDER BY g.closes_at`, formatTime(at))
	return collect("due closes", rows, err, func(sc scanner) (GradedLesson, error) { return scanGraded(sc) })
}

// MarkCloseSent records that the close of g (as it was: its close date)
// was sent; a close date changed since is left due.
func (db *DB) MarkCloseSent(ctx context.Context, g GradedLesson) error {
	if _, err := db.w.ExecContext(ctx, `UPDATE graded_lessons SET close_sent_at = ? WHERE cohort_id = ? AND lesson = ? AND closes_at = ?`,
		now(), g.Cohort, g.Lesson, formatTime(g.Closes)); err != nil {
		return fmt.Errorf("store: close sent: %w", err)
	}
	return nil
}
