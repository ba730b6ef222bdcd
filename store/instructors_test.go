package store

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

func openInstructorsDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "lab.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// lowCost keeps bcrypt quick in tests; production uses bcrypt.DefaultCost.
func lowCost(t *testing.T) {
	old := PasswordCost
	PasswordCost = bcrypt.MinCost
	t.Cleanup(func() { PasswordCost = old })
}

func TestInstructorAccounts(t *testing.T) {
	lowCost(t)
	ctx := context.Background()
	db := openInstructorsDB(t)

	if n, err := db.InstructorCount(ctx); err != nil || n != 0 {
		t.Fatalf("count = %d, %v", n, err)
	}
	in, err := db.CreateInstructor(ctx, "Ada", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateInstructor(ctx, "ada", "another password"); !errors.Is(err, ErrInstructorTaken) {
		t.Fatalf("duplicate (case-insensitive) username: err = %v", err)
	}
	var ve *ValidationError
	if _, err := db.CreateInstructor(ctx, "bob", "short"); !errors.As(err, &ve) {
		t.Fatalf("short password: err = %v", err)
	}
	if _, err := db.CreateInstructor(ctx, "has space", "long enough password"); !errors.As(err, &ve) {
		t.Fatalf("username with space: err = %v", err)
	}

	got, err := db.Authenticate(ctx, "ADA", "correct horse battery")
	if err != nil || got.ID != in.ID || got.Username != "Ada" {
		t.Fatalf("authenticate = %+v, %v", got, err)
	}
	if _, err := db.Authenticate(ctx, "ada", "wrong password!"); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("wrong password: err = %v", err)
	}
	if _, err := db.Authenticate(ctx, "nobody", "wrong password!"); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("unknown user: err = %v", err)
	}
}

