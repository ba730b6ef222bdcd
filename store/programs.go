package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ProgramProgress is one learner's record on one :::program of a lesson.
type ProgramProgress struct {
	Lesson, Program string
	Attempts        int       // runs that reached the check
	Passes          int       // runs whose check passed
	PassedAt        time.Time // first pass; zero until one
	SolutionAt      time.Time // when the solution was first shown; zero if never
	Hints           int       // hints revealed (program_hints)
}

// Passed reports whether a run of the program ever passed its check.
func (p ProgramProgress) Passed() bool { return !p.PassedAt.IsZero() }

// ensureLearner creates learner's row at their first write.
func ensureLearner(ctx context.Context, tx *sql.Tx, learner, ts string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO learners (id, created) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, learner, ts)
	return err
}

// SaveProgramCode stores learner's code of lesson's program (the last
// save wins).
func (db *DB) SaveProgramCode(ctx context.Context, learner, lesson, program, source string) error {
	if !ValidLearnerID(learner) {
		return fmt.Errorf("store: invalid learner id %q", learner)
	}
	return db.programTx(ctx, "save program code", learner, func(tx *sql.Tx, ts string) error {
		_, err := tx.ExecContext(ctx,
			`INSERT INTO program_code (learner, lesson, program, source, saved_at) VALUES (?1, ?2, ?3, ?4, ?5)
			 ON CONFLICT (learner, lesson, program) DO UPDATE SET source = excluded.source, saved_at = excluded.saved_at`,
			learner, lesson, program, source, ts)
		return err
	})
}

// ProgramCode returns learner's saved code of lesson's program; ok is
// false when they never saved any.
func (db *DB) ProgramCode(ctx context.Context, learner, lesson, program string) (source string, ok bool, err error) {
	err = db.r.QueryRowContext(ctx, `SELECT source FROM program_code WHERE learner = ? AND lesson = ? AND program = ?`,
		learner, lesson, program).Scan(&source)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("store: program code: %w", err)
	}
	return source, true, nil
}

