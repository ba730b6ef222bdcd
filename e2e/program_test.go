package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

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
// check, and so do the other three exercises' solutions; a reload finds
// the code and the pass; a second learner, on a phone in zh, starts from
// the starter, types into the editor with the keyboard and leaves it with
// Tab.
func TestLesson04Program(t *testing.T) {
	flow(t)
	dir := t.TempDir()
	vmDir := guestDir
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

	// The other exercises, each solution run in the browser against the
	// lab's peer where it has one: all four pass end to end.
	for _, q := range course.Lesson("04-first-program").Programs {
		if q.ID == "open-device" {
			continue
		}
		qs := `[data-program=` + q.ID + `]`
		setProgram(one, q.ID, string(q.Solution))
		runProgram(one, q.ID)
		if !eval[bool](one, `document.querySelector('`+qs+` [data-testid=program-verdict]').classList.contains('ok')`) {
			t.Errorf("%s: the solution did not pass in the browser: %q\noutput: %q", q.ID, one.text(qs+` [data-testid=program-verdict]`), one.text(qs+` [data-testid=program-output]`))
		}
	}

	// A reload: the code and the pass come back from the server.
	one.open(page)
	one.waitFor("the saved code", editorText+` === `+jsString(string(p.Solution)), guestTimeout)
	one.waitFor("the record", `document.querySelector('`+sel+`').classList.contains('program-passed')`, guestTimeout)
	if got := one.text(sel + ` [data-testid=program-record]`); !strings.Contains(got, "passed: 1") {
		t.Errorf("record after a reload: %q", got)
	}

	// Another learner, on a 375 px phone in zh: the starter, not learner
	// one's code; the page does not scroll sideways with four editors;
	// keys typed into the editor land in it and are saved, and Tab leaves
	// the editor for the next control (the editor never traps the keyboard).
	two := newBrowser(t, lab)
	two.do("375 px viewport", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile))
	two.open("/lessons/04-first-program?lang=zh")
	two.waitFor("the starter for learner two", editorText+` === `+jsString(string(p.Starter)), guestTimeout)
	checkNoSideways(t, two, "lesson 04 (zh)")
	two.do("focus the editor", chromedp.Focus(chromedp.CSS(sel+` .cm-content`)))
	two.do("type", chromedp.KeyEvent(kb.End+"// mine"))
	two.waitFor("typed text in the editor", editorText+`.indexOf('// mine') >= 0`, guestTimeout)
	two.waitFor("the typed text saved", `document.querySelector('`+sel+` [data-testid=program-save]').textContent === '已保存'`, guestTimeout)
	two.do("Tab", chromedp.KeyEvent(kb.Tab))
	if in := eval[bool](two, `document.querySelector('`+sel+` .cm-editor').contains(document.activeElement)`); in {
		t.Errorf("Tab left the focus inside the editor (%s)", eval[string](two, `document.activeElement.outerHTML.slice(0, 120)`))
	}
	if strings.Contains(eval[string](two, editorText), "// mine\t") {
		t.Errorf("Tab was typed into the code instead of moving the focus")
	}
	two.open("/lessons/04-first-program?lang=zh")
	two.waitFor("learner two's code after a reload", editorText+`.indexOf('// mine') >= 0`, guestTimeout)
	if got := eval[string](two, editorText); strings.Contains(got, string(p.Solution)) {
		t.Errorf("learner two sees learner one's code")
	}
}
