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
	rows, err := db.r.QueryContext(ctx, `SELECT id, username, role, created_at FROM instructors ORDER BY username COLLATE NOCASE`)
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
		if err := rows.Scan(&in.ID, &in.Username, &in.Role, &ts); err != nil {
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
// remove the last account with the instructor role (ErrLastInstructor):
// TAs alone could manage nothing.
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
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM instructors WHERE role = 'instructor' AND id != ?`, id).Scan(&n); err != nil {
		return fmt.Errorf("store: remove instructor: %w", err)
	}
	if n == 0 {
		var ta bool
		if err := tx.QueryRowContext(ctx, `SELECT role = 'ta' FROM instructors WHERE id = ?`, id).Scan(&ta); err != nil {
			return fmt.Errorf("store: remove instructor: %w", err)
		}
		if !ta {
			return ErrLastInstructor
		}
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

// CreateInvite makes a one-time invitation for an instructor, valid for
// ttl, and returns its token for the link. Expired invitations are swept
// on the way.
func (db *DB) CreateInvite(ctx context.Context, by int64, ttl time.Duration) (token string, expires time.Time, err error) {
	return db.CreateRoleInvite(ctx, by, ttl, RoleInstructor, 0)
}

// CreateRoleInvite is CreateInvite for a role; a TA's invitation names the
// class (cohort) the TA will see.
func (db *DB) CreateRoleInvite(ctx context.Context, by int64, ttl time.Duration, role string, cohort int64) (token string, expires time.Time, err error) {
	if role != RoleInstructor && role != RoleTA {
		return "", time.Time{}, &ValidationError{"unknown role " + role}
	}
	var cohortArg any
	if role == RoleTA {
		if _, err := db.Cohort(ctx, cohort); err != nil {
			return "", time.Time{}, &ValidationError{"a TA's invitation names a class"}
		}
		cohortArg = cohort
	}
	return db.createInvite(ctx, by, ttl, role, cohortArg, false)
}

// CreateSetupToken makes the first-start setup link: an invitation for
// the first instructor (no creator; valid only while no instructor
// exists), replacing any earlier one, valid for ttl. It returns the token
// for the one-time link.
func (db *DB) CreateSetupToken(ctx context.Context, ttl time.Duration) (string, error) {
	token, _, err := db.createInvite(ctx, 0, ttl, RoleInstructor, nil, true)
	return token, err
}

// createInvite is the one way an invitation is made: a random token whose
// SHA-256 is stored, with its role, class and expiry; expired invitations
// are swept on the way, and a first-account invitation replaces the last.
func (db *DB) createInvite(ctx context.Context, by int64, ttl time.Duration, role string, cohort any, first bool) (token string, expires time.Time, err error) {
	token, h := newToken()
	t := clock()
	expires = t.Add(ttl)
	var byArg any
	if by != 0 {
		byArg = by
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("store: create invite: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM instructor_invites WHERE expires_at <= ? OR (first_account = 1 AND ?)`, formatTime(t), first); err != nil {
		return "", time.Time{}, fmt.Errorf("store: sweep invites: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO instructor_invites (token_hash, created_by, created_at, expires_at, role, cohort_id, first_account)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, h, byArg, formatTime(t), formatTime(expires), role, cohort, first); err != nil {
		return "", time.Time{}, fmt.Errorf("store: create invite: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return "", time.Time{}, fmt.Errorf("store: create invite: %w", err)
	}
	return token, expires, nil
}

// Invite is a pending invitation (never its token: only a hash is kept).
type Invite struct {
	ID        int64
	By        string // the username who made it ("" when that account is gone)
	Role      string
	Cohort    string // a TA's class name
	CreatedAt time.Time
	ExpiresAt time.Time
}

const inviteCols = `v.rowid, COALESCE(i.username, ''), v.role, COALESCE(c.name, ''), v.created_at, v.expires_at
	FROM instructor_invites v LEFT JOIN instructors i ON i.id = v.created_by LEFT JOIN cohorts c ON c.id = v.cohort_id`

func scanInvite(sc scanner) (Invite, error) {
	var (
		v                Invite
		created, expires string
	)
	if err := sc.Scan(&v.ID, &v.By, &v.Role, &v.Cohort, &created, &expires); err != nil {
		return Invite{}, err
	}
	v.CreatedAt, _ = parseTime(created)
	v.ExpiresAt, _ = parseTime(expires)
	return v, nil
}

// Invites lists the pending (unused, unexpired) invitations, newest first
// (not the first-start setup link).
func (db *DB) Invites(ctx context.Context) ([]Invite, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+inviteCols+` WHERE v.expires_at > ? AND v.first_account = 0 ORDER BY v.created_at DESC`, now())
	return collect("invites", rows, err, scanInvite)
}