// RecordProgramRun counts one checked run of lesson's program by learner.
func (db *DB) RecordProgramRun(ctx context.Context, learner, lesson, program string, passed bool) error {
	if !ValidLearnerID(learner) {
		return fmt.Errorf("store: invalid learner id %q", learner)
	}
	pass := 0
	if passed {
		pass = 1
	}
	return db.programTx(ctx, "program run", learner, func(tx *sql.Tx, ts string) error {
		var passedAt any
		if passed {
			passedAt = ts
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO program_progress (learner, lesson, program, attempts, passes, last_at, passed_at) VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6)
			 ON CONFLICT (learner, lesson, program) DO UPDATE SET attempts = attempts + 1, passes = passes + excluded.passes,
			   last_at = excluded.last_at, passed_at = COALESCE(passed_at, excluded.passed_at)`,
			learner, lesson, program, pass, ts, passedAt)
		return err
	})
}

// RecordSolutionShown notes that learner was shown the solution of
// lesson's program (the first time is kept).
func (db *DB) RecordSolutionShown(ctx context.Context, learner, lesson, program string) error {
	if !ValidLearnerID(learner) {
		return fmt.Errorf("store: invalid learner id %q", learner)
	}
	return db.programTx(ctx, "solution shown", learner, func(tx *sql.Tx, ts string) error {
		_, err := tx.ExecContext(ctx,
			`INSERT INTO program_progress (learner, lesson, program, attempts, passes, last_at, solution_at) VALUES (?1, ?2, ?3, 0, 0, ?4, ?4)
			 ON CONFLICT (learner, lesson, program) DO UPDATE SET solution_at = COALESCE(solution_at, excluded.solution_at)`,
			learner, lesson, program, ts)
		return err
	})
}

// hintCount is the hints revealed of program_progress row p.
const hintCount = `(SELECT COUNT(*) FROM program_hints h WHERE h.learner = p.learner AND h.lesson = p.lesson AND h.program = p.program)`

// RevealProgramHint records that learner revealed the next hint of
// lesson's program, which has `have` hints, and returns how many are
// revealed now. Hints are revealed in order, one at a time: the next is
// the count so far, and once all are revealed nothing more is recorded
// (a second click, a second tab).
func (db *DB) RevealProgramHint(ctx context.Context, learner, lesson, program string, have int) (revealed int, err error) {
	if !ValidLearnerID(learner) {
		return 0, fmt.Errorf("store: invalid learner id %q", learner)
	}
	err = db.programTx(ctx, "reveal hint", learner, func(tx *sql.Tx, ts string) error {
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM program_hints WHERE learner = ? AND lesson = ? AND program = ?`,
			learner, lesson, program).Scan(&revealed); err != nil {
			return err
		}
		if revealed >= have {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO program_hints (learner, lesson, program, hint, revealed_at) VALUES (?, ?, ?, ?, ?)`,
			learner, lesson, program, revealed, ts); err != nil {
			return err
		}
		revealed++
		// The progress row, so the gradebook lists a learner who read
		// hints before any run.
		_, err := tx.ExecContext(ctx,
			`INSERT INTO program_progress (learner, lesson, program, attempts, passes, last_at) VALUES (?1, ?2, ?3, 0, 0, ?4)
			 ON CONFLICT (learner, lesson, program) DO NOTHING`, learner, lesson, program, ts)
		return err
	})
	return revealed, err
}

// ProgramSubmission is the source of a learner's last Run of a program.
type ProgramSubmission struct {
	Lesson, Program string
	RunID           string // the run (runs.id) it started
	Source          string
	At              time.Time
}

// RecordProgramSubmission keeps source as learner's last submission of
// lesson's program, run as run (the one before is replaced).
func (db *DB) RecordProgramSubmission(ctx context.Context, learner, lesson, program, run, source string) error {
	if !ValidLearnerID(learner) {
		return fmt.Errorf("store: invalid learner id %q", learner)
	}
	return db.programTx(ctx, "program submission", learner, func(tx *sql.Tx, ts string) error {
		_, err := tx.ExecContext(ctx,
			`INSERT INTO program_submissions (learner, lesson, program, run_id, source, submitted_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
			 ON CONFLICT (learner, lesson, program) DO UPDATE SET run_id = excluded.run_id, source = excluded.source,
			   submitted_at = excluded.submitted_at`,
			learner, lesson, program, run, source, ts)
		return err
	})
}

// ProgramSubmissions returns learner's last submission of each program
// they ran, by lesson and program.
func (db *DB) ProgramSubmissions(ctx context.Context, learner string) ([]ProgramSubmission, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT lesson, program, run_id, source, submitted_at FROM program_submissions
		WHERE learner = ? ORDER BY lesson, program`, learner)
	if err != nil {
		return nil, fmt.Errorf("store: program submissions: %w", err)
	}
	defer rows.Close()
	var out []ProgramSubmission
	for rows.Next() {
		var s ProgramSubmission
		var at string
		if err := rows.Scan(&s.Lesson, &s.Program, &s.RunID, &s.Source, &at); err != nil {
			return nil, fmt.Errorf("store: program submissions: %w", err)
		}
		s.At, _ = parseTime(at)
		out = append(out, s)
	}
	return out, rows.Err()
}

// ResetProgramCode replaces learner's code of lesson's program by
// starter and keeps the code it replaced (ProgramCodeBeforeReset), when
// there was any and it was not the starter already.
func (db *DB) ResetProgramCode(ctx context.Context, learner, lesson, program, starter string) error {
	if !ValidLearnerID(learner) {
		return fmt.Errorf("store: invalid learner id %q", learner)
	}
	return db.programTx(ctx, "reset program code", learner, func(tx *sql.Tx, ts string) error {
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO program_resets (learner, lesson, program, source, reset_at)
			 SELECT learner, lesson, program, source, ?4 FROM program_code
			 WHERE learner = ?1 AND lesson = ?2 AND program = ?3 AND source != ?5
			 ON CONFLICT (learner, lesson, program) DO UPDATE SET source = excluded.source, reset_at = excluded.reset_at`,
			learner, lesson, program, ts, starter); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO program_code (learner, lesson, program, source, saved_at) VALUES (?1, ?2, ?3, ?4, ?5)
			 ON CONFLICT (learner, lesson, program) DO UPDATE SET source = excluded.source, saved_at = excluded.saved_at`,
			learner, lesson, program, starter, ts)
		return err
	})
}

// ProgramCodeBeforeReset returns the code learner's last reset of
// lesson's program replaced; ok is false when they never reset it.
func (db *DB) ProgramCodeBeforeReset(ctx context.Context, learner, lesson, program string) (source string, ok bool, err error) {
	err = db.r.QueryRowContext(ctx, `SELECT source FROM program_resets WHERE learner = ? AND lesson = ? AND program = ?`,
		learner, lesson, program).Scan(&source)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("store: program code before reset: %w", err)
	}
	return source, true, nil
}

