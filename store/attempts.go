package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrAttemptNotFound is returned by Attempt for an id that does not exist
// or belongs to another learner.
var ErrAttemptNotFound = errors.New("store: no such attempt")

// Attempt is one stored quiz submission. Answer is the JSON the quiz package
// encodes (quiz.EncodeAnswer); Correct is as graded when it was submitted.
type Attempt struct {
	ID         int64
	Learner    string
	QuestionID string
	Answer     json.RawMessage
	Correct    bool
	// Seen: the answer was on the learner's screen when they sent this
	// (quiz.Policy.Seen): never a clean success, whatever Correct says.
	Seen      bool
	CreatedAt time.Time
}

// Clean reports whether the attempt earns credit: right, and not made with
// the answer shown. It is the practice rule's one definition: the
// gradebook, the LMS scores and LearnerQuizSummary (EverCorrect) all ask it.
func (a Attempt) Clean() bool { return a.Correct && !a.Seen }

// QuestionStatus is a learner's record on one question.
type QuestionStatus struct {
	Attempts int
	Latest   Attempt  // the most recent attempt
	Best     *Attempt // the most recent clean correct attempt (Attempt.Clean); nil if none
	Seen     int      // attempts made with the answer shown
}

// AddAttempt stores a graded submission (creating the learner row if this is
// the learner's first write) and returns it with its id and time. seen says
// the answer was shown to the learner before (quiz.Policy.Seen).
func (db *DB) AddAttempt(ctx context.Context, learner, questionID string, answer json.RawMessage, correct, seen bool) (Attempt, error) {
	a, err := newAttempt(learner, questionID, answer, correct, seen)
	if err != nil {
		return Attempt{}, err
	}
	defer db.quiz.invalidate(learner)
	ts := now()
	err = db.write(ctx, func(tx *sql.Tx) (err error) {
		a.ID, err = insertAttempt(ctx, tx, a, ts)
		return err
	})
	if err != nil {
		return Attempt{}, fmt.Errorf("store: add attempt at %s: %w", questionID, err)
	}
	a.CreatedAt, _ = parseTime(ts)
	return a, nil
}

// Attempt returns the learner's attempt with id. Another learner's attempt
// is ErrAttemptNotFound too, so attempt ids in URLs reveal nothing.
func (db *DB) Attempt(ctx context.Context, learner string, id int64) (Attempt, error) {
	row := db.r.QueryRowContext(ctx, `SELECT `+attemptCols+` FROM attempts WHERE id = ? AND learner = ?`, id, learner)
	a, err := scanAttempt(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Attempt{}, ErrAttemptNotFound
	}
	if err != nil {
		return Attempt{}, fmt.Errorf("store: attempt %d: %w", id, err)
	}
	return a, nil
}