// InviteByToken is the pending invitation of a token (ErrBadInvite when
// used, revoked, expired or unknown).
func (db *DB) InviteByToken(ctx context.Context, token string) (Invite, error) {
	return db.Invitation(ctx, token, false)
}

// Invitation is the live invitation of a token, of the first-start kind
// (first: the setup link) or the other (ErrBadInvite when used, revoked,
// replaced, expired or unknown, and for a setup link once an instructor
// exists). The setup page and the invitation page both ask it.
func (db *DB) Invitation(ctx context.Context, token string, first bool) (Invite, error) {
	v, err := scanInvite(db.r.QueryRowContext(ctx, `SELECT `+inviteCols+` WHERE `+liveInvite,
		tokenHash(token), first, now()))
	if errors.Is(err, sql.ErrNoRows) {
		return Invite{}, ErrBadInvite
	}
	if err != nil {
		return Invite{}, fmt.Errorf("store: invite: %w", err)
	}
	return v, nil
}

// RevokeInvite deletes a pending invitation: its link stops working.
func (db *DB) RevokeInvite(ctx context.Context, id int64) error {
	res, err := db.w.ExecContext(ctx, `DELETE FROM instructor_invites WHERE rowid = ?`, id)
	if err != nil {
		return fmt.Errorf("store: revoke invite: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrBadInvite
	}
	return nil
}

// InviteValid reports whether token is a live invitation.
func (db *DB) InviteValid(ctx context.Context, token string) (bool, error) {
	return db.inviteValid(ctx, token, false)
}

// SetupTokenValid reports whether token is the live setup link and no
// instructor exists yet.
func (db *DB) SetupTokenValid(ctx context.Context, token string) (bool, error) {
	return db.inviteValid(ctx, token, true)
}

// liveInvite is the condition on instructor_invites of a live invitation
// of a kind (?2: first-account or not) with token hash ?1; a first-account
// one lives only while no instructor exists.
const liveInvite = `token_hash = ?1 AND expires_at > ?3 AND first_account = ?2
	AND (first_account = 0 OR NOT EXISTS (SELECT 1 FROM instructors))`

func (db *DB) inviteValid(ctx context.Context, token string, first bool) (bool, error) {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM instructor_invites WHERE `+liveInvite,
		tokenHash(token), first, now()).Scan(&n); err != nil {
		return false, fmt.Errorf("store: invite: %w", err)
	}
	return n > 0, nil
}

// RedeemInvite creates an account with the invitation and uses it up, in
// one transaction (a taken username leaves the invitation usable).
func (db *DB) RedeemInvite(ctx context.Context, token, username, password string) (Instructor, error) {
	return db.Redeem(ctx, token, username, password, false)
}

// RedeemSetupToken creates the first instructor with the setup link and
// uses it up, in one transaction: two browsers racing with the same link
// get one account (ErrBadSetupToken for the other).
func (db *DB) RedeemSetupToken(ctx context.Context, token, username, password string) (Instructor, error) {
	in, err := db.Redeem(ctx, token, username, password, true)
	if errors.Is(err, ErrBadInvite) {
		return Instructor{}, ErrBadSetupToken
	}
	return in, err
}

// Redeem is the one way an invitation is used, of the first-start kind
// (first) or the other: the account is made with the invitation's role (a
// TA joins the invitation's class) and the invitation deleted, in one
// transaction (a taken username leaves the invitation usable);
// ErrBadInvite when the token is not a live invitation of that kind.
func (db *DB) Redeem(ctx context.Context, token, username, password string, first bool) (Instructor, error) {
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
	var (
		role   string
		cohort sql.NullInt64
	)
	err = tx.QueryRowContext(ctx, `DELETE FROM instructor_invites WHERE `+liveInvite+` RETURNING role, cohort_id`,
		tokenHash(token), first, now()).Scan(&role, &cohort)
	if errors.Is(err, sql.ErrNoRows) {
		return Instructor{}, ErrBadInvite
	}
	if err != nil {
		return Instructor{}, fmt.Errorf("store: redeem invite: %w", err)
	}
	in, err := createAccount(ctx, tx, username, password, role)
	if err != nil {
		return Instructor{}, err
	}
	if role == RoleTA && cohort.Valid {
		if _, err := tx.ExecContext(ctx, `INSERT INTO cohort_tas (cohort_id, instructor_id) VALUES (?, ?)`, cohort.Int64, in.ID); err != nil {
			return Instructor{}, fmt.Errorf("store: redeem invite: %w", err)
		}
	}
	if first { // a first account ends every setup link
		if _, err := tx.ExecContext(ctx, `DELETE FROM instructor_invites WHERE first_account = 1`); err != nil {
			return Instructor{}, fmt.Errorf("store: redeem invite: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return Instructor{}, fmt.Errorf("store: redeem invite: %w", err)
	}
	return in, nil
}

// TACohorts lists the ids of the classes a TA is assigned to, oldest first.
func (db *DB) TACohorts(ctx context.Context, instructor int64) ([]int64, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT t.cohort_id FROM cohort_tas t JOIN cohorts c ON c.id = t.cohort_id
		WHERE t.instructor_id = ? ORDER BY c.created_at, c.id`, instructor)
	if err != nil {
		return nil, fmt.Errorf("store: TA classes: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: TA classes: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// CohortTAs maps each class id to the usernames of its TAs.
func (db *DB) CohortTAs(ctx context.Context) (map[int64][]Instructor, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT t.cohort_id, i.id, i.username, i.role, i.created_at
		FROM cohort_tas t JOIN instructors i ON i.id = t.instructor_id ORDER BY i.username COLLATE NOCASE`)
	if err != nil {
		return nil, fmt.Errorf("store: class TAs: %w", err)
	}
	defer rows.Close()
	out := map[int64][]Instructor{}
	for rows.Next() {
		var (
			c  int64
			in Instructor
			ts string
		)
		if err := rows.Scan(&c, &in.ID, &in.Username, &in.Role, &ts); err != nil {
			return nil, fmt.Errorf("store: class TAs: %w", err)
		}
		in.CreatedAt, _ = parseTime(ts)
		out[c] = append(out[c], in)
	}
	return out, rows.Err()
}

// SetCohortTA assigns (or, with on false, unassigns) a TA account to a class.
func (db *DB) SetCohortTA(ctx context.Context, cohort, instructor int64, on bool) error {
	if !on {
		_, err := db.w.ExecContext(ctx, `DELETE FROM cohort_tas WHERE cohort_id = ? AND instructor_id = ?`, cohort, instructor)
		return err
	}
	res, err := db.w.ExecContext(ctx, `INSERT INTO cohort_tas (cohort_id, instructor_id)
		SELECT ?, id FROM instructors WHERE id = ? AND role = 'ta' AND EXISTS (SELECT 1 FROM cohorts WHERE id = ?)
		ON CONFLICT DO NOTHING`, cohort, instructor, cohort)
	if err != nil {
		return fmt.Errorf("store: assign TA: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var exists int
		db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM cohort_tas WHERE cohort_id = ? AND instructor_id = ?`, cohort, instructor).Scan(&exists)
		if exists == 0 {
			return ErrNoInstructor
		}
	}
	return nil
}