// LessonPrograms returns learner's records on lesson's programs, by id.
func (db *DB) LessonPrograms(ctx context.Context, learner, lesson string) (map[string]ProgramProgress, error) {
	rows, err := db.r.QueryContext(ctx,
		`SELECT p.lesson, p.program, p.attempts, p.passes, p.passed_at, p.solution_at, `+hintCount+`
		 FROM program_progress p WHERE p.learner = ? AND p.lesson = ?`, learner, lesson)
	if err != nil {
		return nil, fmt.Errorf("store: lesson programs: %w", err)
	}
	out := map[string]ProgramProgress{}
	err = scanPrograms(rows, func(_ string, p ProgramProgress) { out[p.Program] = p })
	return out, err
}

// ProgramRow is one learner's record on one program (the gradebook).
type ProgramRow struct {
	Learner string
	ProgramProgress
}

// ClassProgramsIn returns every program record of the learners in scope,
// by learner, lesson and program.
func (db *DB) ClassProgramsIn(ctx context.Context, sc Scope) ([]ProgramRow, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT p.learner, p.lesson, p.program, p.attempts, p.passes,
		CASE WHEN `+sc.during("p.learner", "p.passed_at")+` THEN p.passed_at END, p.solution_at, `+hintCount+`
		FROM program_progress p WHERE `+sc.rowOf("p.learner", "1")+` ORDER BY p.learner, p.lesson, p.program`)
	if err != nil {
		return nil, fmt.Errorf("store: class programs: %w", err)
	}
	var out []ProgramRow
	err = scanProgramsWithLearner(rows, func(l string, p ProgramProgress) { out = append(out, ProgramRow{l, p}) })
	return out, err
}

func scanPrograms(rows *sql.Rows, fn func(string, ProgramProgress)) error {
	defer rows.Close()
	for rows.Next() {
		var p ProgramProgress
		var passed, sol sql.NullString
		if err := rows.Scan(&p.Lesson, &p.Program, &p.Attempts, &p.Passes, &passed, &sol, &p.Hints); err != nil {
			return fmt.Errorf("store: programs: %w", err)
		}
		p.PassedAt, p.SolutionAt = nullTime(passed), nullTime(sol)
		fn("", p)
	}
	return rows.Err()
}

func scanProgramsWithLearner(rows *sql.Rows, fn func(string, ProgramProgress)) error {
	defer rows.Close()
	for rows.Next() {
		var p ProgramProgress
		var learner string
		var passed, sol sql.NullString
		if err := rows.Scan(&learner, &p.Lesson, &p.Program, &p.Attempts, &p.Passes, &passed, &sol, &p.Hints); err != nil {
			return fmt.Errorf("store: programs: %w", err)
		}
		p.PassedAt, p.SolutionAt = nullTime(passed), nullTime(sol)
		fn(learner, p)
	}
	return rows.Err()
}

func nullTime(s sql.NullString) time.Time {
	if !s.Valid {
		return time.Time{}
	}
	t, _ := parseTime(s.String)
	return t
}

// programTx runs fn in a write transaction, learner's row made first.
func (db *DB) programTx(ctx context.Context, what, learner string, fn func(*sql.Tx, string) error) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	defer tx.Rollback()
	ts := now()
	if err := ensureLearner(ctx, tx, learner, ts); err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	if err := fn(tx, ts); err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	return nil
}

// LearnerInScope reports whether learner is one of the learners scope sc
// counts, as ClassLearnersIn lists them (program records are activity
// there too): an instructor's view of one learner stays within the
// classes they may see.
func (db *DB) LearnerInScope(ctx context.Context, sc Scope, learner string) (bool, error) {
	var in bool
	err := db.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM learners l WHERE l.id = ? AND `+sc.cond(activityExists)+`)`, learner).Scan(&in)
	if err != nil {
		return false, fmt.Errorf("store: learner in scope: %w", err)
	}
	return in, nil
}
