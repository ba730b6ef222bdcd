package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Classes (cohorts) group learners for the instructor dashboard. In code
// they are "cohorts", because the Class* queries of class.go already mean
// "the whole class of learners".

// ErrNoCohort: no class has this id, or no open class has this join code.
var ErrNoCohort = errors.New("store: no such class, or it is archived")

// MaxCohortName bounds a class name.
const MaxCohortName = 80

// Cohort is a class of learners.
type Cohort struct {
	ID         int64
	Name       string
	Code       string // join code
	CreatedAt  time.Time
	ArchivedAt time.Time // zero while open
	Members    int       // counted learners (see Scope)
	TimeZone   string    // IANA name the class's graded dates are entered and shown in
}

// Archived reports whether the class is archived.
func (c Cohort) Archived() bool { return !c.ArchivedAt.IsZero() }

// Scope selects the learners the class statistics count. Always left out:
// learner ids an instructor used (staff_learners), and learners who did
// nothing but visit pages (no attempt, no run, no completed lesson, no
// display name, no class joined). Cohort 0 is every other learner except
// those who belong to an archived class and to no open one; a Cohort id is
// that class's members (archived or not), counting only the work each did
// in the class's term (during).
type Scope struct {
	Cohort int64
}

// rowOf is the condition that the learner in column col is in scope, for
// queries over an activity table (cost per activity row, not per
// learner); activity as in cond ("1" when a row of that table is itself
// an action).
func (sc Scope) rowOf(col, activity string) string {
	return `EXISTS (SELECT 1 FROM learners l WHERE l.id = ` + col + ` AND ` + sc.cond(activity) + `)`
}

// during is the condition that an activity row of learner column col,
// made at time column at, belongs to the class of the scope: made since
// the learner joined the class and, for an archived class, before it was
// archived (terms, issue 29 item 6: a learner who joins the next term does
// not bring last term's answers, and an archived class keeps its own
// figures). Always true for the all-learners scope.
func (sc Scope) during(col, at string) string {
	if sc.Cohort <= 0 {
		return "1"
	}
	return `EXISTS (SELECT 1 FROM cohort_members tm JOIN cohorts tc ON tc.id = tm.cohort_id
		WHERE tm.learner = ` + col + ` AND tm.cohort_id = ` + strconv.FormatInt(sc.Cohort, 10) + `
		AND ` + at + ` >= tm.joined_at AND (tc.archived_at IS NULL OR ` + at + ` < tc.archived_at))`
}

// activityExists is "learner l did something" from the activity tables,
// the same learners ClassLearnersIn counts: program records count (a hint
// revealed or the solution shown before any run is a program_progress
// row), or the dashboard's progress and lesson counts left out learners
// its learner list showed.
const activityExists = `(l.display_name != ''
	OR EXISTS (SELECT 1 FROM attempts a WHERE a.learner = l.id)
	OR EXISTS (SELECT 1 FROM runs r WHERE r.learner = l.id)
	OR EXISTS (SELECT 1 FROM progress p WHERE p.learner = l.id AND p.completed_at IS NOT NULL)
	OR EXISTS (SELECT 1 FROM task_progress t WHERE t.learner = l.id)
	OR EXISTS (SELECT 1 FROM program_progress pp WHERE pp.learner = l.id)
	OR EXISTS (SELECT 1 FROM cohort_members m WHERE m.learner = l.id))`

