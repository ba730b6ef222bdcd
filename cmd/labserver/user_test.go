package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/rdmalab/rdmalab/store"
)

// TestUserCommand adds, re-passwords, lists and removes instructor
// accounts with the password on standard input, then logs in with it.
func TestUserCommand(t *testing.T) {
	old := store.PasswordCost
	store.PasswordCost = bcrypt.MinCost
	defer func() { store.PasswordCost = old }()
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "lab.db")
	run := func(in string, args ...string) (int, string, string) {
		stdin = strings.NewReader(in)
		var out, errb bytes.Buffer
		code := dispatch(ctx, append([]string{"user"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, e := run("first password!\n", "add", "ada", "--db", dbPath); code != 0 {
		t.Fatalf("add: %d %s", code, e)
	}
	if code, _, e := run("second password\n", "add", "--db", dbPath, "bob"); code != 0 {
		t.Fatalf("add bob: %d %s", code, e)
	}
	if code, _, e := run("another password\n", "add", "ADA", "--db", dbPath); code != 1 || !strings.Contains(e, "exists already") {
		t.Errorf("duplicate add: %d %q", code, e)
	}
	if code, _, e := run("short\n", "add", "carol", "--db", dbPath); code != 1 || !strings.Contains(e, "at least 10") {
		t.Errorf("short password: %d %q", code, e)
	}
	if code, _, e := run("", "add", "carol", "--db", dbPath); code != 1 || !strings.Contains(e, "no password") {
		t.Errorf("empty stdin: %d %q", code, e)
	}
	if code, _, e := run("changed password\r\n", "passwd", "ada", "--db", dbPath); code != 0 {
		t.Errorf("passwd: %d %q", code, e)
	}
	if code, _, e := run("long enough password\n", "passwd", "nobody", "--db", dbPath); code != 1 || !strings.Contains(e, "no instructor") {
		t.Errorf("passwd unknown: %d %q", code, e)
	}
	code, out, _ := run("", "list", "--db", dbPath)
	if code != 0 || !strings.HasPrefix(out, "ada\t") || !strings.Contains(out, "\nbob\t") {
		t.Errorf("list: %d %q", code, out)
	}

	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Authenticate(ctx, "ada", "changed password"); err != nil {
		t.Errorf("login with the new password: %v", err)
	}
	db.Close()

	if code, _, e := run("", "remove", "bob", "--db", dbPath); code != 0 {
		t.Errorf("remove: %d %q", code, e)
	}
	if code, _, e := run("", "remove", "ada", "--db", dbPath); code != 1 || !strings.Contains(e, "last instructor") {
		t.Errorf("remove last: %d %q", code, e)
	}
	// Usage errors exit 2: no action, unknown action, missing or extra NAME.
	for _, args := range [][]string{{}, {"frobnicate", "x"}, {"add"}, {"add", "a", "b"}, {"remove", "has space"}} {
		if code, _, _ := run("", append(args, "--db", dbPath)...); code != 2 {
			t.Errorf("user %v: exit %d, want 2", args, code)
		}
	}
	if code, _, e := run("", "list", "--db", filepath.Join(t.TempDir(), "missing.db")); code != 1 || !strings.Contains(e, "LAB_DB") {
		t.Errorf("missing db: %d %q", code, e)
	}
}
