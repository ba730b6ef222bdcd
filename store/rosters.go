package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Rosters (issue 29 item 4): a class's list of students, each a seat with
// a personal code. Claiming a seat binds a learner id to it; the same codes
// on another device sign that device in as the same learner, merging what
// the device did anonymously (MergeLearners).

// ErrNoSeat: the class code and personal code name no seat of an open class.
var ErrNoSeat = errors.New("store: no such seat")

// ErrStaffSeat: an instructor's browser cannot claim a student's seat.
var ErrStaffSeat = errors.New("store: an instructor's browser cannot claim a seat")

// ErrTwoSeats: both learners of a merge hold a seat, so they are two students.
var ErrTwoSeats = errors.New("store: both learners hold a roster seat")

// MaxRosterSeats bounds one class's roster.
const MaxRosterSeats = 2000

// MaxStudentID bounds a roster's student id.
const MaxStudentID = 64

// Seat is one roster entry of a class.
type Seat struct {
	ID        int64
	CohortID  int64
	ClassName string // filled by LearnerSeats
	StudentID string
	Name      string
	Code      string // the personal code
	Learner   string // "" until claimed
	ClaimedAt time.Time
	Claims    int // devices signed in with the codes
}

// Claimed reports whether a learner holds the seat.
func (s Seat) Claimed() bool { return s.Learner != "" }

// RosterEntry is one student of an imported roster.
type RosterEntry struct {
	StudentID, Name string
}

const seatCols = `s.id, s.cohort_id, c.name, s.student_id, s.name, s.code, COALESCE(s.learner, ''), COALESCE(s.claimed_at, ''), s.claims`

func scanSeat(sc scanner) (Seat, error) {
	var (
		s       Seat
		claimed string
	)
	if err := sc.Scan(&s.ID, &s.CohortID, &s.ClassName, &s.StudentID, &s.Name, &s.Code, &s.Learner, &claimed, &s.Claims); err != nil {
		return Seat{}, err
	}
	if claimed != "" {
		s.ClaimedAt, _ = parseTime(claimed)
	}
	return s, nil
}

func (db *DB) querySeats(ctx context.Context, where string, args ...any) ([]Seat, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+seatCols+` FROM roster_seats s JOIN cohorts c ON c.id = s.cohort_id
		WHERE `+where+` ORDER BY s.cohort_id, s.student_id`, args...)
	return collect("roster", rows, err, scanSeat)
}

// Seats is a class's roster, ordered by student id.
func (db *DB) Seats(ctx context.Context, cohort int64) ([]Seat, error) {
	return db.querySeats(ctx, `s.cohort_id = ?`, cohort)
}

// LearnerSeats lists the seats the learner holds (with class names).
func (db *DB) LearnerSeats(ctx context.Context, learner string) ([]Seat, error) {
	return db.querySeats(ctx, `s.learner = ?`, learner)
}

