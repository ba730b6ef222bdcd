package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckWhatAndHow is issue 19's `check` behaviour: which course is
// checked without DIR, one lesson folder, and exit codes as documented.
func TestCheckWhatAndHow(t *testing.T) {
	noEnv := func(string) string { return "" }
	run := func(getenv func(string) string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := checkWith(getenv, args, &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, _ := run(noEnv, "--bogus"); code != 2 {
		t.Errorf("unknown flag: exit %d, want 2", code)
	}
	if code, _, _ := run(noEnv, "a", "b"); code != 2 {
		t.Errorf("two DIRs: exit %d, want 2", code)
	}
	if code, _, _ := run(noEnv, "no/such/dir"); code != 2 {
		t.Errorf("missing DIR: exit %d, want 2", code)
	}
	if code, out, _ := run(noEnv, "-h"); code != 0 || !strings.Contains(out, "usage: labserver check") {
		t.Errorf("-h: exit %d", code)
	}
	// $LAB_LESSONS is the course when no DIR is given.
	env := func(k string) string {
		if k == "LAB_LESSONS" {
			return "testdata/broken"
		}
		return ""
	}
	if code, out, _ := run(env); code != 1 || !strings.Contains(out, "testdata/broken/01-bad/") {
		t.Errorf("LAB_LESSONS course: exit %d\n%s", code, out)
	}
	// One lesson folder: its course is checked, its own findings printed.
	if code, out, errs := run(noEnv, "testdata/broken/01-bad"); code != 1 || !strings.Contains(out, "01-bad/index.zh.md") ||
		!strings.Contains(errs, "1 error") && !strings.Contains(errs, "error(s)") {
		t.Errorf("one lesson folder: exit %d\n%s%s", code, out, errs)
	}
	// The current folder, when it holds lesson folders.
	t.Chdir("testdata/broken")
	if code, out, _ := run(noEnv); code != 1 || !strings.Contains(out, "01-bad/index.zh.md") {
		t.Errorf("current folder: exit %d\n%s", code, out)
	}
}

// TestCheckExperimentMessages: an unknown experiment lists the valid ids;
// a byte size in a unit check does not take says which units it does;
// booleans are true or false as the authoring guide says.
func TestCheckExperimentMessages(t *testing.T) {
	dir := t.TempDir()
	lesson := filepath.Join(dir, "01-x")
	if err := os.Mkdir(lesson, 0o755); err != nil {
		t.Fatal(err)
	}
	page := "---\ntitle: X\nsummary: x\norder: 1\n---\n\n::experiment nosuch\n\n::experiment tcp-cost msg_size=4KB\n\n::experiment qp-states mistakes=yes\n\n::experiment qp-states mistakes=true\n"
	for _, l := range []string{"zh", "en"} {
		if err := os.WriteFile(filepath.Join(lesson, "index."+l+".md"), []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if code := checkWith(func(string) string { return "" }, []string{dir}, &out, &errb); code != 1 {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
	got := out.String()
	for _, want := range []string{
		`index.en.md:7: ::experiment nosuch: unknown experiment "nosuch" (known: `, "tcp-cost",
		`index.en.md:9: ::experiment tcp-cost: param "msg_size": want a whole number of bytes, with an optional unit k/KiB`,
		`index.en.md:11: ::experiment qp-states: param "mistakes": write true or false (got "yes")`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("check output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "index.en.md:13:") {
		t.Errorf("mistakes=true refused:\n%s", got)
	}
}

// TestCheckDrafts: check reports the lessons of _drafts/ under their
// path (one draft folder too), and a draft named like a lesson is an error.
func TestCheckDrafts(t *testing.T) {
	dir := t.TempDir()
	page := func(title, body string) []byte {
		return []byte("---\ntitle: " + title + "\nsummary: S.\norder: 1\n---\n\n" + body + "\n")
	}
	files := map[string][]byte{
		"01-a/index.en.md":          page("A", "Text."),
		"01-a/index.zh.md":          page("甲", "正文。"),
		"_drafts/02-b/index.en.md":  page("B", "::quiz nope/q"),
		"_drafts/02-b/index.zh.md":  page("乙", "正文。"),
		"_drafts/01-a/index.en.md":  page("A again", "Text."),
		"_drafts/01-a/index.zh.md":  page("甲又", "正文。"),
		"_drafts/03-ok/index.en.md": page("C", "See [A](../01-a/)."),
		"_drafts/03-ok/index.zh.md": page("丙", "正文。"),
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := checkWith(func(string) string { return "" }, args, &out, &errb)
		return code, out.String()
	}
	code, out := run(dir)
	for _, want := range []string{
		filepath.Join(dir, "_drafts/02-b/index.en.md") + ":7: ::quiz nope/q",
		filepath.Join(dir, "_drafts/01-a") + ": a draft named like the course's lesson 01-a",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check lacks %q:\n%s", want, out)
		}
	}
	if code != 1 || strings.Contains(out, "03-ok") {
		t.Errorf("exit %d (want 1), the clean draft must have no findings:\n%s", code, out)
	}
	// One draft folder: checked beside its course, only its findings printed.
	code, out = run(filepath.Join(dir, "_drafts", "02-b"))
	if code != 1 || !strings.Contains(out, "_drafts/02-b/index.en.md:7:") || strings.Contains(out, "_drafts/01-a") {
		t.Errorf("one draft: exit %d\n%s", code, out)
	}
	if code, out = run(filepath.Join(dir, "_drafts", "03-ok")); code != 0 || out != "" {
		t.Errorf("the clean draft: exit %d\n%s", code, out)
	}
}

// TestCheckTaskScriptSyntax (issue 29 item 8): a shell syntax error in a
// :::task verify script fails check at its line (learners used to see
// "Syntax error" as their hint).
func TestCheckTaskScriptSyntax(t *testing.T) {
	dir := t.TempDir()
	page := func(title string) []byte {
		return []byte("---\ntitle: " + title + "\nsummary: S.\norder: 1\n---\n\n::terminal\n\n:::task done tasks/check.sh\nDo it.\n:::\n")
	}
	files := map[string]string{
		"01-a/index.en.md":      string(page("A")),
		"01-a/index.zh.md":      string(page("甲")),
		"01-a/tasks/check.sh":   "#!/bin/sh\nif [ -e /tmp/x ]; then\n  echo ok\n",
		"01-a/tasks/unused.txt": "",
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	code := checkWith(func(string) string { return "" }, []string{dir}, &out, &errb)
	want := filepath.Join(dir, "01-a/tasks/check.sh") + ":4: verify script: Syntax error: end of file unexpected"
	if code != 1 || !strings.Contains(out.String(), want) {
		t.Errorf("exit %d, want 1 and %q:\n%s", code, want, out.String())
	}
	// Fixed, it passes.
	if err := os.WriteFile(filepath.Join(dir, "01-a/tasks/check.sh"), []byte("#!/bin/sh\nif [ -e /tmp/x ]; then\n  echo ok\nfi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := checkWith(func(string) string { return "" }, []string{dir}, &out, &errb); code != 0 {
		t.Errorf("the fixed script: exit %d\n%s", code, out.String())
	}
}
