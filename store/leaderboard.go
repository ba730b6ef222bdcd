package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Class leaderboards (issue 40): a learner may put themself on the board
// of a program exercise's figure in a class they belong to (lesson 06's
// write-rate ratio). Joining is a choice (off by default), leaving deletes
// the entry, and an instructor may hide a class's boards. The board holds
// no figures: each row's value is the learner's best figure from their own
// checked runs of the program (runs.result, the result event's figures as
// the check reported them, web/program.go), so nothing a client sends can
// put a number on it.

// ErrNotMember: the learner does not belong to the class.
var ErrNotMember = errors.New("store: the learner is not a member of this class")

// ErrLeaderboardHidden: the class's instructor hid its leaderboards.
var ErrLeaderboardHidden = errors.New("store: the class's leaderboard is hidden")

// Board names one leaderboard: a class, a program exercise, and the
// figure it ranks (higher is better). The check reports the figure as
// Figure with its interval as Figure_low and Figure_high.
type Board struct {
	Cohort          int64
	Lesson, Program string
	Figure          string
}

// figureName is what a figure name may be (it names a JSON key).
var figureName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

func (b Board) valid() error {
	if b.Cohort <= 0 || b.Lesson == "" || b.Program == "" || !figureName.MatchString(b.Figure) {
		return fmt.Errorf("store: leaderboard: bad board %+v", b)
	}
	return nil
}

// LeaderboardEntry is a learner's choice on one board.
type LeaderboardEntry struct {
	Number   int  // their anonymous label's number ("Learner 7")
	ShowName bool // show their display name instead
	JoinedAt time.Time
}

// LeaderboardRow is one learner on a board, with their best checked run.
type LeaderboardRow struct {
	Learner  string
	Number   int
	ShowName bool
	Name     string // the learner's display name; shown only when ShowName
	Rank     int    // 1 is the highest value; equal values share a rank
	// Value, Low and High are the figure and its interval as the check
	// reported them in the run's result.
	Value, Low, High float64
	Passed           bool // the run passed its check
	RunID            string
	At               time.Time // when the run finished
}

