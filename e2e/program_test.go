package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/lessons"
)

// setProgram puts src into program id's editor (CodeMirror's own change:
// the page saves it as if typed).
func setProgram(b *browser, id, src string) {
	b.t.Helper()
	b.do("edit "+id, evalVoid(`document.querySelector('[data-program=`+id+`]')._editor.set(`+jsString(src)+`)`))
}

// runProgram presses Run on program id and waits for the verdict.
func runProgram(b *browser, id string) {
	b.t.Helper()
	sel := `[data-program=` + id + `]`
	b.click(sel + ` [data-testid=program-run]`)
	b.waitFor("the run of "+id, `(function(){ var v = document.querySelector('`+sel+` [data-testid=program-verdict]'); return v && (v.classList.contains('ok') || v.classList.contains('fail')); })()`, guestTimeout)
}

// TestLesson04Program: lesson 04's first exercise in a real browser
// against a real learner guest. A compile error shows at its line (in
// the list and as CodeMirror's lint mark); the solution passes the
// check; a reload finds the code and the pass; a second learner starts
// from the starter.
func TestLesson04Program(t *testing.T) {
	flow(t)
	dir := t.TempDir()
	vmDir := os.Getenv("LAB_VM_DIR")
	if vmDir == "" {
		vmDir = filepath.Join(dir, "vm")
	}
	lab, err := startLab(filepath.Join(dir, "lab"), []string{"LAB_BACKEND=vm", "LAB_VM_DIR=" + vmDir, "LAB_TERMINALS=2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := lab.Stop(labStopTimeout); err != nil {
			t.Errorf("stopping the vm labserver: %v", err)
		}
	})
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := course.Lesson("04-first-program").Program("open-device")
	const page = "/lessons/04-first-program?lang=en"
	const sel = `[data-program=open-device]`
	editorText := `document.querySelector('` + sel + `')._editor.get()`

	one := newBrowser(t, lab)
	one.open(page)
	one.waitFor("the editors", `document.querySelectorAll('.program .cm-editor').length === 4`, guestTimeout)
	one.waitFor("the starter", editorText+` === `+jsString(string(p.Starter)), guestTimeout)

	// A mistake on line 3 of a small program: the compiler's line, marked.
	setProgram(one, "open-device", "#include <stdio.h>\nint main(void)\n{ int x = ; return 0; }\n")
	runProgram(one, "open-device")
	if got := one.text(sel + ` [data-testid=program-diag]`); !strings.Contains(got, "line 3") {
		t.Errorf("compile error: the diagnostics say %q, want line 3", got)
	}
	one.waitFor("the lint mark in the editor", `document.querySelectorAll('`+sel+` .cm-lintRange-error').length > 0`, guestTimeout)

	// The fix: the solution, run, passed by what the device has.
	setProgram(one, "open-device", string(p.Solution))
	runProgram(one, "open-device")
	if !eval[bool](one, `document.querySelector('`+sel+` [data-testid=program-verdict]').classList.contains('ok')`) {
		t.Fatalf("the solution did not pass: %q\noutput: %q", one.text(sel+` [data-testid=program-verdict]`), one.text(sel+` [data-testid=program-output]`))
	}
	if out := one.text(sel + ` [data-testid=program-output]`); !strings.Contains(out, "GID[1]: 0000:0000:0000:0000:0000:ffff") {
		t.Errorf("the program's output: %q", out)
	}

	// A reload: the code and the pass come back from the server.
	one.open(page)
	one.waitFor("the saved code", editorText+` === `+jsString(string(p.Solution)), guestTimeout)
	one.waitFor("the record", `document.querySelector('`+sel+`').classList.contains('program-passed')`, guestTimeout)
	if got := one.text(sel + ` [data-testid=program-record]`); !strings.Contains(got, "passed 1") {
		t.Errorf("record after a reload: %q", got)
	}

	// Another learner: the starter, not learner one's code.
	two := newBrowser(t, lab)
	two.open(page)
	two.waitFor("the starter for learner two", editorText+` === `+jsString(string(p.Starter)), guestTimeout)
}
