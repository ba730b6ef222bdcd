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
