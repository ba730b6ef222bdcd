package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestKeyboardWalkLesson01 works through lesson 01 with the keyboard
// alone, as a learner who cannot use a mouse: Tab from the top, one key
// at a time; Enter on memlock's Run runs it (its intended ENOMEM shown);
// Space picks an answer of a checkpoint question, Enter on its Submit
// grades it (the focus goes to the verdict, the walk goes on from there);
// Enter on "Mark complete" completes the lesson. Every stop shows a focus
// indicator, the focus never sticks (each Tab moves it), and the walk gets
// to the pager at the end.
func TestKeyboardWalkLesson01(t *testing.T) {
	flow(t)
	b := newBrowser(t, shared)
	b.open(lesson01EN)
	b.waitFor("page settled", settledJS+` && document.querySelector("section.calc[data-ready]")`, stepTimeout)
	b.do("record focus", evalVoid(`(function(){
		window.__e2eNoRing = [];
		var describe = `+describeJS+`;
		document.addEventListener('focusin', function(ev){
			var e = ev.target, cs = getComputedStyle(e);
			if (e.getAttribute('tabindex') === '-1') return; // focused by a script (the verdict), not a Tab stop
			var ring = (cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) > 0) || cs.boxShadow !== 'none';
			if (!ring) window.__e2eNoRing.push(describe(e));
		});
		document.activeElement && document.activeElement.blur();
		window.scrollTo(0, 0);
	})()`))

	const (
		memlockRun = `section.experiment[data-experiment="memlock"] [data-testid=run]`
		question   = `[data-testid=checkpoint] [data-testid=quiz][data-question="why-rdma/regmr-container"]`
	)
	active := func(sel string) bool {
		return eval[bool](b, `(function(){ var a = document.activeElement; return !!a && a.matches(`+jsString(sel)+`); })()`)
	}
	ran, answered, stuck := false, false, 0
	prev := ""
	// A bound on Tabs so a trap fails instead of spinning: the page has
	// about 150 stops.
	for i := 0; i < 600; i++ {
		b.do(fmt.Sprintf("Tab %d", i+1), chromedp.KeyEvent(kb.Tab))
		here := eval[string](b, `(function(){ var d = `+describeJS+`; var a = document.activeElement; return a ? d(a) + '@' + Array.prototype.indexOf.call(document.querySelectorAll('*'), a) : ''; })()`)
		if here == prev {
			stuck++
		}
		prev = here
		switch {
		case !ran && active(memlockRun):
			b.do("Enter on Run", chromedp.KeyEvent(kb.Enter))
			runID(b, "memlock")
			waitStatus(b, widget("memlock"), "done")
			if n := b.count(widget("memlock") + ` [data-testid=run-error].expected`); n < 1 {
				t.Errorf("memlock run by keyboard: no intended ENOMEM shown")
			}
			ran = true
		case !answered && active(question+` input[name=answer]`):
			b.do("Space on an answer", chromedp.KeyEvent(" "))
			if !eval[bool](b, `!!document.querySelector('`+question+` input[name=answer]:checked')`) {
				t.Fatalf("Space on a radio did not choose it")
			}
			// Tab goes on to Submit (a radio group is one stop).
			b.do("Tab to Submit", chromedp.KeyEvent(kb.Tab))
			if !active(question + ` button.primary[type=submit]`) {
				t.Fatalf("Tab after the answer reached %s, not Submit", eval[string](b, `(`+describeJS+`)(document.activeElement)`))
			}
			b.do("mark question", evalVoid(`document.querySelector('`+question+`').dataset.e2eOld = "1"`))
			b.do("Enter on Submit", chromedp.KeyEvent(kb.Enter))
			b.waitFor("graded", `(function(){var e=document.querySelector('`+question+`');return e && !e.dataset.e2eOld && e.querySelector("[data-testid=result]")})()`, stepTimeout)
			if !active(question + ` [data-testid=result]`) {
				t.Errorf("after Submit the focus is on %s, not the verdict", eval[string](b, `(`+describeJS+`)(document.activeElement)`))
			}
			answered = true
		case active(`[data-testid=complete] button[type=submit]`):
			if !ran || !answered {
				t.Fatalf("reached \"Mark complete\" before running memlock (%v) and answering (%v)", ran, answered)
			}
			if noRing := eval[[]string](b, `window.__e2eNoRing`); len(noRing) > 0 {
				t.Errorf("%d stops showed no focus indicator:\n  %s", len(noRing), strings.Join(limit(uniq(noRing), 20), "\n  "))
			}
			if stuck > 0 {
				t.Errorf("Tab left the focus where it was %d times (a trap or a dead stop)", stuck)
			}
			b.navigates("Enter on Mark complete", chromedp.KeyEvent(kb.Enter))
			if n := b.count(`[data-testid=completed]`); n < 1 {
				t.Errorf("the lesson is not complete after Enter on \"Mark complete\"")
			}
			return
		}
	}
	t.Fatalf("600 Tabs never reached \"Mark complete\" (ran %v, answered %v; last at %s)", ran, answered, prev)
}
