package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/rdmalab/rdmalab/internal/labproc"
	"github.com/rdmalab/rdmalab/lessons"
)

// seatClass logs an admin into lab, makes a class named name with a
// roster of one student and returns the admin's browser, the class's id
// and claim, which claims that student's seat in a browser: the way a
// learner takes their work to another device.
func seatClass(t *testing.T, lab *labproc.Server, name string) (admin *browser, classID string, claim func(*browser)) {
	t.Helper()
	admin = newBrowser(t, lab)
	instructorLogin(admin)
	admin.open("/instructor/classes?lang=en")
	admin.do("name a class", chromedp.SendKeys(chromedp.CSS(`[data-testid=classes] input[name=name]`), name))
	admin.navigates("create the class", chromedpClick(`[data-testid=class-create]`))
	row := `Array.from(document.querySelectorAll('[data-testid=class]')).filter(function(r){ return r.textContent.indexOf(` + jsString(name) + `) >= 0; })[0]`
	roster := eval[string](admin, row+`.querySelector('[data-testid=class-roster]').getAttribute('href')`)
	join := eval[string](admin, `new URL(`+row+`.querySelector('[data-testid=class-join-url]').value).pathname`)
	admin.open(roster + "?lang=en")
	admin.do("paste a roster", chromedp.SendKeys(chromedp.CSS(`[data-testid=roster-import] textarea`), "学号,姓名\n2026101,张三\n"))
	admin.navigates("import it", chromedpClick(`[data-testid=roster-submit]`))
	seat := strings.TrimSpace(admin.text(`[data-testid=seat] [data-testid=seat-code]`))
	classID = strings.Split(roster, "/")[3] // /instructor/classes/ID/roster
	return admin, classID, func(b *browser) {
		t.Helper()
		b.open(join + "?lang=en")
		b.do("type the seat code", chromedp.SendKeys(chromedp.CSS(`[data-testid=join-seat]`), seat))
		b.navigates("claim the seat", chromedpClick(`[data-testid=join-submit]`))
		if n := b.count(`[data-testid=join-seat]`); n != 0 {
			t.Fatalf("claiming the seat: still on the form: %q", b.text(`main`))
		}
	}
}