func TestInstructorSessions(t *testing.T) {
	lowCost(t)
	ctx := context.Background()
	db := openInstructorsDB(t)
	in, err := db.CreateInstructor(ctx, "ada", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	tok, exp, err := db.CreateSession(ctx, in.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if time.Until(exp) < 59*time.Minute {
		t.Errorf("expires %v", exp)
	}
	if got, err := db.SessionInstructor(ctx, tok); err != nil || got.ID != in.ID {
		t.Fatalf("session = %+v, %v", got, err)
	}
	// Only the hash is stored: the token itself is not in the table.
	var n int
	db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM instructor_sessions WHERE token_hash = ?`, tok).Scan(&n)
	if n != 0 {
		t.Error("the raw token is stored")
	}
	for _, forged := range []string{"", "x", tok + "x", string(make([]byte, 500))} {
		if _, err := db.SessionInstructor(ctx, forged); !errors.Is(err, ErrNoSession) {
			t.Errorf("forged %q: err = %v", forged, err)
		}
	}
	if err := db.DeleteSession(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SessionInstructor(ctx, tok); !errors.Is(err, ErrNoSession) {
		t.Fatalf("after logout: err = %v", err)
	}

	// Expired sessions are refused, then swept by the next login.
	old, _, err := db.CreateSession(ctx, in.ID, -time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SessionInstructor(ctx, old); !errors.Is(err, ErrNoSession) {
		t.Fatalf("expired: err = %v", err)
	}
	if _, _, err := db.CreateSession(ctx, in.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM instructor_sessions`).Scan(&n)
	if n != 1 {
		t.Errorf("sessions after sweep = %d, want 1", n)
	}

	// A new admin password ends the account's sessions.
	live, _, _ := db.CreateSession(ctx, in.ID, time.Hour)
	if _, err := db.SetInstructorPassword(ctx, "ada", "a brand new password"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SessionInstructor(ctx, live); !errors.Is(err, ErrNoSession) {
		t.Fatalf("session survived a password change: %v", err)
	}
	if _, err := db.Authenticate(ctx, "ada", "a brand new password"); err != nil {
		t.Fatal(err)
	}
}

func TestLoginFailures(t *testing.T) {
	ctx := context.Background()
	db := openInstructorsDB(t)
	since := time.Now().Add(-time.Minute)
	rec := func(ip, user string, ok bool) {
		t.Helper()
		if err := db.RecordLogin(ctx, ip, user, ok); err != nil {
			t.Fatal(err)
		}
	}
	rec("10.0.0.1", "ada", false)
	rec("10.0.0.1", "ADA", false)
	rec("10.0.0.1", "bob", false)
	rec("10.0.0.2", "ada", false)
	pair, byIP, err := db.LoginFailures(ctx, "10.0.0.1", "ada", since)
	if err != nil || pair != 2 || byIP != 3 {
		t.Fatalf("pair %d byIP %d err %v, want 2 3", pair, byIP, err)
	}
	// A success resets the pair's count (not the ip's).
	advanceClock(t, 2*time.Millisecond)
	rec("10.0.0.1", "ada", true)
	advanceClock(t, 2*time.Millisecond)
	rec("10.0.0.1", "ada", false)
	pair, byIP, _ = db.LoginFailures(ctx, "10.0.0.1", "ada", since)
	if pair != 1 || byIP != 4 {
		t.Fatalf("after success: pair %d byIP %d, want 1 4", pair, byIP)
	}
	// Outside the window nothing counts.
	pair, byIP, _ = db.LoginFailures(ctx, "10.0.0.1", "ada", time.Now().Add(time.Second))
	if pair != 0 || byIP != 0 {
		t.Fatalf("future window: pair %d byIP %d", pair, byIP)
	}
}

func TestSetupToken(t *testing.T) {
	lowCost(t)
	ctx := context.Background()
	db := openInstructorsDB(t)
	first, err := db.CreateSetupToken(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := db.CreateSetupToken(ctx, time.Hour) // a restart prints a new link
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := db.SetupTokenValid(ctx, first); ok {
		t.Error("the replaced token is still valid")
	}
	if ok, _ := db.SetupTokenValid(ctx, tok); !ok {
		t.Fatal("token not valid")
	}
	// Two browsers race with the same link: exactly one account.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, name := range []string{"ada", "bob"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = db.RedeemSetupToken(ctx, tok, name, "correct horse battery")
		}()
	}
	wg.Wait()
	okCount := 0
	for _, err := range errs {
		switch {
		case err == nil:
			okCount++
		case !errors.Is(err, ErrBadSetupToken):
			t.Errorf("unexpected error %v", err)
		}
	}
	if n, _ := db.InstructorCount(ctx); okCount != 1 || n != 1 {
		t.Fatalf("%d redeemed, %d instructors; want 1 and 1", okCount, n)
	}
	if ok, _ := db.SetupTokenValid(ctx, tok); ok {
		t.Error("token still valid after use")
	}

	// An expired token never works.
	db2 := openInstructorsDB(t)
	exp, _ := db2.CreateSetupToken(ctx, -time.Second)
	if _, err := db2.RedeemSetupToken(ctx, exp, "ada", "correct horse battery"); !errors.Is(err, ErrBadSetupToken) {
		t.Fatalf("expired token: %v", err)
	}
}

func TestDisplayName(t *testing.T) {
	ctx := context.Background()
	db := openInstructorsDB(t)
	id := NewLearnerID()
	if name, err := db.DisplayName(ctx, id); err != nil || name != "" {
		t.Fatalf("unknown learner: %q %v", name, err)
	}
	if err := db.SetDisplayName(ctx, id, "  李雷  "); err != nil {
		t.Fatal(err)
	}
	if name, _ := db.DisplayName(ctx, id); name != "李雷" {
		t.Fatalf("name = %q", name)
	}
	var ve *ValidationError
	if err := db.SetDisplayName(ctx, id, "bad\x00name"); !errors.As(err, &ve) {
		t.Fatalf("control char: %v", err)
	}
	if err := db.SetDisplayName(ctx, "not-an-id", "x"); err == nil {
		t.Fatal("invalid learner id accepted")
	}
}

// An unknown username must cost the same bcrypt work as a wrong password,
// or response times would tell which usernames exist. Measured as a ratio of
// the fastest of each in the same run (interleaved), not as a time limit:
// skipping the dummy comparison makes unknown users ~20-100x faster and
// fails this test. The fastest, not the median: on a loaded machine noise
// only ever adds time, and a median of a few samples caught it (ratio 3.1).
func TestAuthenticateTimingSimilar(t *testing.T) {
	old := PasswordCost
	PasswordCost = 5
	t.Cleanup(func() { PasswordCost = old })
	ctx := context.Background()
	db := openInstructorsDB(t)
	if _, err := db.CreateInstructor(ctx, "ada", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	measure := func(user string) time.Duration {
		start := time.Now()
		if _, err := db.Authenticate(ctx, user, "wrong password!"); !errors.Is(err, ErrBadCredentials) {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	measure("nobody") // build the dummy hash outside the measurement
	var unknown, wrong []time.Duration
	for range 21 {
		unknown = append(unknown, measure("nobody"))
		wrong = append(wrong, measure("ada"))
	}
	ratio := float64(slices.Min(unknown)) / float64(slices.Min(wrong))
	t.Logf("fastest unknown user %v, wrong password %v, ratio %.2f", slices.Min(unknown), slices.Min(wrong), ratio)
	if ratio < 0.5 || ratio > 2 {
		t.Fatalf("unknown user / wrong password time ratio %.2f, want within 0.5–2", ratio)
	}
}
