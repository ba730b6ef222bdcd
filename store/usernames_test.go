package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/attackcost"
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
	// Issue 43 fall 7: a Kelvin sign K (U+212A) and an Ångström sign Å
	// (U+212B) fold to k and å under strings.EqualFold, so the lookalike
	// test passed them as "the same name" while the NOCASE index, which
	// folds ASCII only, let them in beside the real ones.
	// The store logs nothing of its own (no log to count); the
	// test process holds it.
	cost := attackcost.WatchSelf(nil)
	for _, real := range []string{"Kelly", "Åsa"} {
		if _, err := db.CreateInstructor(ctx, real, pw); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"\u212Aelly", "\u212Bsa", "\u212AELLY", "\u212BSA", "A\u030Asa"} {
		if _, err := db.CreateInstructor(ctx, name, pw); !errors.Is(err, ErrUsernameLookalike) && !errors.As(err, new(*ValidationError)) {
			t.Errorf("%q (%+q): %v, want refused as a lookalike", name, name, err)
		}
	}
	cost.Stop().Check(t, "fall 7 lookalike usernames (in-process store)")

	// The skeleton column is unique in the database too: a row written
	// past newUsername (two creations racing) is refused by the index.
	var skel string
	if err := db.w.QueryRowContext(ctx, `SELECT username_skeleton FROM instructors WHERE username = 'Kelly'`).Scan(&skel); err != nil || skel != usernameSkeleton("Kelly") {
		t.Fatalf("Kelly's skeleton column: %q %v, want %q", skel, err, usernameSkeleton("Kelly"))
	}
	if _, err := createInstructorRow(ctx, db.w, "\u212Aelly", "x", RoleInstructor); !errors.Is(err, ErrUsernameLookalike) {
		t.Errorf("the Kelvin-sign Kelly written past the check: %v, want ErrUsernameLookalike from the index", err)
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