// TestProgramEditorTeaches: what lesson 04's editor offers besides Run,
// with no guest (issue 40). Hints open one at a time, by mouse and then
// by keyboard, and the focus moves to the last one when its button goes;
// the comparison with the starter lists what changed; axe-core finds
// nothing in either language, light and dark, 1280 and 375 px. A reset
// to the starter keeps the code it replaced on the server: after a
// reload (in zh) the hints are there and "restore" brings the code back,
// which a further reload shows, with nothing left to restore. A fresh
// browser profile that claims the learner's roster seat gets the code and
// the hints from the server, and the class's gradebook counts the hints.
func TestProgramEditorTeaches(t *testing.T) {
	flow(t)
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := course.Lesson("04-first-program").Program("open-device")
	const sel = `[data-program=open-device]`
	editorText := `document.querySelector('` + sel + `')._editor.get()`
	admin, classID, claim := seatClass(t, shared, "Editor class")
	one := newBrowser(t, shared)
	claim(one)
	one.open("/lessons/04-first-program?lang=en")
	one.waitFor("the starter", editorText+` === `+jsString(string(p.Starter)), stepTimeout)
	setProgram(one, "open-device", "int main(void) { return 3; }\n")
	one.waitFor("saved", `document.querySelector('`+sel+` [data-testid=program-save]').textContent === 'Saved'`, stepTimeout)
	broken := eval[string](one, editorText)
	hints := p.Config.Hints
	next := sel + ` [data-testid=program-hint-next]`
	hintTexts := `Array.from(document.querySelectorAll('` + sel + ` [data-testid=program-hint-text]')).map(function(e){ return e.textContent; })`
	if got := one.text(next); got != fmt.Sprintf("Show hint 1 of %d", len(hints)) {
		t.Errorf("the hint button says %q", got)
	}
	one.click(next)
	one.waitFor("the first hint", hintTexts+`.length === 1`, stepTimeout)
	if got := eval[[]string](one, hintTexts); got[0] != strings.ReplaceAll(hints[0]["en"], "`", "") {
		t.Errorf("the first hint reads %q", got[0])
	}
	for i := 2; i <= len(hints); i++ {
		one.do("focus the hint button", chromedp.Focus(chromedp.CSS(next)))
		one.do("Enter", chromedp.KeyEvent(kb.Enter))
		one.waitFor(fmt.Sprintf("hint %d", i), fmt.Sprintf(hintTexts+`.length === %d`, i), stepTimeout)
	}
	if !eval[bool](one, `document.querySelector('`+next+`').hidden && document.activeElement === document.querySelectorAll('`+sel+` [data-testid=program-hint-text]')[`+fmt.Sprint(len(hints)-1)+`]`) {
		t.Errorf("after the last hint the focus is on %s", eval[string](one, `document.activeElement.outerHTML.slice(0, 120)`))
	}
	one.click(sel + ` [data-testid=program-diff-show]`)
	one.waitFor("the comparison", `!document.querySelector('`+sel+` [data-testid=program-diff]').hidden && document.querySelectorAll('`+sel+` [data-testid=program-diff] .add').length > 0`, stepTimeout)
	// One line of ours; every line of the starter but the empty one after
	// its last newline, which both texts end with.
	if h, want := one.text(sel+` .program-diff-h`), fmt.Sprintf("(1 added, %d removed)", strings.Count(string(p.Starter), "\n")); !strings.Contains(h, want) {
		t.Errorf("the comparison's heading: %q", h)
	}
	if got := one.text(sel + ` [data-testid=program-diff] .add`); got != "+ int main(void) { return 3; }" {
		t.Errorf("the added line: %q", got)
	}
	for _, st := range axeStates {
		one.setState(st)
		checkAxe(t, one, "lesson 04 with hints and the comparison, en "+st.String())
	}
	one.click(sel + ` [data-testid=program-diff-show]`)
	one.do("accept confirmations", evalVoid(`window.confirm = function () { return true; }`))
	one.click(sel + ` [data-testid=program-reset]`)
	one.waitFor("the starter after a reset", editorText+` === `+jsString(string(p.Starter)), stepTimeout)
	one.waitFor("the restore button", `!document.querySelector('`+sel+` [data-testid=program-restore]').hidden`, stepTimeout)
	one.open("/lessons/04-first-program?lang=zh")
	one.waitFor("the starter after reload", editorText+` === `+jsString(string(p.Starter)), stepTimeout)
	one.waitFor("the restore button after reload", `!document.querySelector('`+sel+` [data-testid=program-restore]').hidden`, stepTimeout)
	one.waitFor("hints after reload", hintTexts+`.length === 3`, stepTimeout)
	if got := eval[[]string](one, hintTexts)[0]; got != strings.ReplaceAll(hints[0]["zh"], "`", "") {
		t.Errorf("the first hint in zh: %q", got)
	}
	one.click(sel + ` [data-testid=program-diff-show]`)
	one.waitFor("the zh comparison", `!document.querySelector('`+sel+` [data-testid=program-diff]').hidden`, stepTimeout)
	if h := one.text(sel + ` .program-diff-h`); h != "你的代码和起始代码完全一样。" {
		t.Errorf("the zh comparison after a reset: %q", h)
	}
	for _, st := range axeStates {
		one.setState(st)
		checkAxe(t, one, "lesson 04 zh "+st.String())
	}
	one.do("accept confirmations", evalVoid(`window.confirm = function () { return true; }`))
	one.click(sel + ` [data-testid=program-restore]`)
	one.waitFor("the code back after restore", editorText+` === `+jsString(broken), stepTimeout)
	one.waitFor("saved", `document.querySelector('`+sel+` [data-testid=program-save]').textContent === '已保存'`, stepTimeout)
	one.open("/lessons/04-first-program?lang=en")
	one.waitFor("restored code after reload", editorText+` === `+jsString(broken), stepTimeout)
	if !eval[bool](one, `document.querySelector('`+sel+` [data-testid=program-restore]').hidden`) {
		t.Errorf("restore still offered after restoring")
	}

	// Another device: a fresh profile, the same seat.
	three := newBrowser(t, shared)
	claim(three)
	three.open("/lessons/04-first-program?lang=en")
	three.waitFor("the code in a fresh profile", editorText+` === `+jsString(broken), stepTimeout)
	three.waitFor("the hints in a fresh profile", hintTexts+`.length === `+fmt.Sprint(len(hints)), stepTimeout)
	admin.open("/instructor/gradebook?lang=en&class=" + classID)
	cell := `Array.from(document.querySelectorAll('[data-testid=grade-programs]')).filter(function(a){ return a.getAttribute('href').indexOf('lesson=04-first-program') >= 0; })[0]`
	if got, want := eval[string](admin, `(`+cell+` || {}).textContent || ''`), fmt.Sprintf("programs passed 0/%d (runs: 0, hints: %d, solutions shown: 0)", len(course.Lesson("04-first-program").Programs), len(hints)); got != want {
		t.Errorf("gradebook: %q, want %q", got, want)
	}
	// The learner's page behind the cell, in both languages.
	href := eval[string](admin, cell+`.getAttribute('href')`)
	for _, lang := range []string{"en", "zh"} {
		admin.open(href + "&lang=" + lang)
		if got := admin.text(`[data-testid=learner-program][data-program=open-device] [data-testid=learner-program-record]`); !strings.Contains(got, fmt.Sprintf("%d/%d", len(hints), len(hints))) && !strings.Contains(got, fmt.Sprintf("%d of %d", len(hints), len(hints))) {
			t.Errorf("%s: the learner's record %q", lang, got)
		}
		for _, st := range axeStates {
			admin.setState(st)
			checkAxe(t, admin, "a learner's programs, "+lang+" "+st.String())
		}
	}
}