// LearnerQuestionStatus returns the learner's best and latest attempt for
// each of questionIDs that has any (a lesson page passes its questions).
func (db *DB) LearnerQuestionStatus(ctx context.Context, learner string, questionIDs []string) (map[string]QuestionStatus, error) {
	out := map[string]QuestionStatus{}
	if len(questionIDs) == 0 {
		return out, nil
	}
	// One pass in time order: the last row seen per question is the latest.
	args := make([]any, 0, len(questionIDs)+1)
	args = append(args, learner)
	for _, id := range questionIDs {
		args = append(args, id)
	}
	rows, err := db.r.QueryContext(ctx, `SELECT `+attemptCols+` FROM attempts
		WHERE learner = ? AND question_id IN (`+questionPlaceholders(len(questionIDs))+`) ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: learner attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, fmt.Errorf("store: learner attempts: %w", err)
		}
		st := out[a.QuestionID]
		st.Attempts++
		st.Latest = a
		if a.Seen {
			st.Seen++
		}
		if a.Clean() {
			best := a
			st.Best = &best
		}
		out[a.QuestionID] = st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: learner attempts: %w", err)
	}
	return out, nil
}

// QuestionSummary is a learner's record on one question as a lesson page
// shows it under the question's form.
type QuestionSummary struct {
	Attempts      int
	EverCorrect   bool // at least one attempt was right and clean (Attempt.Clean)
	LatestCorrect bool // the most recent attempt was right
	Revealed      bool // the learner chose "show answer" here
	Seen          int  // attempts made with the answer shown
}

// LearnerQuizSummary returns the learner's record on every question they
// attempted, by question id, from one query. Every lesson page view reads
// it, so it is cached per learner until the learner's next AddAttempt. The
// map is shared with the cache: callers must not modify it.
func (db *DB) LearnerQuizSummary(ctx context.Context, learner string) (map[string]QuestionSummary, error) {
	return db.quiz.load(learner, func() (map[string]QuestionSummary, error) {
		// The attempts_learner_question index answers both the groups and
		// each group's latest attempt.
		// Reveals without any attempt are records too (the question
		// shows its answer after a reload).
		// The practice rule is Attempt.Clean alone: the query hands over
		// which (correct, seen) pairs the learner's attempts had (at most
		// four, coded correct*2+seen) and Clean judges them.
		rows, err := db.r.QueryContext(ctx, `SELECT a.question_id, COUNT(*), GROUP_CONCAT(DISTINCT (a.correct != 0) * 2 + (a.seen != 0)),
			(SELECT l.correct FROM attempts l WHERE l.learner = a.learner AND l.question_id = a.question_id
			 ORDER BY l.id DESC LIMIT 1), SUM(a.seen),
			EXISTS (SELECT 1 FROM quiz_events e WHERE e.learner = a.learner AND e.question_id = a.question_id AND e.kind = 'reveal')
			FROM attempts a WHERE a.learner = ? GROUP BY a.question_id
			UNION ALL
			SELECT DISTINCT e.question_id, 0, '', 0, 0, 1 FROM quiz_events e
			WHERE e.learner = ? AND e.kind = 'reveal'
			AND NOT EXISTS (SELECT 1 FROM attempts a WHERE a.learner = e.learner AND a.question_id = e.question_id)`, learner, learner)
		if err != nil {
			return nil, fmt.Errorf("store: quiz summary: %w", err)
		}
		defer rows.Close()
		out := map[string]QuestionSummary{}
		for rows.Next() {
			var (
				id, pairs string
				s         QuestionSummary
			)
			if err := rows.Scan(&id, &s.Attempts, &pairs, &s.LatestCorrect, &s.Seen, &s.Revealed); err != nil {
				return nil, fmt.Errorf("store: quiz summary: %w", err)
			}
			for _, p := range strings.Split(pairs, ",") {
				code, err := strconv.Atoi(p)
				if err == nil && (Attempt{Correct: code&2 != 0, Seen: code&1 != 0}).Clean() {
					s.EverCorrect = true
				}
			}
			out[id] = s
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("store: quiz summary: %w", err)
		}
		return out, nil
	})
}

// CorrectQuestions returns the ids of questions the learner answered
// correctly at least once without the answer shown (the course home's
// checkpoint scores). Every
// home page view asks: it is read from LearnerQuizSummary's cache.
func (db *DB) CorrectQuestions(ctx context.Context, learner string) (map[string]bool, error) {
	sum, err := db.LearnerQuizSummary(ctx, learner)
	if err != nil {
		return nil, fmt.Errorf("store: correct questions: %w", err)
	}
	out := make(map[string]bool, len(sum))
	for id, s := range sum {
		if s.EverCorrect {
			out[id] = true
		}
	}
	return out, nil
}

// AllAttempts returns every attempt of every learner in time order, the
// input of quiz.ComputeStats. With questionIDs, only those questions.
func (db *DB) AllAttempts(ctx context.Context, questionIDs ...string) ([]Attempt, error) {
	q := `SELECT ` + attemptCols + ` FROM attempts`
	args := make([]any, len(questionIDs))
	if len(questionIDs) > 0 {
		q += ` WHERE question_id IN (` + questionPlaceholders(len(questionIDs)) + `)`
		for i, id := range questionIDs {
			args[i] = id
		}
	}
	rows, err := db.r.QueryContext(ctx, q+` ORDER BY id`, args...)
	return collect("all attempts", rows, err, scanAttempt)
}

const attemptCols = `id, learner, question_id, answer, correct, seen, created_at`

func scanAttempt(s scanner) (Attempt, error) {
	var (
		a       Attempt
		answer  string
		created string
	)
	if err := s.Scan(&a.ID, &a.Learner, &a.QuestionID, &answer, &a.Correct, &a.Seen, &created); err != nil {
		return Attempt{}, err
	}
	a.Answer = json.RawMessage(answer)
	t, err := parseTime(created)
	if err != nil {
		return Attempt{}, fmt.Errorf("attempt %d created_at: %w", a.ID, err)
	}
	a.CreatedAt = t
	return a, nil
}

// questionPlaceholders is "?, ?, …" for an IN list of n values.
func questionPlaceholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// insertAttempt stores a (its learner made if new) at ts in tx and
// returns its id: the one insert of an answer, practice or graded.
func insertAttempt(ctx context.Context, tx *sql.Tx, a Attempt, ts string) (int64, error) {
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO learners (id, created) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, a.Learner, ts); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx,
		`INSERT INTO attempts (learner, question_id, answer, correct, seen, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		a.Learner, a.QuestionID, string(a.Answer), a.Correct, a.Seen, ts)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// newAttempt checks an answer before it is stored, practice or graded:
// a valid learner id and an answer that is JSON.
func newAttempt(learner, questionID string, answer json.RawMessage, correct, seen bool) (Attempt, error) {
	if !ValidLearnerID(learner) {
		return Attempt{}, fmt.Errorf("store: add attempt: invalid learner id %q", learner)
	}
	if !json.Valid(answer) {
		return Attempt{}, fmt.Errorf("store: add attempt at %s: answer is not JSON", questionID)
	}
	return Attempt{Learner: learner, QuestionID: questionID, Answer: answer, Correct: correct, Seen: seen}, nil
}
