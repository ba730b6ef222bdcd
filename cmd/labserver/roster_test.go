package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/rdmalab/rdmalab/store"
)

// TestRosterCommand imports a roster from a file with the web import's
// parser (line-numbered problems, exit 1 when a line is skipped), imports
// it again (names updated, codes kept), and writes the personal codes as
// CSV with a BOM and formula guard, equal to what the store holds.
func TestRosterCommand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "lab.db")
	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.CreateCohort(ctx, "RDMA 2026", 0)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := dispatch(ctx, append([]string{"roster"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	file := filepath.Join(dir, "roster.csv")
	os.WriteFile(file, []byte("\ufeff学号,姓名\n2026001,张三\n2026002,\n2026003,@Ann\n2026001,重复\n"), 0o644)
	code, out, errs := run("import", "--class", strings.ToLower(c.Code), file, "--db", dbPath)
	if code != 1 || !strings.Contains(out, "2 added, 0 updated, 2 lines skipped") {
		t.Errorf("import with problems: exit %d, out %q", code, out)
	}
	for _, want := range []string{"roster.csv: line 3: ", "roster.csv: line 5: "} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	os.WriteFile(file, []byte("2026001,张三丰\n"), 0o644)
	if code, out, errs := run("import", file, "--class", c.Code, "--db", dbPath); code != 0 || !strings.Contains(out, "0 added, 1 updated") {
		t.Errorf("re-import: exit %d, out %q err %q", code, out, errs)
	}
	code, out, errs = run("codes", "--class", c.Code, "--db", dbPath)
	if code != 0 || !strings.HasPrefix(out, "\ufeffstudent_id,") {
		t.Fatalf("codes: exit %d %q %q", code, out, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(out, "\ufeff"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	db, _ = store.Open(dbPath)
	defer db.Close()
	seats, _ := db.Seats(ctx, c.ID)
	if len(rows) != len(seats)+1 || len(seats) != 2 {
		t.Fatalf("codes rows %v, seats %v", rows, seats)
	}
	for i, st := range seats {
		row := rows[i+1]
		if row[0] != st.StudentID || row[3] != c.Code || row[4] != st.Code || row[4] == "" {
			t.Errorf("row %v, seat %+v", row, st)
		}
	}
	if rows[1][1] != "张三丰" || rows[2][1] != "'@Ann" {
		t.Errorf("names: %q %q (want the update kept and the formula guarded)", rows[1][1], rows[2][1])
	}
	// Mistakes: a wrong code, a missing file, no --class, archived class.
	if code, _, e := run("codes", "--class", "NOSUCH", "--db", dbPath); code != 1 || !strings.Contains(e, "no class") {
		t.Errorf("unknown class: %d %q", code, e)
	}
	if code, _, _ := run("import", filepath.Join(dir, "missing.csv"), "--class", c.Code, "--db", dbPath); code != 1 {
		t.Errorf("missing file: %d", code)
	}
	if code, _, _ := run("import", file, "--db", dbPath); code != 2 {
		t.Errorf("no --class: %d", code)
	}
	db.ArchiveCohort(ctx, c.ID, true)
	if code, _, e := run("import", file, "--class", c.Code, "--db", dbPath); code != 1 || !strings.Contains(e, "archived") {
		t.Errorf("archived: %d %q", code, e)
	}
}

// TestUserAddTA makes a TA account from the command line, assigned to a
// class by its join code; a wrong code makes no account.
func TestUserAddTA(t *testing.T) {
	old := store.PasswordCost
	store.PasswordCost = bcrypt.MinCost
	defer func() { store.PasswordCost = old }()
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "lab.db")
	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := db.CreateCohort(ctx, "RDMA", 0)
	db.Close()
	run := func(in string, args ...string) (int, string, string) {
		stdin = strings.NewReader(in)
		var out, errb bytes.Buffer
		code := dispatch(ctx, append([]string{"user"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, e := run("a long password\n", "add", "tina", "--ta", "--class", "WRONG", "--db", dbPath); code != 1 || !strings.Contains(e, "no class") {
		t.Errorf("wrong class: %d %q", code, e)
	}
	if code, out, e := run("a long password\n", "add", "tina", "--ta", "--class", c.Code, "--db", dbPath); code != 0 || !strings.Contains(out, "TA") {
		t.Fatalf("add --ta: %d %q %q", code, out, e)
	}
	if code, _, _ := run("a long password\n", "add", "x", "--class", c.Code, "--db", dbPath); code != 2 {
		t.Errorf("--class without --ta: %d", code)
	}
	if code, _, _ := run("", "list", "--ta", "--db", dbPath); code != 2 {
		t.Errorf("list --ta: %d", code)
	}
	_, out, _ := run("", "list", "--db", dbPath)
	if !strings.HasPrefix(out, "tina\tta\t") {
		t.Errorf("list: %q", out)
	}
	db, _ = store.Open(dbPath)
	defer db.Close()
	in, err := db.Authenticate(ctx, "tina", "a long password")
	if err != nil || !in.TA() {
		t.Fatalf("tina: %+v %v", in, err)
	}
	ids, _ := db.TACohorts(ctx, in.ID)
	if len(ids) != 1 || ids[0] != c.ID {
		t.Errorf("TA classes %v, want [%d]", ids, c.ID)
	}
}

// TestOperationsRosterExamples runs the command lines of docs/operations.md's
// "Rosters from the command line" block against a fresh database whose
// class has the join code the doc shows, so the doc's commands and flags
// stay the ones the binary takes.
func TestOperationsRosterExamples(t *testing.T) {
	old := store.PasswordCost
	store.PasswordCost = bcrypt.MinCost
	defer func() { store.PasswordCost = old }()
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "<!-- checked: TestOperationsRosterExamples")
	if !ok {
		t.Fatal("docs/operations.md has no roster example block")
	}
	_, block, _ = strings.Cut(block, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir)
	db, err := store.Open(filepath.Join(dir, "rdmalab.db"))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := db.CreateCohort(ctx, "RDMA", 0)
	db.Close()
	// The doc's code, so its lines run as written.
	raw, err := sql.Open("sqlite", filepath.Join(dir, "rdmalab.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE cohorts SET code = 'K7QX3MPA' WHERE id = ?`, c.ID); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	os.WriteFile("students.csv", []byte("student_id,name\n2026001,张三\n"), 0o644)
	lines := 0
	for line := range strings.Lines(block) {
		cmd, _, _ := strings.Cut(line, "#")
		cmd, redirect, _ := strings.Cut(cmd, ">")
		args := strings.Fields(cmd)
		if len(args) == 0 || args[0] != "labserver" {
			t.Errorf("not a labserver command: %q", line)
			continue
		}
		lines++
		stdin = strings.NewReader("a long password\n")
		var out, errb bytes.Buffer
		if code := dispatch(ctx, args[1:], &out, &errb); code != 0 {
			t.Errorf("%s: exit %d: %s", strings.TrimSpace(cmd), code, errb.String())
		}
		if f := strings.TrimSpace(redirect); f != "" && !strings.Contains(out.String(), "2026001,张三,RDMA,K7QX3MPA,") {
			t.Errorf("%s > %s: %q", strings.TrimSpace(cmd), f, out.String())
		}
	}
	if lines != 3 {
		t.Errorf("ran %d lines, want 3", lines)
	}
}