// cond is the condition on learners row l of being in scope; activity
// says "l did something" (a query that has joined the counts already can
// pass a cheaper expression).
func (sc Scope) cond(activity string) string {
	staff := `NOT EXISTS (SELECT 1 FROM staff_learners s WHERE s.learner = l.id)`
	if sc.Cohort > 0 {
		// The id is an integer formatted here, not text from a request.
		// Staff of this class (an LMS course's instructor or TA) are out;
		// staff of another class are not (roles are per course).
		id := strconv.FormatInt(sc.Cohort, 10)
		return staff + ` AND EXISTS (SELECT 1 FROM cohort_members m WHERE m.learner = l.id AND m.cohort_id = ` + id + `)
			AND NOT EXISTS (SELECT 1 FROM cohort_staff cs WHERE cs.learner = l.id AND cs.cohort_id = ` + id + `)`
	}
	// A learner who is staff of classes and a learner of none is staff in
	// "all learners"; a learner of an archived class leaves it unless they
	// are in an open class too (the next term).
	return staff + ` AND ` + activity + `
		AND (NOT EXISTS (SELECT 1 FROM cohort_staff cs WHERE cs.learner = l.id)
		     OR EXISTS (SELECT 1 FROM cohort_members m WHERE m.learner = l.id
		                AND NOT EXISTS (SELECT 1 FROM cohort_staff cs WHERE cs.learner = l.id AND cs.cohort_id = m.cohort_id)))
		AND (NOT EXISTS (SELECT 1 FROM cohort_members m JOIN cohorts c ON c.id = m.cohort_id
		                 WHERE m.learner = l.id AND c.archived_at IS NOT NULL)
		     OR EXISTS (SELECT 1 FROM cohort_members m JOIN cohorts c ON c.id = m.cohort_id
		                WHERE m.learner = l.id AND c.archived_at IS NULL))`
}

// codeAlphabet leaves out letters and digits that are easy to mix up (0/O, 1/I/L).
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

func newJoinCode() string {
	b := make([]byte, 8)
	rand.Read(b)
	for i := range b {
		b[i] = codeAlphabet[int(b[i])%len(codeAlphabet)]
	}
	return string(b)
}

// NormalizeJoinCode upper-cases a typed code and drops spaces and dashes.
func NormalizeJoinCode(code string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return -1
		}
		return unicode.ToUpper(r)
	}, code)
}

