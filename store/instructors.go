package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
)

// Errors of the instructor area. Callers show ErrBadCredentials for both an
// unknown user and a wrong password, so the login form reveals nothing.
var (
	ErrBadCredentials  = errors.New("store: wrong username or password")
	ErrNoSession       = errors.New("store: no such session or it has expired")
	ErrBadSetupToken   = errors.New("store: the setup link is invalid, used or expired")
	ErrInstructorTaken = errors.New("store: an instructor with this username exists")
)

// PasswordCost is the bcrypt cost of new password hashes. bcrypt (from
// golang.org/x/crypto, already a dependency) is deliberately slow; tests may
// lower the cost to keep the suite quick.
var PasswordCost = bcrypt.DefaultCost

// Password and username bounds. bcrypt only reads the first 72 bytes of a
// password, so longer ones are refused rather than silently truncated.
const (
	MinPasswordLen = 10
	MaxPasswordLen = 72
	MaxUsernameLen = 64
	MaxDisplayName = 60
)

// Instructor is an instructor account (never its password hash).
type Instructor struct {
	ID        int64
	Username  string
	Role      string // RoleInstructor or RoleTA
	CreatedAt time.Time
}

// The roles of an account.
const (
	RoleInstructor = "instructor" // everything
	RoleTA         = "ta"         // their classes' pages, read only; their own password
)

// TA reports whether the account is a teaching assistant's.
func (in Instructor) TA() bool { return in.Role == RoleTA }

// ValidationError is a user input problem (a too-short password…) whose
// message can be shown as is.
type ValidationError struct{ Message string }

func (e *ValidationError) Error() string { return e.Message }

// CheckUsername returns a *ValidationError when name is not a usable username.
func CheckUsername(name string) error {
	if name == "" || utf8.RuneCountInString(name) > MaxUsernameLen {
		return &ValidationError{fmt.Sprintf("the username must have 1 to %d characters", MaxUsernameLen)}
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return &ValidationError{"the username must not contain spaces"}
		}
	}
	return nil
}

// CheckPassword returns a *ValidationError when pw is not acceptable.
func CheckPassword(pw string) error {
	if utf8.RuneCountInString(pw) < MinPasswordLen {
		return &ValidationError{fmt.Sprintf("the password must have at least %d characters", MinPasswordLen)}
	}
	if len(pw) > MaxPasswordLen {
		return &ValidationError{fmt.Sprintf("the password must be at most %d bytes", MaxPasswordLen)}
	}
	return nil
}

func hashPassword(pw string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(pw), PasswordCost)
	if err != nil {
		return "", fmt.Errorf("store: hash password: %w", err)
	}
	return string(h), nil
}

// dummyHash is compared against when the username is unknown, so an unknown
// user costs the same bcrypt work as a wrong password (no timing oracle).
var dummyHash = struct {
	sync.Mutex
	cost int
	hash []byte
}{}

func dummy() []byte {
	dummyHash.Lock()
	defer dummyHash.Unlock()
	if dummyHash.hash == nil || dummyHash.cost != PasswordCost {
		h, err := bcrypt.GenerateFromPassword([]byte("no such instructor, no such password"), PasswordCost)
		if err != nil {
			panic(err) // only fails for a cost out of range: a programming error
		}
		dummyHash.hash, dummyHash.cost = h, PasswordCost
	}
	return dummyHash.hash
}

