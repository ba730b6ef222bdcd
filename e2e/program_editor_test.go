package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/rdmalab/rdmalab/lessons"
)

// TestProgramEditorTeaches: what lesson 04's editor offers besides Run,
// with no guest (issue 40). Hints open one at a time, by mouse and then
// by keyboard, and the focus moves to the last one when its button goes;
// the comparison with the starter lists what changed; axe-core finds
// nothing in either language, light and dark, 1280 and 375 px. A reset
// to the starter keeps the code it replaced on the server: after a
// reload (in zh) the hints are there and "restore" brings the code back,
// which a further reload shows, with nothing left to restore.
func TestProgramEditorTeaches(t *testing.T) {
	flow(t)
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := course.Lesson("04-first-program").Program("open-device")
	const sel = `[data-program=open-device]`
	editorText := `document.querySelector('` + sel + `')._editor.get()`
	one := newBrowser(t, shared)
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
}
