package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/store"
)

// TestLTIWalkthrough runs the `labserver lti add` commands of
// docs/operations.md's "LTI 1.3" walkthrough as written (Moodle and
// Canvas) against a fresh database, then list, urls and remove: the
// documented commands work, and every URL the docs' table names is one
// the lab serves.
func TestLTIWalkthrough(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "## LTI 1.3")
	if start < 0 {
		t.Fatal("docs/operations.md has no LTI 1.3 section")
	}
	sec := text[start:]
	if end := strings.Index(sec[3:], "\n## "); end > 0 {
		sec = sec[:end+3]
	}
	db := filepath.Join(t.TempDir(), "lab.db")
	blocks := regexp.MustCompile("(?s)```sh\n(labserver lti add.*?)```").FindAllStringSubmatch(sec, -1)
	if len(blocks) != 2 {
		t.Fatalf("%d `labserver lti add` blocks in the walkthrough, want Moodle's and Canvas's", len(blocks))
	}
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := runLTI(context.Background(), append(args, "--db", db), &out, &errb)
		return code, out.String() + errb.String()
	}
	for _, b := range blocks {
		line := strings.ReplaceAll(b[1], "\\\n", " ")
		args := strings.Fields(line)[2:] // after "labserver lti"
		for i, a := range args {
			args[i] = strings.Trim(a, "'")
		}
		if code, out := run(args...); code != 0 {
			t.Errorf("documented %q: exit %d\n%s", line, code, out)
		}
	}
	code, out := run("list")
	if code != 0 || !strings.Contains(out, "https://moodle.school.edu") || !strings.Contains(out, "https://canvas.instructure.com") {
		t.Errorf("lti list: %d\n%s", code, out)
	}
	code, out = run("add", "--issuer", "https://moodle.school.edu", "--client-id", "Kz1c8Yl3AbCdEfG", "--deployment", "3",
		"--auth-url", "https://m/a", "--token-url", "https://m/t", "--jwks-url", "https://m/j")
	if code != 2 || !strings.Contains(out, "registered already") {
		t.Errorf("the same platform twice: exit %d\n%s", code, out)
	}
	code, out = run("add", "--issuer", "http://moodle.school.edu", "--client-id", "x", "--deployment", "3",
		"--auth-url", "https://m/a", "--token-url", "https://m/t", "--jwks-url", "https://m/j")
	if code != 2 || !strings.Contains(out, "https") {
		t.Errorf("an http issuer: exit %d\n%s", code, out)
	}
	code, out = run("urls", "--public-url", "https://lab.example.edu")
	for _, path := range []string{"/lti/login", "/lti/launch", "/lti/jwks"} {
		if code != 0 || !strings.Contains(out, "https://lab.example.edu"+path) {
			t.Errorf("lti urls lacks %s: %d\n%s", path, code, out)
		}
		if !strings.Contains(sec, "`https://lab.example.edu"+path+"`") {
			t.Errorf("the walkthrough's table lacks %s", path)
		}
	}
	if code, out := run("remove", "1"); code != 0 {
		t.Errorf("remove: %d %s", code, out)
	}
	if code, out := run("remove", "1"); code != 1 {
		t.Errorf("remove twice: %d %s", code, out)
	}
}

// TestLTIUpdateKeepsLinks (issue 41 item 1): `lti update` changes a
// registration's URLs and deployments (added, removed, replaced) and
// leaves its users, courses and graded links alone; `lti remove` keeps
// them too, `lti list` says so, and `lti add` of the same issuer and
// client id brings the registration back under its id.
func TestLTIUpdateKeepsLinks(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "lab.db")
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := runLTI(ctx, append(args, "--db", db), &out, &errb)
		return code, out.String() + errb.String()
	}
	add := []string{"add", "--issuer", "https://lms.example", "--client-id", "c1", "--deployment", "d1",
		"--auth-url", "https://lms.example/auth", "--token-url", "https://lms.example/token", "--jwks-url", "https://lms.example/jwks"}
	if code, out := run(add...); code != 0 {
		t.Fatalf("add: %d %s", code, out)
	}
	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordLTILaunch(ctx, store.LTILaunch{PlatformID: 1, Sub: "u-1", Name: "Ada", Role: "learner",
		ContextID: "course-1", LineItem: "https://lms.example/li/1", Lesson: "01"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	links := func() string {
		t.Helper()
		raw, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		var u, x, g int
		raw.QueryRow(`SELECT (SELECT COUNT(*) FROM lti_users), (SELECT COUNT(*) FROM lti_contexts), (SELECT COUNT(*) FROM lti_grade_links)`).Scan(&u, &x, &g)
		return fmt.Sprint(u, x, g)
	}
	code, out := run("update", "1", "--auth-url", "https://lms.example/auth2", "--add-deployment", "d2", "--remove-deployment", "d1")
	if code != 0 {
		t.Fatalf("update: %d %s", code, out)
	}
	code, out = run("list")
	if code != 0 || !strings.Contains(out, "auth https://lms.example/auth2") || !strings.Contains(out, "deployments d2\n") ||
		!strings.Contains(out, "token https://lms.example/token") {
		t.Errorf("list after update: %s", out)
	}
	if got := links(); got != "1 1 1" {
		t.Errorf("after update users, courses, links = %s, want 1 1 1", got)
	}
	if code, out := run("update", "1", "--auth-url", "ftp://x"); code != 2 || !strings.Contains(out, "--auth-url") {
		t.Errorf("a bad URL: %d %s", code, out)
	}
	if code, out := run("update", "1", "--remove-deployment", "d2"); code != 2 || !strings.Contains(out, "--deployment") {
		t.Errorf("no deployment left: %d %s", code, out)
	}
	if code, out := run("remove", "1"); code != 0 || !strings.Contains(out, "kept") {
		t.Errorf("remove: %d %s", code, out)
	}
	if got := links(); got != "1 1 1" {
		t.Errorf("after remove users, courses, links = %s, want 1 1 1", got)
	}
	if code, out := run("list"); !strings.Contains(out, "1 users kept") {
		t.Errorf("list after remove: %d %s", code, out)
	}
	if code, out := run(add...); code != 0 || !strings.Contains(out, "registered platform 1") {
		t.Errorf("add again: %d %s", code, out)
	}
}
