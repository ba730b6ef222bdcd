package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/mtibben/confusables"
)

// A new account's username must read as what it is: an instructor list
// that shows "аdmin" (Cyrillic а) beside "admin" lies to whoever reads it.
// So a new username (CheckNewUsername, applied where an account is
// created: an invitation, the setup link, `labserver user add`, the admin
// password) is letters and digits of one script — Latin may mix with Han,
// kana, Hangul and Bopomofo, as Chinese, Japanese and Korean names do —
// plus '.', '_' and '-'; ASCII digits only; no full-width forms; and its
// Unicode confusable skeleton (UTS #39, github.com/mtibben/confusables)
// must not equal an existing account's. Accounts made before this rule
// keep their names: logging in and `labserver user passwd` check only
// CheckUsername.

// ErrUsernameLookalike is a new username that looks like an existing
// account's (same confusable skeleton).
var ErrUsernameLookalike = errors.New("store: the username looks like an existing account's")

// scripts a username's letters are sorted into; "" is any other.
var nameScripts = []struct {
	name string
	tab  *unicode.RangeTable
}{
	{"Latin", unicode.Latin}, {"Han", unicode.Han}, {"Hiragana", unicode.Hiragana}, {"Katakana", unicode.Katakana},
	{"Hangul", unicode.Hangul}, {"Bopomofo", unicode.Bopomofo}, {"Cyrillic", unicode.Cyrillic}, {"Greek", unicode.Greek},
	{"Armenian", unicode.Armenian}, {"Arabic", unicode.Arabic}, {"Hebrew", unicode.Hebrew}, {"Devanagari", unicode.Devanagari},
	{"Thai", unicode.Thai}, {"Georgian", unicode.Georgian}, {"Cherokee", unicode.Cherokee},
}

// eastAsian scripts may be written beside Latin letters in one name.
var eastAsian = map[string]bool{"Han": true, "Hiragana": true, "Katakana": true, "Hangul": true, "Bopomofo": true}

func scriptOf(r rune) string {
	for _, s := range nameScripts {
		if unicode.Is(s.tab, r) {
			return s.name
		}
	}
	return "other"
}

// CheckNewUsername returns a *ValidationError when name may not name a new
// account (see above; the lookalike test needs the database: newUsername).
func CheckNewUsername(name string) error {
	if err := CheckUsername(name); err != nil {
		return err
	}
	scripts := map[string]bool{}
	for _, r := range name {
		switch {
		case r >= 0xFF00 && r <= 0xFFEF:
			return &ValidationError{fmt.Sprintf("the username must not use full-width or half-width forms (%q)", r)}
		case r == '.' || r == '_' || r == '-' || (r >= '0' && r <= '9'):
		case unicode.IsLetter(r):
			scripts[scriptOf(r)] = true
		default:
			return &ValidationError{fmt.Sprintf("the username may hold letters, digits 0-9, '.', '_' and '-' only (not %q)", r)}
		}
	}
	var alphabets []string
	for s := range scripts {
		if !eastAsian[s] {
			alphabets = append(alphabets, s)
		}
	}
	slices.Sort(alphabets)
	if len(alphabets) > 1 {
		return &ValidationError{"the username mixes letters of different alphabets (" + strings.Join(alphabets, ", ") + "): write it in one"}
	}
	return nil
}

// usernameSkeleton is what name looks like: case folded, then the UTS #39
// confusable skeleton.
func usernameSkeleton(name string) string {
	return confusables.Skeleton(strings.ToLower(confusables.Skeleton(strings.ToLower(name))))
}

// newUsername checks name for a new account against the accounts q holds:
// CheckNewUsername, then ErrUsernameLookalike when another account's name
// (not the same one: that is ErrInstructorTaken) has the same skeleton.
func newUsername(ctx context.Context, q execQuerier, name string) error {
	if err := CheckNewUsername(name); err != nil {
		return err
	}
	skel := usernameSkeleton(name)
	rows, err := q.QueryContext(ctx, `SELECT username FROM instructors`)
	if err != nil {
		return fmt.Errorf("store: usernames: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return fmt.Errorf("store: usernames: %w", err)
		}
		// Only a name the username index itself refuses is "the same
		// name" (ErrInstructorTaken): it folds ASCII letters alone, so a
		// Kelvin sign K or an Ångström sign Å (which strings.EqualFold
		// folds to k and å) is a lookalike like any other.
		if usernameSkeleton(u) == skel && !asciiEqualFold(u, name) {
			return ErrUsernameLookalike
		}
	}
	return rows.Err()
}

// asciiEqualFold is SQLite's NOCASE: a and b equal once ASCII letters are
// folded, every other rune compared as it is.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
