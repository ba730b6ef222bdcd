package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
