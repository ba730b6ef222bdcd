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
	correct, mark := attr(q+` [data-testid=result]`, "data-correct"), attr(q+` li[data-option=c]`, "data-mark")
	feedback, marker := text(q+` li[data-option=c] [data-testid=feedback]`), eval(`window.quizMarker`)
	if correct != "false" || mark != "wrong" || feedback != "C is wrong" || marker != 7 {
		t.Errorf("after a wrong answer: correct=%q mark(c)=%q feedback=%q marker=%d", correct, mark, feedback, marker)
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
}
