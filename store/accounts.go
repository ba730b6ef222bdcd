package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Account management beyond the first instructor: the command line
// (`labserver user add|passwd|remove|list`) and the instructor UI (invite
// links, change own password) use these.

var (
	// ErrNoInstructor: no account has this username.
	ErrNoInstructor = errors.New("store: no instructor with this username")
	// ErrLastInstructor: removing the account would leave nobody able to log in.
	ErrLastInstructor = errors.New("store: this is the last instructor account; add another one first")
	// ErrBadInvite: the invitation link is unknown, used or expired.
	ErrBadInvite = errors.New("store: the invitation link is invalid, used or expired")
)

// Instructors lists every account by username.
func (db *DB) Instructors(ctx context.Context) ([]Instructor, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id, username, created_at FROM instructors ORDER BY username COLLATE NOCASE`)
	if err != nil {
		return nil, fmt.Errorf("store: list instructors: %w", err)
	}
	defer rows.Close()
	var out []Instructor
	for rows.Next() {
		var (
			in Instructor
			ts string
		)
		if err := rows.Scan(&in.ID, &in.Username, &ts); err != nil {
			return nil, fmt.Errorf("store: list instructors: %w", err)
		}
		in.CreatedAt, _ = parseTime(ts)
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list instructors: %w", err)
	}
	return out, nil
}

// ChangePassword replaces the password of an existing account and ends its
// sessions except the one whose token is keepToken ("" ends them all).
// ErrNoInstructor when the username is unknown.
func (db *DB) ChangePassword(ctx context.Context, username, password, keepToken string) error {
	if err := CheckPassword(password); err != nil {
		return err
	}
	h, err := hashPassword(password)
	if err != nil {
		return err
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: change password: %w", err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.QueryRowContext(ctx, `UPDATE instructors SET password_hash = ? WHERE username = ? RETURNING id`,
		h, strings.TrimSpace(username)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNoInstructor
	}
	if err != nil {
		return fmt.Errorf("store: change password: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM instructor_sessions WHERE instructor_id = ? AND token_hash != ?`,
		id, tokenHash(keepToken)); err != nil {
		return fmt.Errorf("store: change password: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: change password: %w", err)
	}
	return nil
}

// ChangeOwnPassword checks the current password (ErrBadCredentials when it
// is wrong) before ChangePassword.
func (db *DB) ChangeOwnPassword(ctx context.Context, username, current, password, keepToken string) error {
	var h string
	err := db.r.QueryRowContext(ctx, `SELECT password_hash FROM instructors WHERE username = ?`, username).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNoInstructor
	}
	if err != nil {
		return fmt.Errorf("store: change password: %w", err)
	}
	if bcrypt.CompareHashAndPassword([]byte(h), []byte(current)) != nil {
		return ErrBadCredentials
	}
	return db.ChangePassword(ctx, username, password, keepToken)
}

// DeleteInstructor removes an account and its sessions. It refuses to
// remove the last account (ErrLastInstructor).
func (db *DB) DeleteInstructor(ctx context.Context, username string) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: remove instructor: %w", err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.QueryRowContext(ctx, `SELECT id FROM instructors WHERE username = ?`, strings.TrimSpace(username)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNoInstructor
	}
	if err != nil {
		return fmt.Errorf("store: remove instructor: %w", err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM instructors`).Scan(&n); err != nil {
		return fmt.Errorf("store: remove instructor: %w", err)
	}
	if n <= 1 {
		return ErrLastInstructor
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM instructor_sessions WHERE instructor_id = ?`, id); err != nil {
		return fmt.Errorf("store: remove instructor: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM instructors WHERE id = ?`, id); err != nil {
		return fmt.Errorf("store: remove instructor: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: remove instructor: %w", err)
	}
	return nil
}

// CreateInvite makes a one-time invitation, valid for ttl, and returns its
// token for the link. Expired invitations are swept on the way.
func (db *DB) CreateInvite(ctx context.Context, by int64, ttl time.Duration) (token string, expires time.Time, err error) {
	token, h := newToken()
	t := clock()
	expires = t.Add(ttl)
	if _, err := db.w.ExecContext(ctx, `DELETE FROM instructor_invites WHERE expires_at <= ?`, formatTime(t)); err != nil {
		return "", time.Time{}, fmt.Errorf("store: sweep invites: %w", err)
	}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO instructor_invites (token_hash, created_by, created_at, expires_at) VALUES (?, ?, ?, ?)`,
		h, by, formatTime(t), formatTime(expires)); err != nil {
		return "", time.Time{}, fmt.Errorf("store: create invite: %w", err)
	}
	return token, expires, nil
}

// InviteValid reports whether token is a live invitation.
func (db *DB) InviteValid(ctx context.Context, token string) (bool, error) {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM instructor_invites WHERE token_hash = ? AND expires_at > ?`,
		tokenHash(token), now()).Scan(&n); err != nil {
		return false, fmt.Errorf("store: invite: %w", err)
	}
	return n > 0, nil
}

// RedeemInvite creates an account with the invitation and uses it up, in
// one transaction (a taken username leaves the invitation usable).
func (db *DB) RedeemInvite(ctx context.Context, token, username, password string) (Instructor, error) {
	if err := CheckNewUsername(strings.TrimSpace(username)); err != nil {
		return Instructor{}, err
	}
	if err := CheckPassword(password); err != nil {
		return Instructor{}, err
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return Instructor{}, fmt.Errorf("store: redeem invite: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `DELETE FROM instructor_invites WHERE token_hash = ? AND expires_at > ?`, tokenHash(token), now())
	if err != nil {
		return Instructor{}, fmt.Errorf("store: redeem invite: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return Instructor{}, ErrBadInvite
	}
	in, err := createInstructor(ctx, tx, username, password)
	if err != nil {
		return Instructor{}, err
	}
	if err := tx.Commit(); err != nil {
		return Instructor{}, fmt.Errorf("store: redeem invite: %w", err)
	}
	return in, nil
}
