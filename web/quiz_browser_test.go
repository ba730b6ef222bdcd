package web

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestQuizInlineInBrowser drives headless Chromium through quiz.js: an
// answer is submitted without a page load, the question is replaced by the
// graded version, a rejected answer shows the server's message, and "try
// again" works from the replaced form.
func TestQuizInlineInBrowser(t *testing.T) {
	env := newEnv(t, quizCourse(t))
	page := newBrowserPage(t)
	do, attr, text, eval := page.do, page.attr, page.text, page.eval

	const q = `[id="q-demo/pick-many"]`
	do(
		chromedp.Navigate(env.HTTP.URL+"/lessons/01-quiz?lang=en"),
		chromedp.WaitReady(chromedp.CSS(q)),
		chromedp.Evaluate[chromedp.Void](`window.quizMarker = 7; undefined`), // a page load would lose this
		chromedp.Click(chromedp.CSS(`[id="q-demo/pick-many:a"]`)),
		chromedp.Click(chromedp.CSS(`[id="q-demo/pick-many:c"]`)),
		chromedp.Click(chromedp.CSS(q+` button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(q+` [data-testid=result]`)),
	)
	// A wrong multi answer says how many picks are right, not which.
	correct, mark := attr(q+` [data-testid=result]`, "data-correct"), attr(q+` li[data-option=c]`, "data-mark")
	tally, marker := text(q+` [data-testid=tally]`), eval(`window.quizMarker`)
	if correct != "false" || mark != "" || !strings.Contains(tally, "1 of the 2 options you chose") || marker != 7 {
		t.Errorf("after a wrong answer: correct=%q mark(c)=%q tally=%q marker=%d", correct, mark, tally, marker)
	}

	// Try again from the replaced form: uncheck c, check b.
	do(
		chromedp.Click(chromedp.CSS(`[id="q-demo/pick-many:c"]`)),
		chromedp.Click(chromedp.CSS(`[id="q-demo/pick-many:b"]`)),
		chromedp.Click(chromedp.CSS(q+` button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(q+` [data-testid=result][data-correct=true]`)),
	)
	if a, m := attr(q+` [data-testid=quiz-status]`, "data-attempts"), eval(`window.quizMarker`); a != "2" || m != 7 {
		t.Errorf("after trying again: attempts=%q marker=%d", a, m)
	}

	// A number the server rejects: its message appears, nothing is graded.
	const n = `[id="cp-demo/number"]`
	do(
		chromedp.SendKeys(chromedp.CSS(n+` input[name=answer]`), "twelve"),
		chromedp.Click(chromedp.CSS(n+` button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(n+` [data-testid=quiz-error]`)),
	)
	msg := text(n + ` [data-testid=quiz-error]`)
	results := eval(`document.querySelectorAll('[id="cp-demo/number"] [data-testid=result]').length`)
	if !strings.Contains(msg, "Enter a number") || results != 0 {
		t.Errorf("rejected number: message %q, %d results", msg, results)
	}
	if n := countAttempts(t, env); n != 2 {
		t.Errorf("%d attempts stored, want 2", n)
	}

	// "Show answer" on the order question, then answering it: the answer
	// is right and flagged as seen, with no credit (issue 29 item 5).
	const o = `[id="cp-demo/steps"]`
	do(
		chromedp.Click(chromedp.CSS(o+` [data-testid=reveal-open]`)),
		chromedp.Click(chromedp.CSS(o+` [data-testid=reveal]`)),
		chromedp.WaitVisible(chromedp.CSS(o+` [data-testid=result]`)),
		chromedp.SetValue(chromedp.CSS(`[id="cp-demo/steps:pos1"]`), "first"),
		chromedp.SetValue(chromedp.CSS(`[id="cp-demo/steps:pos2"]`), "second"),
		chromedp.SetValue(chromedp.CSS(`[id="cp-demo/steps:pos3"]`), "third"),
		chromedp.Click(chromedp.CSS(o+` button.primary[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(o+` [data-testid=seen]`)),
	)
	if best := attr(o+` [data-testid=quiz-status]`, "data-best"); best != "false" {
		t.Errorf("a right order answer after \"show answer\" counts: best=%q", best)
	}

	// A reload keeps every answered question as the learner left it: the
	// answer, the verdict, the explanation where shown (issue 30 item 9).
	do(
		chromedp.Navigate(env.HTTP.URL+"/lessons/01-quiz?lang=en"),
		chromedp.WaitReady(chromedp.CSS(q+` [data-testid=result]`)),
	)
	evalString := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(page.ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	checked := evalString(`[...document.querySelectorAll('[id="q-demo/pick-many"] input:checked')].map(e => e.value).sort().join(",")`)
	pos2 := evalString(`document.querySelector('[id="cp-demo/steps:pos2"]').value`)
	if c := attr(q+` [data-testid=result]`, "data-correct"); c != "true" || checked != "a,b" {
		t.Errorf("after a reload the multi question shows correct=%q checked=%v", c, checked)
	}
	if ex := text(q + ` [data-testid=explanation]`); ex == "" {
		t.Error("after a reload the explanation of a right answer is gone")
	}
	if pos2 != "second" {
		t.Errorf("after a reload the order question's position 2 holds %q", pos2)
	}
	if n := eval(`document.querySelectorAll('[id="cp-demo/steps"] [data-testid=seen]').length`); n != 1 {
		t.Errorf("after a reload the seen flag shows %d times", n)
	}
}