// ImportRoster adds the entries to the class's roster, each with a fresh
// personal code; an entry whose student id is on the roster already only
// updates the name (its code and claim stay). Entries must be checked
// (CheckRosterEntry) before.
func (db *DB) ImportRoster(ctx context.Context, cohort int64, entries []RosterEntry) (added, updated int, err error) {
	if _, err := db.Cohort(ctx, cohort); err != nil {
		return 0, 0, err
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("store: import roster: %w", err)
	}
	defer tx.Rollback()
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM roster_seats WHERE cohort_id = ?`, cohort).Scan(&have); err != nil {
		return 0, 0, fmt.Errorf("store: import roster: %w", err)
	}
	ts := now()
	for _, e := range entries {
		if err := CheckRosterEntry(e); err != nil {
			return 0, 0, err
		}
		res, err := tx.ExecContext(ctx, `UPDATE roster_seats SET name = ? WHERE cohort_id = ? AND student_id = ?`, e.Name, cohort, e.StudentID)
		if err != nil {
			return 0, 0, fmt.Errorf("store: import roster: %w", err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			// A claimed seat's learner shows the roster's name.
			if _, err := tx.ExecContext(ctx, `UPDATE learners SET display_name = ?
				WHERE id = (SELECT learner FROM roster_seats WHERE cohort_id = ? AND student_id = ?)`, e.Name, cohort, e.StudentID); err != nil {
				return 0, 0, fmt.Errorf("store: import roster: %w", err)
			}
			updated++
			continue
		}
		if have+added >= MaxRosterSeats {
			return 0, 0, &ValidationError{fmt.Sprintf("a class roster holds at most %d students", MaxRosterSeats)}
		}
		if err := insertSeat(ctx, tx, cohort, e, ts); err != nil {
			return 0, 0, err
		}
		added++
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, fmt.Errorf("store: import roster: %w", err)
	}
	return added, updated, nil
}

func insertSeat(ctx context.Context, tx *sql.Tx, cohort int64, e RosterEntry, ts string) error {
	for range 5 {
		res, err := tx.ExecContext(ctx, `INSERT INTO roster_seats (cohort_id, student_id, name, code, created_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (cohort_id, code) DO NOTHING`, cohort, e.StudentID, e.Name, newJoinCode(), ts)
		if err != nil {
			return fmt.Errorf("store: import roster: %w", err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			return nil
		}
	}
	return errors.New("store: import roster: no free personal code")
}

// CheckRosterEntry returns a *ValidationError when the entry cannot be
// stored: a student id of 1 to MaxStudentID characters without spaces, a
// name of 1 to MaxDisplayName characters; no control or text-direction
// characters in either.
func CheckRosterEntry(e RosterEntry) error {
	if e.StudentID == "" || len([]rune(e.StudentID)) > MaxStudentID || strings.ContainsAny(e.StudentID, " \t") {
		return &ValidationError{fmt.Sprintf("a student id has 1 to %d characters and no spaces", MaxStudentID)}
	}
	if strings.TrimSpace(e.Name) == "" || len([]rune(e.Name)) > MaxDisplayName {
		return &ValidationError{fmt.Sprintf("a name has 1 to %d characters", MaxDisplayName)}
	}
	if err := checkPlainText(e.StudentID + e.Name); err != nil {
		return err
	}
	return nil
}

// NewSeatCode gives a seat a fresh personal code: the old one stops
// working (a code that leaked); the seat's learner and work stay.
func (db *DB) NewSeatCode(ctx context.Context, cohort, seat int64) error {
	for range 5 {
		res, err := db.w.ExecContext(ctx, `UPDATE OR IGNORE roster_seats SET code = ? WHERE id = ? AND cohort_id = ?`, newJoinCode(), seat, cohort)
		if err != nil {
			return fmt.Errorf("store: new seat code: %w", err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			return nil
		}
		var exists int
		if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM roster_seats WHERE id = ? AND cohort_id = ?`, seat, cohort).Scan(&exists); err != nil {
			return fmt.Errorf("store: new seat code: %w", err)
		}
		if exists == 0 {
			return ErrNoSeat
		}
	}
	return errors.New("store: new seat code: no free personal code")
}

// RemoveSeat deletes a roster entry; its learner leaves the class (their
// work stays in the database and in other classes).
func (db *DB) RemoveSeat(ctx context.Context, cohort, seat int64) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: remove seat: %w", err)
	}
	defer tx.Rollback()
	var learner sql.NullString
	err = tx.QueryRowContext(ctx, `DELETE FROM roster_seats WHERE id = ? AND cohort_id = ? RETURNING learner`, seat, cohort).Scan(&learner)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNoSeat
	}
	if err != nil {
		return fmt.Errorf("store: remove seat: %w", err)
	}
	if learner.Valid {
		if _, err := tx.ExecContext(ctx, `DELETE FROM cohort_members WHERE cohort_id = ? AND learner = ?`, cohort, learner.String); err != nil {
			return fmt.Errorf("store: remove seat: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: remove seat: %w", err)
	}
	return nil
}

