package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestHomoglyphUsernames is issue 28, fall 10: an invitation accepted with
// the username "аdmin" (a Cyrillic а) sat in the account list looking like
// admin. New names are letters of one script (Latin may mix with Chinese,
// kana, Hangul), digits 0-9, '.', '_', '-', and must not look like an
// existing account's; an account made before the rule keeps its name and
// logs in.
func TestHomoglyphUsernames(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	const pw = "correct horse battery"
	admin, err := db.CreateInstructor(ctx, "admin", pw)
	if err != nil {
		t.Fatal(err)
	}
	// An account from before the rule, written as the old code allowed.
	if _, err := db.w.ExecContext(ctx, `INSERT INTO instructors (username, password_hash, created_at) VALUES (?, (SELECT password_hash FROM instructors WHERE id = ?), ?)`,
		"old★name", admin.ID, now()); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]error{
		"аdmin":       &ValidationError{}, // Cyrillic а among Latin letters
		"ａｄｍｉｎ":       &ValidationError{}, // full-width
		"adm\u200din": &ValidationError{}, // a zero-width joiner
		"admin١":      &ValidationError{}, // an Arabic-Indic digit
		"аԁтіո":       &ValidationError{}, // Cyrillic and Armenian
		"ΑDMIN":       &ValidationError{}, // Greek Α with Latin
		"аdmіn":       &ValidationError{}, // Cyrillic а and і
		"сое":         nil,                // all Cyrillic: fine, unless it looks like a name that exists
		"admin":       ErrInstructorTaken,
		"Admin":       ErrInstructorTaken,
		"li.lei-2":    nil,
		"李雷":          nil,
		"lei李":        nil,
		"たなか_t":       nil,
		"Ørsted":      nil,
	} {
		_, err := db.CreateInstructor(ctx, name, pw)
		var ve *ValidationError
		switch w := want.(type) {
		case nil:
			if err != nil {
				t.Errorf("%q: %v, want accepted", name, err)
			}
		case *ValidationError:
			if !errors.As(err, &ve) {
				t.Errorf("%q: %v, want refused", name, err)
			}
		default:
			if !errors.Is(err, w) {
				t.Errorf("%q: %v, want %v", name, err, w)
			}
		}
	}
	// "coe" in Latin looks like the Cyrillic "сое" made above; "adrnin"
	// (r n) is what the skeleton of admin's lookalikes is made of.
	for _, name := range []string{"coe", "adrnin", "ADRNIN"} {
		if _, err := db.CreateInstructor(ctx, name, pw); !errors.Is(err, ErrUsernameLookalike) {
			t.Errorf("%q: %v, want a lookalike refused", name, err)
		}
	}
	// By invitation, the way the attack came in.
	tok, _, err := db.CreateInvite(ctx, admin.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.RedeemInvite(ctx, tok, "аdmin", pw); !errors.As(err, new(*ValidationError)) {
		t.Fatalf("invitation with аdmin: %v", err)
	}
	if ok, _ := db.InviteValid(ctx, tok); !ok {
		t.Fatal("a refused name used the invitation up")
	}
	// The old account is unaffected.
	if _, err := db.Authenticate(ctx, "old★name", pw); err != nil {
		t.Fatalf("an account from before the rule cannot log in: %v", err)
	}
	if _, err := db.SetInstructorPassword(ctx, "old★name", pw+"!"); err != nil {
		t.Fatalf("an account from before the rule cannot change its password: %v", err)
	}
}
