package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

const lesson05 = "06-performance"

// perfExperiments are the widgets lesson 05 is built around, in page order.
var perfExperiments = []string{"perf-sweep", "perf-inline", "perf-signal", "perf-postlist", "perf-depth", "perf-mtu", "perf-wait", "perf-mr-cost"}

// TestLesson05Walk: a learner reads lesson 05 in English and in Chinese —
// objectives, a table of contents whose links land, every experiment widget
// with its presets and the lab status — answers the bandwidth-delay
// question by keyboard and a misconception question wrong, and sees the
// teaching feedback.
func TestLesson05Walk(t *testing.T) {
	flow(t)
	b := newBrowser(t, shared)
	b.open("/lessons/" + lesson05 + "?lang=en")
	if slug := eval[string](b, `(document.querySelector("[data-testid=lesson]")||{dataset:{}}).dataset.slug || ""`); slug != lesson05 {
		t.Fatalf("lesson page slug = %q, want %s", slug, lesson05)
	}
	if n := b.count("[data-testid=objectives] li"); n < 4 {
		t.Errorf("lesson 05 lists %d objectives, want at least 4", n)
	}
	tocBroken := eval[[]string](b, `Array.from(document.querySelectorAll("[data-testid=toc] a")).map(a => a.getAttribute("href")).filter(h => !document.getElementById(decodeURIComponent(h.slice(1))))`)
	if n := b.count("[data-testid=toc] a"); n < 10 || len(tocBroken) > 0 {
		t.Errorf("table of contents: %d links, broken %v", n, tocBroken)
	}
	got := eval[[]string](b, `Array.from(document.querySelectorAll("[data-testid=experiment]")).map(e => e.dataset.experiment)`)
	if strings.Join(got, " ") != strings.Join(perfExperiments, " ") {
		t.Errorf("experiment widgets %v, want %v", got, perfExperiments)
	}
	for _, id := range perfExperiments {
		w := `[data-testid=experiment][data-experiment="` + id + `"]`
		if n := b.count(w + ` [data-testid=experiment-form]`); n != 1 {
			t.Errorf("%s: %d run forms", id, n)
		}
		if n := b.count(w + ` [data-testid=experiment-lab]`); n != 1 {
			t.Errorf("%s: the widget does not show the Soft-RoCE lab's state", id)
		}
	}
	// the checkpoint gathers all ten; five also stand in the text
	if n := b.count(`[data-testid=checkpoint] [data-testid=quiz]`); n != 10 {
		t.Errorf("checkpoint has %d questions, want 10", n)
	}
	if n := b.count(`[data-testid=quiz]`); n != 15 {
		t.Errorf("%d questions on the page, want 15", n)
	}
	// The author's own "Further reading" list, plus a references box with
	// only what that list does not link (nothing is listed twice).
	if n := b.count("[data-testid=references] a[href^=http], h2#further-reading + ul a[href^=http]"); n < 3 {
		t.Errorf("%d further-reading links, want at least 3", n)
	}
	b.waitFor("quiz.js loaded", `document.querySelector('script[src*="js/quiz.js"]') && document.readyState === "complete"`, stepTimeout)

	// The bandwidth-delay product, typed and submitted with Enter.
	q := `[data-testid=quiz][data-question="perf/bdp"]`
	if n := b.count(q + ` [data-testid=explanation]`); n != 0 {
		t.Fatal("the explanation is in the page before any answer")
	}
	b.do("type 25 KB", chromedp.Focus(chromedp.CSS(q+` input[name=answer]`)), chromedp.KeyEvent("25"), evalVoid(`document.querySelector('`+q+`').dataset.e2eOld = "1"`), chromedp.KeyEvent(kb.Enter))
	b.waitFor("graded bdp", `(function(){var e=document.querySelector('`+q+`');return e && !e.dataset.e2eOld && e.querySelector("[data-testid=result]")})()`, stepTimeout)
	if c := eval[string](b, `document.querySelector('`+q+` [data-testid=result]').dataset.correct`); c != "true" {
		t.Errorf("25 KB graded correct=%s, want true", c)
	}

	// A misconception Soft-RoCE itself teaches: "MTU 4096 quadruples bandwidth".
	q = `[data-testid=quiz][data-question="perf/mtu"]`
	b.click(q + ` input[name=answer][value=quadruple]`)
	b.do("mark", evalVoid(`document.querySelector('`+q+`').dataset.e2eOld = "1"`))
	b.click(q + ` button[type=submit]`)
	b.waitFor("graded mtu", `(function(){var e=document.querySelector('`+q+`');return e && !e.dataset.e2eOld && e.querySelector("[data-testid=result]")})()`, stepTimeout)
	if c := eval[string](b, `document.querySelector('`+q+` [data-testid=result]').dataset.correct`); c != "false" {
		t.Errorf("the quadruple distractor graded correct=%s, want false", c)
	}
	if fb := b.text(q + ` [data-option=quadruple] [data-testid=feedback]`); !strings.Contains(fb, "Soft-RoCE") {
		t.Errorf("the distractor's feedback %q does not say where the belief comes from", fb)
	}

	// The Chinese page: same widgets, Chinese title.
	b.open("/lessons/" + lesson05 + "?lang=zh")
	if !eval[bool](b, hasCJK+`(document.querySelector("article h1").textContent)`) {
		t.Errorf("Chinese lesson 05 title has no Chinese text: %q", b.text("article h1"))
	}
	if n := b.count("[data-testid=experiment]"); n != len(perfExperiments) {
		t.Errorf("Chinese lesson 05 has %d experiment widgets, want %d", n, len(perfExperiments))
	}
	if n := b.count(`[data-testid=checkpoint] [data-testid=quiz]`); n != 10 {
		t.Errorf("Chinese checkpoint has %d questions, want 10", n)
	}
}