// RemoveMember takes a learner out of a class: the membership goes, and a
// seat of that class the learner held is free again with a fresh code (a
// student who claimed the wrong seat). Their work stays in the database.
func (db *DB) RemoveMember(ctx context.Context, cohort int64, learner string) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: remove member: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `DELETE FROM cohort_members WHERE cohort_id = ? AND learner = ?`, cohort, learner)
	if err != nil {
		return fmt.Errorf("store: remove member: %w", err)
	}
	n, _ := res.RowsAffected()
	res, err = tx.ExecContext(ctx, `UPDATE roster_seats SET learner = NULL, claimed_at = NULL, claims = 0, code = ?
		WHERE cohort_id = ? AND learner = ?`, newJoinCode(), cohort, learner)
	if err != nil {
		return fmt.Errorf("store: remove member: %w", err)
	}
	m, _ := res.RowsAffected()
	if n+m == 0 {
		return ErrNoSeat
	}
	return tx.Commit()
}

// Claim is the outcome of ClaimSeat.
type Claim struct {
	Seat    Seat
	Learner string // the learner id the browser is from now on
	Merged  bool   // the browser's anonymous work moved into Learner
}

// ClaimSeat signs the browser of learner current in as the student of the
// seat named by the class's join code and the personal code:
//   - an unclaimed seat becomes current's (current's work is the student's);
//   - a seat claimed by another learner id (a second device, a lost
//     cookie) keeps its learner: the browser switches to it, and what the
//     browser did anonymously is merged into it;
//   - a browser that holds another seat already (a shared lab PC the last
//     student did not sign out of) is never merged: it switches to the
//     claimed seat's learner, or to a fresh learner id for an unclaimed one.
//
// The seat's learner joins the class and takes the roster name.
func (db *DB) ClaimSeat(ctx context.Context, current, classCode, seatCode string) (Claim, error) {
	if !ValidLearnerID(current) {
		return Claim{}, fmt.Errorf("store: claim seat: invalid learner id %q", current)
	}
	c, err := db.OpenCohortByCode(ctx, classCode)
	if errors.Is(err, ErrNoCohort) {
		return Claim{}, ErrNoSeat
	}
	if err != nil {
		return Claim{}, err
	}
	seatCode = NormalizeJoinCode(seatCode)
	if seatCode == "" || len(seatCode) > 32 {
		return Claim{}, ErrNoSeat
	}
	if staff, err := db.IsStaff(ctx, current); err != nil {
		return Claim{}, err
	} else if staff {
		return Claim{}, ErrStaffSeat
	}
	seats, err := db.querySeats(ctx, `s.cohort_id = ? AND s.code = ?`, c.ID, seatCode)
	if err != nil {
		return Claim{}, err
	}
	if len(seats) == 0 {
		return Claim{}, ErrNoSeat
	}
	seat := seats[0]
	held, err := db.LearnerSeats(ctx, current)
	if err != nil {
		return Claim{}, err
	}
	holdsOther := false
	for _, h := range held {
		if h.ID != seat.ID {
			holdsOther = true
		}
	}
	out := Claim{Seat: seat, Learner: seat.Learner}
	switch {
	case seat.Learner == current:
	case holdsOther && seat.Learner == "":
		out.Learner = NewLearnerID()
	case holdsOther:
	case seat.Learner == "":
		out.Learner = current
	default:
		if err := db.MergeLearners(ctx, current, seat.Learner); err != nil {
			return Claim{}, err
		}
		out.Merged = true
	}
	ts := now()
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return Claim{}, fmt.Errorf("store: claim seat: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO learners (id, created) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, out.Learner, ts); err != nil {
		return Claim{}, fmt.Errorf("store: claim seat: %w", err)
	}
	// The seat is taken only if still free or already this learner's: two
	// browsers claiming a free seat at once end with one learner, not two.
	res, err := tx.ExecContext(ctx, `UPDATE roster_seats SET learner = ?, claimed_at = COALESCE(claimed_at, ?), claims = claims + 1
		WHERE id = ? AND (learner IS NULL OR learner = ?)`, out.Learner, ts, seat.ID, out.Learner)
	if err != nil {
		return Claim{}, fmt.Errorf("store: claim seat: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Claim{}, fmt.Errorf("store: claim seat: claimed by another browser at the same moment")
	}
	if _, err := tx.ExecContext(ctx, `UPDATE learners SET display_name = ? WHERE id = ?`, seat.Name, out.Learner); err != nil {
		return Claim{}, fmt.Errorf("store: claim seat: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO cohort_members (cohort_id, learner, joined_at) VALUES (?, ?, ?)
		ON CONFLICT DO NOTHING`, c.ID, out.Learner, ts); err != nil {
		return Claim{}, fmt.Errorf("store: claim seat: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Claim{}, fmt.Errorf("store: claim seat: %w", err)
	}
	out.Seat.Learner = out.Learner
	return out, nil
}

// mergeSQL moves one table's rows of learner ?1 to learner ?2, keeping
// every record: per-question attempts and runs are moved as they are;
// per-lesson rows are combined (earliest opening and completion, summed
// counts, the newer saved code). Every table that references learners
// must be here: MergeLearners refuses to run otherwise (deleting the old
// learner row would cascade over a table it does not know).
var mergeSQL = map[string][]string{
	"attempts":    {`UPDATE attempts SET learner = ?2 WHERE learner = ?1`},
	"quiz_events": {`UPDATE quiz_events SET learner = ?2 WHERE learner = ?1`},
	"runs":        {`UPDATE runs SET learner = ?2 WHERE learner = ?1`},
	"progress": {`INSERT INTO progress (learner, lesson, opened_at, completed_at)
		SELECT ?2, lesson, opened_at, completed_at FROM progress WHERE learner = ?1 AND true
		ON CONFLICT (learner, lesson) DO UPDATE SET
			opened_at = MIN(opened_at, excluded.opened_at),
			completed_at = CASE WHEN completed_at IS NULL THEN excluded.completed_at
			                    WHEN excluded.completed_at IS NULL THEN completed_at
			                    ELSE MIN(completed_at, excluded.completed_at) END`,
		`DELETE FROM progress WHERE learner = ?1`},
	"task_progress": {`INSERT INTO task_progress (learner, lesson, task, checks, last_at, done_at)
		SELECT ?2, lesson, task, checks, last_at, done_at FROM task_progress WHERE learner = ?1 AND true
		ON CONFLICT (learner, lesson, task) DO UPDATE SET
			checks = checks + excluded.checks,
			last_at = MAX(last_at, excluded.last_at),
			done_at = CASE WHEN done_at IS NULL THEN excluded.done_at
			               WHEN excluded.done_at IS NULL THEN done_at
			               ELSE MIN(done_at, excluded.done_at) END`,
		`DELETE FROM task_progress WHERE learner = ?1`},
	"program_code": {`INSERT INTO program_code (learner, lesson, program, source, saved_at)
		SELECT ?2, lesson, program, source, saved_at FROM program_code WHERE learner = ?1 AND true
		ON CONFLICT (learner, lesson, program) DO UPDATE SET
			source = CASE WHEN excluded.saved_at > saved_at THEN excluded.source ELSE source END,
			saved_at = MAX(saved_at, excluded.saved_at)`,
		`DELETE FROM program_code WHERE learner = ?1`},
	"program_progress": {`INSERT INTO program_progress (learner, lesson, program, attempts, passes, last_at, passed_at, solution_at)
		SELECT ?2, lesson, program, attempts, passes, last_at, passed_at, solution_at FROM program_progress WHERE learner = ?1 AND true
		ON CONFLICT (learner, lesson, program) DO UPDATE SET
			attempts = attempts + excluded.attempts,
			passes = passes + excluded.passes,
			last_at = MAX(last_at, excluded.last_at),
			passed_at = CASE WHEN passed_at IS NULL THEN excluded.passed_at
			                 WHEN excluded.passed_at IS NULL THEN passed_at
			                 ELSE MIN(passed_at, excluded.passed_at) END,
			solution_at = CASE WHEN solution_at IS NULL THEN excluded.solution_at
			                   WHEN excluded.solution_at IS NULL THEN solution_at
			                   ELSE MIN(solution_at, excluded.solution_at) END`,
		`DELETE FROM program_progress WHERE learner = ?1`},
	"program_hints": {`INSERT INTO program_hints (learner, lesson, program, hint, revealed_at)
		SELECT ?2, lesson, program, hint, revealed_at FROM program_hints WHERE learner = ?1 AND true
		ON CONFLICT (learner, lesson, program, hint) DO UPDATE SET revealed_at = MIN(revealed_at, excluded.revealed_at)`,
		`DELETE FROM program_hints WHERE learner = ?1`},
	"program_submissions": {`INSERT INTO program_submissions (learner, lesson, program, run_id, source, submitted_at)
		SELECT ?2, lesson, program, run_id, source, submitted_at FROM program_submissions WHERE learner = ?1 AND true
		ON CONFLICT (learner, lesson, program) DO UPDATE SET
			run_id = CASE WHEN excluded.submitted_at > submitted_at THEN excluded.run_id ELSE run_id END,
			source = CASE WHEN excluded.submitted_at > submitted_at THEN excluded.source ELSE source END,
			submitted_at = MAX(submitted_at, excluded.submitted_at)`,
		`DELETE FROM program_submissions WHERE learner = ?1`},
	"program_resets": {`INSERT INTO program_resets (learner, lesson, program, source, reset_at)
		SELECT ?2, lesson, program, source, reset_at FROM program_resets WHERE learner = ?1 AND true
		ON CONFLICT (learner, lesson, program) DO UPDATE SET
			source = CASE WHEN excluded.reset_at > reset_at THEN excluded.source ELSE source END,
			reset_at = MAX(reset_at, excluded.reset_at)`,
		`DELETE FROM program_resets WHERE learner = ?1`},
	// A board's entry moves with its label; where into is on the board
	// already, into's own entry (and choice of name) stays.
	"leaderboard_entries": {`UPDATE leaderboard_entries SET learner = ?2 WHERE learner = ?1
		AND NOT EXISTS (SELECT 1 FROM leaderboard_entries x WHERE x.learner = ?2 AND x.cohort_id = leaderboard_entries.cohort_id
		                AND x.lesson = leaderboard_entries.lesson AND x.program = leaderboard_entries.program)`,
		`DELETE FROM leaderboard_entries WHERE learner = ?1`},
	"cohort_members": {`INSERT INTO cohort_members (cohort_id, learner, joined_at)
		SELECT cohort_id, ?2, joined_at FROM cohort_members WHERE learner = ?1 AND true
		ON CONFLICT (cohort_id, learner) DO UPDATE SET joined_at = MIN(joined_at, excluded.joined_at)`,
		`DELETE FROM cohort_members WHERE learner = ?1`},
	"staff_learners": {}, // a staff id is never merged (checked first)
	// An LMS course's staff mark moves with the learner (roles per course).
	"cohort_staff": {`INSERT INTO cohort_staff (cohort_id, learner, role, marked_at)
		SELECT cohort_id, ?2, role, marked_at FROM cohort_staff WHERE learner = ?1 AND true
		ON CONFLICT (cohort_id, learner) DO NOTHING`,
		`DELETE FROM cohort_staff WHERE learner = ?1`},
	"roster_seats": {`UPDATE roster_seats SET learner = ?2 WHERE learner = ?1`},
	// A platform user stays one user: their link moves to the merged learner.
	"lti_users": {`UPDATE lti_users SET learner = ?2 WHERE learner = ?1`},
}

// MergeLearners moves everything learner from did into learner into and
// deletes from: the result is one learner with both records (see
// mergeSQL). into keeps its display name, or takes from's when it has
// none. Refused when either id is an instructor's, or when both hold a
// roster seat (two students).
func (db *DB) MergeLearners(ctx context.Context, from, into string) error {
	defer db.noLTI.invalidateAll() // into may now hold from's LTI links
	if !ValidLearnerID(from) || !ValidLearnerID(into) || from == into {
		return &ValidationError{"two different learner ids are needed"}
	}
	for _, id := range []string{from, into} {
		if staff, err := db.IsStaff(ctx, id); err != nil {
			return err
		} else if staff {
			return ErrStaffSeat
		}
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: merge learners: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT m.name FROM sqlite_master m, pragma_foreign_key_list(m.name) f
		WHERE m.type = 'table' AND f."table" = 'learners'`)
	if err != nil {
		return fmt.Errorf("store: merge learners: %w", err)
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return fmt.Errorf("store: merge learners: %w", err)
		}
		tables = append(tables, t)
	}
	rows.Close()
	for _, t := range tables {
		if _, ok := mergeSQL[t]; !ok {
			return fmt.Errorf("store: merge learners: table %s references learners and has no merge rule", t)
		}
	}
	var fromSeats, intoSeats int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FILTER (WHERE learner = ?1), COUNT(*) FILTER (WHERE learner = ?2)
		FROM roster_seats`, from, into).Scan(&fromSeats, &intoSeats); err != nil {
		return fmt.Errorf("store: merge learners: %w", err)
	}
	if fromSeats > 0 && intoSeats > 0 {
		return ErrTwoSeats
	}
	ts := now()
	if _, err := tx.ExecContext(ctx, `INSERT INTO learners (id, created) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, into, ts); err != nil {
		return fmt.Errorf("store: merge learners: %w", err)
	}
	for _, t := range tables {
		for _, q := range mergeSQL[t] {
			if _, err := tx.ExecContext(ctx, q, from, into); err != nil {
				return fmt.Errorf("store: merge learners (%s): %w", t, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE learners SET
		display_name = COALESCE(NULLIF(display_name, ''), (SELECT display_name FROM learners WHERE id = ?1), ''),
		created = MIN(created, COALESCE((SELECT created FROM learners WHERE id = ?1), created))
		WHERE id = ?2`, from, into); err != nil {
		return fmt.Errorf("store: merge learners: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM learners WHERE id = ?`, from); err != nil {
		return fmt.Errorf("store: merge learners: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: merge learners: %w", err)
	}
	for _, id := range []string{from, into} {
		db.progress.invalidate(id)
		db.quiz.invalidate(id)
		db.results.invalidate(id)
		db.tasks.invalidate(id)
		db.known.invalidate(id)
	}
	return nil
}

// Member is a learner of a class, for the roster page.
type Member struct {
	Learner  string
	Name     string // display name ("" when none)
	JoinedAt time.Time
	Seat     bool // holds a seat of this class's roster
}

// CohortMembers lists a class's learners (instructors' browsers left out),
// in joining order.
func (db *DB) CohortMembers(ctx context.Context, cohort int64) ([]Member, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT m.learner, l.display_name, m.joined_at,
			EXISTS (SELECT 1 FROM roster_seats s WHERE s.cohort_id = m.cohort_id AND s.learner = m.learner)
		FROM cohort_members m JOIN learners l ON l.id = m.learner
		WHERE m.cohort_id = ? AND NOT EXISTS (SELECT 1 FROM staff_learners s WHERE s.learner = m.learner)
		AND NOT EXISTS (SELECT 1 FROM cohort_staff cs WHERE cs.cohort_id = m.cohort_id AND cs.learner = m.learner)
		ORDER BY m.joined_at, m.learner`, cohort)
	if err != nil {
		return nil, fmt.Errorf("store: class members: %w", err)
	}
	defer rows.Close()
	var out []Member
	for rows.Next() {
		var (
			m      Member
			joined string
		)
		if err := rows.Scan(&m.Learner, &m.Name, &joined, &m.Seat); err != nil {
			return nil, fmt.Errorf("store: class members: %w", err)
		}
		m.JoinedAt, _ = parseTime(joined)
		out = append(out, m)
	}
	return out, rows.Err()
}

// CohortHasRoster reports whether the class has a roster (then joining
// needs a personal code: names on it cannot be taken).
func (db *DB) CohortHasRoster(ctx context.Context, cohort int64) (bool, error) {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM roster_seats WHERE cohort_id = ?`, cohort).Scan(&n); err != nil {
		return false, fmt.Errorf("store: class roster: %w", err)
	}
	return n > 0, nil
}
