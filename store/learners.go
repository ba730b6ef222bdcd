package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// LearnerIDLen is the length of a learner id: 128 random bits in hex.
const LearnerIDLen = 32

// NewLearnerID returns a fresh random learner id (128 bits, hex).
func NewLearnerID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return short)
	return hex.EncodeToString(b[:])
}

// ValidLearnerID reports whether s has the form NewLearnerID produces, so a
// cookie from elsewhere can never become a row key.
func ValidLearnerID(s string) bool {
	if len(s) != LearnerIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// EnsureLearner records the learner if it is not known yet. Learners are
// created lazily, at their first write, so crawlers and one-off visits do
// not fill the table. Other areas (attempts, runs) call it before inserting
// rows that reference learners.
func (db *DB) EnsureLearner(ctx context.Context, id string) error {
	if !ValidLearnerID(id) {
		return fmt.Errorf("store: invalid learner id %q", id)
	}
	if _, err := db.w.ExecContext(ctx,
		`INSERT INTO learners (id, created) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, id, now()); err != nil {
		return fmt.Errorf("store: ensure learner: %w", err)
	}
	return nil
}

// LearnerKnown reports whether the learner has a row, i.e. has written
// something before. The web layer bounds how many new learners one client
// address may create. It is asked on every write and lesson view, so a
// learner once seen known is remembered (MergeLearners, which deletes a
// row, forgets it).
func (db *DB) LearnerKnown(ctx context.Context, id string) (bool, error) {
	if _, ok := db.known.get(id); ok {
		return true, nil
	}
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM learners WHERE id = ?`, id).Scan(&n); err != nil {
		return false, fmt.Errorf("store: learner known: %w", err)
	}
	if n > 0 {
		db.known.put(id, struct{}{}, db.known.generation())
	}
	return n > 0, nil
}
