package e2e

import (
	"fmt"
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
// against a real learner guest. Learner one holds a seat of a class's
// roster. A compile error shows at its line (in the list, as CodeMirror's
// lint mark and as the lint gutter's marker beside that line); a hint is
// revealed; the solution passes the check, and so do the other three
// exercises' solutions; a reload finds the code, the pass and the hint.
// A fresh browser profile that claims the same seat gets that code, pass
// and hint back from the server; the class's gradebook shows the passes
// and the hint, and its cell opens the learner's last submission
// (TestProgramEditorTeaches covers the rest of the editor, no guest). A
// second learner, on a phone in zh, starts from the starter, types into
// the editor with the keyboard and leaves it with Tab.
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

	admin, classID, claim := seatClass(t, lab, "Programs class")
	one := newBrowser(t, lab)
	claim(one)
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
	// The gutter's marker stands beside line 3, not elsewhere.
	one.waitFor("the gutter marker", `document.querySelectorAll('`+sel+` .cm-gutter-lint .cm-lint-marker-error').length === 1`, guestTimeout)
	if d := eval[float64](one, `(function(){ var m = document.querySelector('`+sel+` .cm-gutter-lint .cm-lint-marker-error').closest('.cm-gutterElement');
		var line = document.querySelectorAll('`+sel+` .cm-content .cm-line')[2];
		return Math.abs(m.getBoundingClientRect().top - line.getBoundingClientRect().top); })()`); d > 2 {
		t.Errorf("the gutter marker is %.0f px off line 3", d)
	}
	// A hint, revealed and recorded: it is there after a reload, in a
	// fresh profile of the same learner and in the gradebook.
	next := sel + ` [data-testid=program-hint-next]`
	hintTexts := `Array.from(document.querySelectorAll('` + sel + ` [data-testid=program-hint-text]')).map(function(e){ return e.textContent; })`
	one.click(next)
	one.waitFor("the first hint", hintTexts+`.length === 1`, stepTimeout)
	if got := eval[[]string](one, hintTexts); got[0] != strings.ReplaceAll(p.Config.Hints[0]["en"], "`", "") {
		t.Errorf("the first hint reads %q", got[0])
	}

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
	one.waitFor("the hint after a reload", hintTexts+`.length === 1`, stepTimeout)

	// A fresh browser profile claims the same seat: the server gives it
	// learner one's code, pass and hints.
	three := newBrowser(t, lab)
	claim(three)
	three.open(page)
	three.waitFor("learner one's code in a fresh profile", editorText+` === `+jsString(string(p.Solution)), guestTimeout)
	three.waitFor("the pass in a fresh profile", `document.querySelector('`+sel+`').classList.contains('program-passed')`, stepTimeout)
	three.waitFor("the hint in a fresh profile", hintTexts+`.length === 1`, stepTimeout)

	// The class's gradebook: the passes and the hints, and the last
	// submission behind the cell.
	admin.open("/instructor/gradebook?lang=en&class=" + classID)
	cell := `Array.from(document.querySelectorAll('[data-testid=grade-programs]')).filter(function(a){ return a.getAttribute('href').indexOf('lesson=04-first-program') >= 0; })[0]`
	want := fmt.Sprintf("programs passed %[1]d/%[1]d (runs: %[1]d, hints: 1, solutions shown: 0)", len(course.Lesson("04-first-program").Programs))
	if got := eval[string](admin, `(`+cell+` || {}).textContent || ''`); got != want {
		t.Errorf("gradebook: %q, want %q", got, want)
	}
	admin.navigates("open the learner's programs", evalVoid(cell+`.click()`))
	if got := admin.text(`[data-testid=learner-program][data-program=open-device] [data-testid=learner-program-code]`); got != strings.TrimSpace(string(p.Solution)) {
		t.Errorf("the last submission the instructor sees: %q", got)
	}
	if n := admin.count(`[data-testid=learner-program][data-program=open-device] [data-testid=learner-program-passed]`); n != 1 {
		t.Errorf("the instructor's page does not show open-device passed")
	}
	admin.do("open the code", evalVoid(`document.querySelectorAll('.learner-program-code').forEach(function(d){ d.open = true; })`))
	for _, st := range axeStates[:2] {
		admin.setState(st)
		checkAxe(t, admin, "a learner's programs with their code, en "+st.String())
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