// cohortMember reports whether learner is in the class (ErrNoCohort
// without the class) and whether the class hid its leaderboards.
func cohortMember(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, cohort int64, learner string) (member, hidden bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT leaderboard_hidden != 0,
		EXISTS (SELECT 1 FROM cohort_members m WHERE m.cohort_id = c.id AND m.learner = ?)
		FROM cohorts c WHERE c.id = ?`, learner, cohort).Scan(&hidden, &member)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, ErrNoCohort
	}
	return member, hidden, err
}

// JoinLeaderboard puts learner on board b (or changes whether their
// display name shows, when they are on it already). It refuses a learner
// who is not a member of the class (ErrNotMember) and a hidden board
// (ErrLeaderboardHidden).
func (db *DB) JoinLeaderboard(ctx context.Context, b Board, learner string, showName bool) (LeaderboardEntry, error) {
	if err := b.valid(); err != nil {
		return LeaderboardEntry{}, err
	}
	if !ValidLearnerID(learner) {
		return LeaderboardEntry{}, fmt.Errorf("store: invalid learner id %q", learner)
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return LeaderboardEntry{}, fmt.Errorf("store: join leaderboard: %w", err)
	}
	defer tx.Rollback()
	member, hidden, err := cohortMember(ctx, tx, b.Cohort, learner)
	switch {
	case errors.Is(err, ErrNoCohort):
		return LeaderboardEntry{}, ErrNotMember
	case err != nil:
		return LeaderboardEntry{}, fmt.Errorf("store: join leaderboard: %w", err)
	case !member:
		return LeaderboardEntry{}, ErrNotMember
	case hidden:
		return LeaderboardEntry{}, ErrLeaderboardHidden
	}
	show := 0
	if showName {
		show = 1
	}
	ts := now()
	res, err := tx.ExecContext(ctx, `UPDATE leaderboard_entries SET show_name = ?
		WHERE cohort_id = ? AND lesson = ? AND program = ? AND learner = ?`, show, b.Cohort, b.Lesson, b.Program, learner)
	if err != nil {
		return LeaderboardEntry{}, fmt.Errorf("store: join leaderboard: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var number int
		if err := tx.QueryRowContext(ctx, `INSERT INTO leaderboard_numbers (cohort_id, lesson, program, last) VALUES (?, ?, ?, 1)
			ON CONFLICT (cohort_id, lesson, program) DO UPDATE SET last = last + 1 RETURNING last`,
			b.Cohort, b.Lesson, b.Program).Scan(&number); err != nil {
			return LeaderboardEntry{}, fmt.Errorf("store: join leaderboard: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO leaderboard_entries (cohort_id, lesson, program, learner, number, show_name, joined_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, b.Cohort, b.Lesson, b.Program, learner, number, show, ts); err != nil {
			return LeaderboardEntry{}, fmt.Errorf("store: join leaderboard: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return LeaderboardEntry{}, fmt.Errorf("store: join leaderboard: %w", err)
	}
	e, _, err := db.LeaderboardEntry(ctx, b, learner)
	return e, err
}

// LeaveLeaderboard takes learner off board b (not being on it is no error).
func (db *DB) LeaveLeaderboard(ctx context.Context, b Board, learner string) error {
	if err := b.valid(); err != nil {
		return err
	}
	if _, err := db.w.ExecContext(ctx, `DELETE FROM leaderboard_entries WHERE cohort_id = ? AND lesson = ? AND program = ? AND learner = ?`,
		b.Cohort, b.Lesson, b.Program, learner); err != nil {
		return fmt.Errorf("store: leave leaderboard: %w", err)
	}
	return nil
}

// LeaderboardEntry is learner's entry on board b; ok is false when they
// are not on it.
func (db *DB) LeaderboardEntry(ctx context.Context, b Board, learner string) (e LeaderboardEntry, ok bool, err error) {
	var at string
	err = db.r.QueryRowContext(ctx, `SELECT number, show_name != 0, joined_at FROM leaderboard_entries
		WHERE cohort_id = ? AND lesson = ? AND program = ? AND learner = ?`, b.Cohort, b.Lesson, b.Program, learner).Scan(&e.Number, &e.ShowName, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return LeaderboardEntry{}, false, nil
	}
	if err != nil {
		return LeaderboardEntry{}, false, fmt.Errorf("store: leaderboard entry: %w", err)
	}
	e.JoinedAt, _ = parseTime(at)
	return e, true, nil
}

// Leaderboard lists the learners on board b who have a checked run that
// reported the figure, best first: for each, their run with the highest
// value (the earliest of equal ones) among their runs of the program made
// while they were in the class (since they joined it, and before it was
// archived). Staff of the class are left out. It does not look at whether
// the board is hidden: the caller does (LeaderboardHidden).
func (db *DB) Leaderboard(ctx context.Context, b Board) ([]LeaderboardRow, error) {
	if err := b.valid(); err != nil {
		return nil, err
	}
	rows, err := db.r.QueryContext(ctx, `
		WITH r AS (
			SELECT e.learner, e.number, e.show_name, l.display_name, r.id AS run_id,
			       json_extract(r.result, '$.figures.' || ?4) AS v,
			       json_extract(r.result, '$.figures.' || ?4 || '_low') AS lo,
			       json_extract(r.result, '$.figures.' || ?4 || '_high') AS hi,
			       COALESCE(json_extract(r.result, '$.ok'), 0) AS ok,
			       COALESCE(r.finished_at, r.created_at) AS at
			FROM leaderboard_entries e
			JOIN learners l ON l.id = e.learner
			JOIN cohort_members m ON m.cohort_id = e.cohort_id AND m.learner = e.learner
			JOIN cohorts c ON c.id = e.cohort_id
			JOIN runs r ON r.learner = e.learner AND r.experiment = 'program'
			WHERE e.cohort_id = ?1 AND e.lesson = ?2 AND e.program = ?3
			  AND json_extract(r.params, '$.lesson') = ?2 AND json_extract(r.params, '$.program') = ?3
			  AND r.result IS NOT NULL AND json_type(r.result, '$.figures.' || ?4) IN ('real', 'integer')
			  AND r.created_at >= m.joined_at AND (c.archived_at IS NULL OR r.created_at < c.archived_at)
			  AND NOT EXISTS (SELECT 1 FROM staff_learners s WHERE s.learner = e.learner)
			  AND NOT EXISTS (SELECT 1 FROM cohort_staff cs WHERE cs.learner = e.learner AND cs.cohort_id = e.cohort_id)),
		best AS (
			SELECT *, ROW_NUMBER() OVER (PARTITION BY learner ORDER BY v DESC, at, run_id) AS n FROM r)
		SELECT learner, number, show_name != 0, display_name, RANK() OVER (ORDER BY v DESC),
		       v, COALESCE(lo, v), COALESCE(hi, v), ok != 0, run_id, at
		FROM best WHERE n = 1 ORDER BY v DESC, at, number`, b.Cohort, b.Lesson, b.Program, b.Figure)
	if err != nil {
		return nil, fmt.Errorf("store: leaderboard: %w", err)
	}
	defer rows.Close()
	var out []LeaderboardRow
	for rows.Next() {
		var x LeaderboardRow
		var at string
		if err := rows.Scan(&x.Learner, &x.Number, &x.ShowName, &x.Name, &x.Rank, &x.Value, &x.Low, &x.High, &x.Passed, &x.RunID, &at); err != nil {
			return nil, fmt.Errorf("store: leaderboard: %w", err)
		}
		x.At, _ = parseTime(at)
		out = append(out, x)
	}
	return out, rows.Err()
}

// SetLeaderboardHidden hides (or shows again) the class's leaderboards.
// Hiding keeps who opted in: showing the boards again brings them back as
// they were.
func (db *DB) SetLeaderboardHidden(ctx context.Context, cohort int64, hidden bool) error {
	h := 0
	if hidden {
		h = 1
	}
	res, err := db.w.ExecContext(ctx, `UPDATE cohorts SET leaderboard_hidden = ? WHERE id = ?`, h, cohort)
	if err != nil {
		return fmt.Errorf("store: hide leaderboard: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNoCohort
	}
	return nil
}

// HiddenLeaderboards is the set of classes whose leaderboards are hidden.
func (db *DB) HiddenLeaderboards(ctx context.Context) (map[int64]bool, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id FROM cohorts WHERE leaderboard_hidden != 0`)
	if err != nil {
		return nil, fmt.Errorf("store: hidden leaderboards: %w", err)
	}
	defer rows.Close()
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: hidden leaderboards: %w", err)
		}
		out[id] = true
	}
	return out, rows.Err()
}