// InstructorCount is the number of instructor accounts.
func (db *DB) InstructorCount(ctx context.Context) (int, error) {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM instructors`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count instructors: %w", err)
	}
	return n, nil
}

// CreateInstructor adds an account. The username is case-insensitive.
func (db *DB) CreateInstructor(ctx context.Context, username, password string) (Instructor, error) {
	return createInstructor(ctx, db.w, username, password)
}

// CreateAccount adds an account with role (RoleInstructor or RoleTA).
func (db *DB) CreateAccount(ctx context.Context, username, password, role string) (Instructor, error) {
	if role != RoleInstructor && role != RoleTA {
		return Instructor{}, fmt.Errorf("store: create account: unknown role %q", role)
	}
	return createAccount(ctx, db.w, username, password, role)
}

type execQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func createInstructor(ctx context.Context, q execQuerier, username, password string) (Instructor, error) {
	return createAccount(ctx, q, username, password, RoleInstructor)
}

// createAccount is createInstructor with a role.
func createAccount(ctx context.Context, q execQuerier, username, password, role string) (Instructor, error) {
	username = strings.TrimSpace(username)
	if err := newUsername(ctx, q, username); err != nil {
		return Instructor{}, err
	}
	if err := CheckPassword(password); err != nil {
		return Instructor{}, err
	}
	h, err := hashPassword(password)
	if err != nil {
		return Instructor{}, err
	}
	return createInstructorRow(ctx, q, username, h, role)
}

// createInstructorRow writes the account's row, with its username's
// skeleton: ErrInstructorTaken when the name is taken (ASCII case
// folded), ErrUsernameLookalike when its skeleton is (the unique index
// of migration 0142).
func createInstructorRow(ctx context.Context, q execQuerier, username, h, role string) (Instructor, error) {
	ts := now()
	res, err := q.ExecContext(ctx,
		`INSERT INTO instructors (username, password_hash, created_at, role, username_skeleton) VALUES (?, ?, ?, ?, ?) ON CONFLICT (username) DO NOTHING`,
		username, h, ts, role, usernameSkeleton(username))
	if err != nil && strings.Contains(err.Error(), "instructors.username_skeleton") {
		return Instructor{}, ErrUsernameLookalike
	}
	if err != nil {
		return Instructor{}, fmt.Errorf("store: create instructor %q: %w", username, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Instructor{}, ErrInstructorTaken
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Instructor{}, fmt.Errorf("store: create instructor %q: %w", username, err)
	}
	created, _ := parseTime(ts)
	return Instructor{ID: id, Username: username, Role: role, CreatedAt: created}, nil
}

// SetInstructorPassword creates the account or replaces its password (used
// for LAB_ADMIN_PASSWORD, so an admin can always get back in by restarting
// with the variable set). Existing sessions of the account end.
func (db *DB) SetInstructorPassword(ctx context.Context, username, password string) (Instructor, error) {
	if err := CheckPassword(password); err != nil {
		return Instructor{}, err
	}
	var (
		in Instructor
		h  string
		ts string
	)
	err := db.w.QueryRowContext(ctx, `SELECT id, username, role, password_hash, created_at FROM instructors WHERE username = ?`,
		username).Scan(&in.ID, &in.Username, &in.Role, &h, &ts)
	if errors.Is(err, sql.ErrNoRows) {
		return db.CreateInstructor(ctx, username, password)
	}
	if err != nil {
		return Instructor{}, fmt.Errorf("store: set password of %q: %w", username, err)
	}
	in.CreatedAt, _ = parseTime(ts)
	if bcrypt.CompareHashAndPassword([]byte(h), []byte(password)) == nil {
		return in, nil // unchanged: keep sessions
	}
	nh, err := hashPassword(password)
	if err != nil {
		return Instructor{}, err
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return Instructor{}, fmt.Errorf("store: set password of %q: %w", username, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE instructors SET password_hash = ? WHERE id = ?`, nh, in.ID); err != nil {
		return Instructor{}, fmt.Errorf("store: set password of %q: %w", username, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM instructor_sessions WHERE instructor_id = ?`, in.ID); err != nil {
		return Instructor{}, fmt.Errorf("store: set password of %q: %w", username, err)
	}
	if err := tx.Commit(); err != nil {
		return Instructor{}, fmt.Errorf("store: set password of %q: %w", username, err)
	}
	return in, nil
}

// Authenticate checks a username and password. It always runs one bcrypt
// comparison, also for an unknown username, and returns ErrBadCredentials
// for both failures.
func (db *DB) Authenticate(ctx context.Context, username, password string) (Instructor, error) {
	var (
		in Instructor
		h  string
		ts string
	)
	err := db.r.QueryRowContext(ctx, `SELECT id, username, role, password_hash, created_at FROM instructors WHERE username = ?`,
		strings.TrimSpace(username)).Scan(&in.ID, &in.Username, &in.Role, &h, &ts)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Instructor{}, fmt.Errorf("store: authenticate: %w", err)
	}
	if errors.Is(err, sql.ErrNoRows) {
		bcrypt.CompareHashAndPassword(dummy(), []byte(password))
		return Instructor{}, ErrBadCredentials
	}
	if bcrypt.CompareHashAndPassword([]byte(h), []byte(password)) != nil {
		return Instructor{}, ErrBadCredentials
	}
	in.CreatedAt, _ = parseTime(ts)
	return in, nil
}

// newToken returns a random URL-safe token (256 bits) and the hash that is stored.
func newToken() (token, hash string) {
	var b [32]byte
	rand.Read(b[:])
	token = base64.RawURLEncoding.EncodeToString(b[:])
	return token, tokenHash(token)
}

func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// CreateSession starts a server-side session for the instructor and returns
// the token for the cookie. Expired sessions are swept on the way.
func (db *DB) CreateSession(ctx context.Context, instructorID int64, ttl time.Duration) (token string, expires time.Time, err error) {
	token, h := newToken()
	t := clock()
	expires = t.Add(ttl)
	if _, err := db.w.ExecContext(ctx, `DELETE FROM instructor_sessions WHERE expires_at <= ?`, formatTime(t)); err != nil {
		return "", time.Time{}, fmt.Errorf("store: sweep sessions: %w", err)
	}
	if _, err := db.w.ExecContext(ctx,
		`INSERT INTO instructor_sessions (token_hash, instructor_id, created_at, expires_at) VALUES (?, ?, ?, ?)`,
		h, instructorID, formatTime(t), formatTime(expires)); err != nil {
		return "", time.Time{}, fmt.Errorf("store: create session: %w", err)
	}
	return token, expires, nil
}

// SessionInstructor returns the instructor of a live session, or ErrNoSession
// for an unknown, forged or expired token.
func (db *DB) SessionInstructor(ctx context.Context, token string) (Instructor, error) {
	if token == "" || len(token) > 100 {
		return Instructor{}, ErrNoSession
	}
	var (
		in Instructor
		ts string
	)
	err := db.r.QueryRowContext(ctx, `SELECT i.id, i.username, i.role, i.created_at
		FROM instructor_sessions s JOIN instructors i ON i.id = s.instructor_id
		WHERE s.token_hash = ? AND s.expires_at > ?`, tokenHash(token), now()).Scan(&in.ID, &in.Username, &in.Role, &ts)
	if errors.Is(err, sql.ErrNoRows) {
		return Instructor{}, ErrNoSession
	}
	if err != nil {
		return Instructor{}, fmt.Errorf("store: session: %w", err)
	}
	in.CreatedAt, _ = parseTime(ts)
	return in, nil
}

// DeleteSession ends a session (logout). An unknown token is not an error.
func (db *DB) DeleteSession(ctx context.Context, token string) error {
	if _, err := db.w.ExecContext(ctx, `DELETE FROM instructor_sessions WHERE token_hash = ?`, tokenHash(token)); err != nil {
		return fmt.Errorf("store: delete session: %w", err)
	}
	return nil
}

// RecordLogin remembers a login attempt for the rate limit. Attempts older
// than a day are dropped on the way: the limit only looks back minutes.
func (db *DB) RecordLogin(ctx context.Context, ip, username string, ok bool) error {
	t := clock()
	if _, err := db.w.ExecContext(ctx, `DELETE FROM login_attempts WHERE at < ?`, formatTime(t.Add(-24*time.Hour))); err != nil {
		return fmt.Errorf("store: sweep login attempts: %w", err)
	}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO login_attempts (ip, username, ok, at) VALUES (?, ?, ?, ?)`,
		ip, strings.TrimSpace(username), ok, formatTime(t)); err != nil {
		return fmt.Errorf("store: record login: %w", err)
	}
	return nil
}

