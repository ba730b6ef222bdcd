package store

import (
	"context"
	"fmt"
	"time"
)

// Quiz event kinds (quiz_events.kind).
const (
	QuizReveal = "reveal" // the learner chose "show answer"
	QuizFormat = "format" // a numeric answer in a form the server could not read
)

// maxQuizDetail bounds the text kept with a format error.
const maxQuizDetail = 80

// AddQuizEvent records that learner revealed a question's answer or sent a
// numeric answer in a form the server could not read (detail: the text).
func (db *DB) AddQuizEvent(ctx context.Context, learner, questionID, kind, detail string) error {
	if !ValidLearnerID(learner) {
		return fmt.Errorf("store: quiz event: invalid learner id %q", learner)
	}
	if r := []rune(detail); len(r) > maxQuizDetail {
		detail = string(r[:maxQuizDetail])
	}
	if kind == QuizReveal {
		defer db.quiz.invalidate(learner) // the summary tells reveals
	}
	ts := now()
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: quiz event: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO learners (id, created) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, learner, ts); err != nil {
		return fmt.Errorf("store: quiz event: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO quiz_events (learner, question_id, kind, detail, created_at) VALUES (?, ?, ?, ?, ?)`,
		learner, questionID, kind, detail, ts); err != nil {
		return fmt.Errorf("store: quiz event: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: quiz event: %w", err)
	}
	return nil
}

// Revealed reports whether learner chose "show answer" at questionID.
func (db *DB) Revealed(ctx context.Context, learner, questionID string) (bool, error) {
	var n int
	err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM quiz_events WHERE learner = ? AND question_id = ? AND kind = 'reveal'`,
		learner, questionID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("store: revealed: %w", err)
	}
	return n > 0, nil
}

// QuizEventCounts is, per question, how many learners revealed its answer
// and how many format errors were sent.
type QuizEventCounts struct {
	Reveals      int // distinct learners who chose "show answer"
	FormatErrors int // numeric answers the server could not read
}

// AllQuizEventCounts returns the counts of every question with any event.
func (db *DB) AllQuizEventCounts(ctx context.Context) (map[string]QuizEventCounts, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT question_id,
		COUNT(DISTINCT CASE WHEN kind = 'reveal' THEN learner END),
		SUM(CASE WHEN kind = 'format' THEN 1 ELSE 0 END)
		FROM quiz_events GROUP BY question_id`)
	if err != nil {
		return nil, fmt.Errorf("store: quiz event counts: %w", err)
	}
	defer rows.Close()
	out := map[string]QuizEventCounts{}
	for rows.Next() {
		var id string
		var c QuizEventCounts
		if err := rows.Scan(&id, &c.Reveals, &c.FormatErrors); err != nil {
			return nil, fmt.Errorf("store: quiz event counts: %w", err)
		}
		out[id] = c
	}
	return out, rows.Err()
}

// Reveal is one learner's "show answer" at one question.
type Reveal struct {
	Learner, QuestionID string
	At                  time.Time
}

// ClassRevealsIn returns every "show answer" of the learners in scope, by
// learner and question, then time (gradebook, exports; graded mode
// counts only those in a lesson's window, so each one is kept).
func (db *DB) ClassRevealsIn(ctx context.Context, sc Scope) ([]Reveal, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT learner, question_id, created_at FROM quiz_events
		WHERE kind = 'reveal' AND `+sc.rowOf("quiz_events.learner", "1")+`
		AND `+sc.during("quiz_events.learner", "quiz_events.created_at")+` ORDER BY learner, question_id, id`)
	if err != nil {
		return nil, fmt.Errorf("store: class reveals: %w", err)
	}
	defer rows.Close()
	var out []Reveal
	for rows.Next() {
		var (
			r  Reveal
			at string
		)
		if err := rows.Scan(&r.Learner, &r.QuestionID, &at); err != nil {
			return nil, fmt.Errorf("store: class reveals: %w", err)
		}
		r.At, _ = parseTime(at)
		out = append(out, r)
	}
	return out, rows.Err()
}