// CreateCohort makes a class with a fresh join code.
func (db *DB) CreateCohort(ctx context.Context, name string, by int64) (Cohort, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > MaxCohortName {
		return Cohort{}, &ValidationError{fmt.Sprintf("the class name must have 1 to %d characters", MaxCohortName)}
	}
	if err := checkPlainText(name); err != nil {
		return Cohort{}, err
	}
	var byArg any
	if by > 0 {
		byArg = by
	}
	ts := now()
	for range 5 {
		code := newJoinCode()
		res, err := db.w.ExecContext(ctx, `INSERT INTO cohorts (name, code, created_by, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (code) DO NOTHING`, name, code, byArg, ts)
		if err != nil {
			return Cohort{}, fmt.Errorf("store: create class: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			continue // code taken: draw again
		}
		id, err := res.LastInsertId()
		if err != nil {
			return Cohort{}, fmt.Errorf("store: create class: %w", err)
		}
		created, _ := parseTime(ts)
		return Cohort{ID: id, Name: name, Code: code, CreatedAt: created, TimeZone: "UTC"}, nil
	}
	return Cohort{}, errors.New("store: create class: no free join code")
}

// Cohorts lists the classes, newest first, with their counted members;
// archived ones only with withArchived.
func (db *DB) Cohorts(ctx context.Context, withArchived bool) ([]Cohort, error) {
	rows, err := db.r.QueryContext(ctx, `WITH `+Scope{}.cteAll()+`
		SELECT c.id, c.name, c.code, c.created_at, COALESCE(c.archived_at, ''),
		       (SELECT COUNT(*) FROM cohort_members m JOIN counted k ON k.id = m.learner WHERE m.cohort_id = c.id
		        AND NOT EXISTS (SELECT 1 FROM cohort_staff cs WHERE cs.cohort_id = c.id AND cs.learner = m.learner)), c.time_zone
		FROM cohorts c WHERE ? OR c.archived_at IS NULL ORDER BY c.created_at DESC, c.id DESC`, withArchived)
	return collect("list classes", rows, err, scanCohort)
}

// cteAll is counted(id) without the class condition (any class, archived
// or not): for member counts.
func (Scope) cteAll() string {
	return `counted(id) AS (SELECT l.id FROM learners l
		WHERE NOT EXISTS (SELECT 1 FROM staff_learners s WHERE s.learner = l.id))`
}

func scanCohort(s scanner) (Cohort, error) {
	var (
		c                 Cohort
		created, archived string
	)
	if err := s.Scan(&c.ID, &c.Name, &c.Code, &created, &archived, &c.Members, &c.TimeZone); err != nil {
		return Cohort{}, err
	}
	c.CreatedAt, _ = parseTime(created)
	if archived != "" {
		c.ArchivedAt, _ = parseTime(archived)
	}
	return c, nil
}

// Cohort returns one class by id (ErrNoCohort when unknown).
func (db *DB) Cohort(ctx context.Context, id int64) (Cohort, error) {
	c, err := scanCohort(db.r.QueryRowContext(ctx, `WITH `+Scope{}.cteAll()+`
		SELECT c.id, c.name, c.code, c.created_at, COALESCE(c.archived_at, ''),
		       (SELECT COUNT(*) FROM cohort_members m JOIN counted k ON k.id = m.learner WHERE m.cohort_id = c.id
		        AND NOT EXISTS (SELECT 1 FROM cohort_staff cs WHERE cs.cohort_id = c.id AND cs.learner = m.learner)), c.time_zone
		FROM cohorts c WHERE c.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Cohort{}, ErrNoCohort
	}
	if err != nil {
		return Cohort{}, fmt.Errorf("store: class %d: %w", id, err)
	}
	return c, nil
}

// OpenCohortByCode returns the open (not archived) class with this join
// code. An LMS course's class has none that works: its learners are the
// course's, as the LMS launches them (issue 41: an outsider joined one
// under a student's name).
func (db *DB) OpenCohortByCode(ctx context.Context, code string) (Cohort, error) {
	code = NormalizeJoinCode(code)
	if code == "" || len(code) > 32 {
		return Cohort{}, ErrNoCohort
	}
	c, err := scanCohort(db.r.QueryRowContext(ctx, `SELECT id, name, code, created_at, '', 0, time_zone
		FROM cohorts WHERE code = ? AND archived_at IS NULL
		AND NOT EXISTS (SELECT 1 FROM lti_contexts x WHERE x.cohort_id = cohorts.id)`, code))
	if errors.Is(err, sql.ErrNoRows) {
		return Cohort{}, ErrNoCohort
	}
	if err != nil {
		return Cohort{}, fmt.Errorf("store: class by code: %w", err)
	}
	return c, nil
}

// CohortByCode returns the class with this join code, archived or not (for
// the admin's commands; learners join only open classes: OpenCohortByCode).
func (db *DB) CohortByCode(ctx context.Context, code string) (Cohort, error) {
	code = NormalizeJoinCode(code)
	if code == "" || len(code) > 32 {
		return Cohort{}, ErrNoCohort
	}
	var id int64
	err := db.r.QueryRowContext(ctx, `SELECT id FROM cohorts WHERE code = ?`, code).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return Cohort{}, ErrNoCohort
	}
	if err != nil {
		return Cohort{}, fmt.Errorf("store: class by code: %w", err)
	}
	return db.Cohort(ctx, id)
}

// ErrRosterClass: the class has a roster, so a learner joins it by claiming
// a seat (ClaimSeat) with a personal code.
var ErrRosterClass = errors.New("store: the class has a roster: join with a personal code")

// JoinCohort makes the learner a member of the open class with this code
// (joining twice is not an error); ErrRosterClass (with the class) when
// the class has a roster. It is a learner's action: it creates
// the learner's row.
func (db *DB) JoinCohort(ctx context.Context, learner, code string) (Cohort, error) {
	if !ValidLearnerID(learner) {
		return Cohort{}, fmt.Errorf("store: join class: invalid learner id %q", learner)
	}
	c, err := db.OpenCohortByCode(ctx, code)
	if err != nil {
		return Cohort{}, err
	}
	if roster, err := db.CohortHasRoster(ctx, c.ID); err != nil {
		return Cohort{}, err
	} else if roster {
		return c, ErrRosterClass
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return Cohort{}, fmt.Errorf("store: join class: %w", err)
	}
	defer tx.Rollback()
	ts := now()
	if _, err := tx.ExecContext(ctx, `INSERT INTO learners (id, created) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, learner, ts); err != nil {
		return Cohort{}, fmt.Errorf("store: join class: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO cohort_members (cohort_id, learner, joined_at) VALUES (?, ?, ?)
		ON CONFLICT DO NOTHING`, c.ID, learner, ts); err != nil {
		return Cohort{}, fmt.Errorf("store: join class: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Cohort{}, fmt.Errorf("store: join class: %w", err)
	}
	return c, nil
}

// LearnerCohorts lists the classes the learner belongs to (names only matter).
func (db *DB) LearnerCohorts(ctx context.Context, learner string) ([]Cohort, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT c.id, c.name, c.code, c.created_at, COALESCE(c.archived_at, ''), 0, c.time_zone
		FROM cohort_members m JOIN cohorts c ON c.id = m.cohort_id WHERE m.learner = ? ORDER BY m.joined_at`, learner)
	return collect("learner classes", rows, err, scanCohort)
}

// ArchiveCohort archives (or, with archived false, reopens) a class.
func (db *DB) ArchiveCohort(ctx context.Context, id int64, archived bool) error {
	var at any
	if archived {
		at = now()
	}
	res, err := db.w.ExecContext(ctx, `UPDATE cohorts SET archived_at = ? WHERE id = ?`, at, id)
	if err != nil {
		return fmt.Errorf("store: archive class: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNoCohort
	}
	return nil
}

// MarkStaff records that an instructor used this learner id (their own
// browser), so its activity never counts as a learner's.
func (db *DB) MarkStaff(ctx context.Context, learner string, instructorID int64) error {
	if !ValidLearnerID(learner) {
		return nil
	}
	var by any
	if instructorID > 0 {
		by = instructorID
	}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO staff_learners (learner, instructor_id, marked_at) VALUES (?, ?, ?)
		ON CONFLICT (learner) DO NOTHING`, learner, by, now()); err != nil {
		return fmt.Errorf("store: mark staff: %w", err)
	}
	return nil
}

// IsStaff reports whether the learner id was used by an instructor.
func (db *DB) IsStaff(ctx context.Context, learner string) (bool, error) {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM staff_learners WHERE learner = ?`, learner).Scan(&n); err != nil {
		return false, fmt.Errorf("store: is staff: %w", err)
	}
	return n > 0, nil
}

// MoveLessonProgress moves learners' progress on lesson slug from to slug
// to (a renamed lesson folder with `aliases:`). A learner with rows on both
// keeps the earlier opening and completion. Returns the rows moved.
func (db *DB) MoveLessonProgress(ctx context.Context, from, to string) (int64, error) {
	if from == to || from == "" || to == "" {
		return 0, nil
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: move progress: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO progress (learner, lesson, opened_at, completed_at)
		SELECT learner, ?2, opened_at, completed_at FROM progress WHERE lesson = ?1 AND true
		ON CONFLICT (learner, lesson) DO UPDATE SET
			opened_at = MIN(opened_at, excluded.opened_at),
			completed_at = CASE WHEN completed_at IS NULL THEN excluded.completed_at
			                    WHEN excluded.completed_at IS NULL THEN completed_at
			                    ELSE MIN(completed_at, excluded.completed_at) END`, from, to)
	if err != nil {
		return 0, fmt.Errorf("store: move progress: %w", err)
	}
	n, _ := res.RowsAffected()
	if _, err := tx.ExecContext(ctx, `DELETE FROM progress WHERE lesson = ?`, from); err != nil {
		return 0, fmt.Errorf("store: move progress: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: move progress: %w", err)
	}
	if n > 0 {
		db.progress.invalidateAll()
	}
	return n, nil
}

// CohortJoinedAt is when the learner joined the class (ok false when
// they are not a member): their work in the class counts from then on.
func (db *DB) CohortJoinedAt(ctx context.Context, cohort int64, learner string) (time.Time, bool, error) {
	var at string
	err := db.r.QueryRowContext(ctx, `SELECT joined_at FROM cohort_members WHERE cohort_id = ? AND learner = ?`, cohort, learner).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("store: joined class: %w", err)
	}
	t, _ := parseTime(at)
	return t, true, nil
}