// LoginFailures counts failed logins since `since`: for the ip and username
// pair (after its last success), and for the ip across all usernames.
func (db *DB) LoginFailures(ctx context.Context, ip, username string, since time.Time) (pair, byIP int, err error) {
	s := formatTime(since)
	err = db.r.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM login_attempts WHERE ip = ?1 AND username = ?2 AND ok = 0
			AND at > MAX(?3, COALESCE((SELECT MAX(at) FROM login_attempts WHERE ip = ?1 AND username = ?2 AND ok = 1), ''))),
		(SELECT COUNT(*) FROM login_attempts WHERE ip = ?1 AND ok = 0 AND at > ?3)`,
		ip, strings.TrimSpace(username), s).Scan(&pair, &byIP)
	if err != nil {
		return 0, 0, fmt.Errorf("store: count login failures: %w", err)
	}
	return pair, byIP, nil
}

// AccountFailures counts the failed logins for username since `since`
// (after its last success), from any address, and returns the time of the
// newest one: the login throttle delays the next try by their number.
func (db *DB) AccountFailures(ctx context.Context, username string, since time.Time) (n int, last time.Time, err error) {
	var lastS sql.NullString
	err = db.r.QueryRowContext(ctx, `SELECT COUNT(*), MAX(at) FROM login_attempts WHERE username = ?1 AND ok = 0
		AND at > MAX(?2, COALESCE((SELECT MAX(at) FROM login_attempts WHERE username = ?1 AND ok = 1), ''))`,
		strings.TrimSpace(username), formatTime(since)).Scan(&n, &lastS)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("store: count account login failures: %w", err)
	}
	if lastS.Valid {
		if last, err = parseTime(lastS.String); err != nil {
			return 0, time.Time{}, fmt.Errorf("store: account login failures: %w", err)
		}
	}
	return n, last, nil
}

// ErrRosterName: the learner holds a roster seat, whose name is the roster's.
var ErrRosterName = errors.New("store: the name comes from the class roster")

// checkPlainText refuses control and text-direction characters in a name:
// direction controls (U+202E RIGHT-TO-LEFT OVERRIDE…) would let a name
// reorder what follows it on the dashboard and spoof another.
func checkPlainText(s string) error {
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return &ValidationError{"a name must not contain control or text-direction characters"}
		}
	}
	return nil
}

// SetDisplayName sets the name a learner shows to instructors ("" clears
// it); ErrRosterName for a learner who holds a roster seat.
func (db *DB) SetDisplayName(ctx context.Context, learner, name string) error {
	if !ValidLearnerID(learner) {
		return fmt.Errorf("store: set display name: invalid learner id %q", learner)
	}
	name = strings.TrimSpace(name)
	if utf8.RuneCountInString(name) > MaxDisplayName {
		return &ValidationError{fmt.Sprintf("the name must have at most %d characters", MaxDisplayName)}
	}
	if err := checkPlainText(name); err != nil {
		return err
	}
	var seats int
	// A roster seat's name is the roster's; an LMS user's is the LMS's.
	if err := db.r.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM roster_seats WHERE learner = ?1)
		+ (SELECT COUNT(*) FROM lti_users WHERE learner = ?1)`, learner).Scan(&seats); err != nil {
		return fmt.Errorf("store: set display name: %w", err)
	}
	if seats > 0 {
		return ErrRosterName
	}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO learners (id, created, display_name) VALUES (?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET display_name = excluded.display_name`, learner, now(), name); err != nil {
		return fmt.Errorf("store: set display name: %w", err)
	}
	return nil
}

// DisplayName is the learner's display name ("" when unset or unknown).
func (db *DB) DisplayName(ctx context.Context, learner string) (string, error) {
	var name string
	err := db.r.QueryRowContext(ctx, `SELECT display_name FROM learners WHERE id = ?`, learner).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store: display name: %w", err)
	}
	return name, nil
}
