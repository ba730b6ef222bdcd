package e2e

import (
	"fmt"
	"strings"
	"testing"
)

const lesson02 = "02-lossless-roce"

// TestLesson02Walk walks lesson 02 in Chinese and in English: its text,
// the three experiments, the three labelled animations (running, with a
// replay control and their steps as text), links back to lesson 01, and a
// question answered wrong (a misconception's feedback) and then right.
func TestLesson02Walk(t *testing.T) {
	flow(t)
	for _, lang := range []string{"zh", "en"} {
		t.Run(lang, func(t *testing.T) {
			b := newBrowser(t, shared)
			b.open("/lessons/" + lesson02 + "?lang=" + lang)
			if slug := eval[string](b, `(document.querySelector("[data-testid=lesson]")||{dataset:{}}).dataset.slug || ""`); slug != lesson02 {
				t.Fatalf("lesson page slug = %q, want %s", slug, lesson02)
			}
			h1 := b.text("article h1")
			if cjk := eval[bool](b, hasCJK+`(document.querySelector("article h1").textContent)`); cjk != (lang == "zh") {
				t.Errorf("%s title %q: Chinese text = %v", lang, h1, cjk)
			}
			if n := b.count("[data-testid=objectives] li"); n < 5 {
				t.Errorf("%d objectives, want 5", n)
			}
			tocBroken := eval[[]string](b, `Array.from(document.querySelectorAll("[data-testid=toc] a")).map(a => a.getAttribute("href")).filter(h => !document.getElementById(decodeURIComponent(h.slice(1))))`)
			if n := b.count("[data-testid=toc] a"); n < 10 || len(tocBroken) > 0 {
				t.Errorf("table of contents: %d links, broken %v", n, tocBroken)
			}
			for _, id := range []string{"loss-sweep", "retry-budget", "dscp-ecn"} {
				if n := b.count(`[data-testid=experiment][data-experiment="` + id + `"]`); n != 1 {
					t.Errorf("experiment %s placed %d times, want once", id, n)
				}
			}
			label := map[string]string{"zh": "动画，不是测量", "en": "Animation, not a measurement"}[lang]
			for _, id := range []string{"pfc-pause", "pause-storm", "dcqcn-rate"} {
				fig := `figure[data-diagram="` + id + `"][data-animation]`
				if n := b.count(fig); n != 1 {
					t.Errorf("animation %s shown %d times, want once", id, n)
					continue
				}
				if got := b.text(fig + ` [data-testid=anim-label]`); got != label {
					t.Errorf("%s label %q, want %q", id, got, label)
				}
				if n := b.count(fig + ` .anim-steps li`); n < 5 {
					t.Errorf("%s has %d steps as text, want ≥ 5", id, n)
				}
				// SMIL runs: the document timeline moves, and a click on
				// the replay control restarts it without an error.
				if !eval[bool](b, `document.querySelector('`+fig+` svg').getCurrentTime() >= 0`) {
					t.Errorf("%s: no SVG animation timeline", id)
				}
				b.do("replay "+id, evalVoid(`document.querySelector('`+fig+` [data-testid=anim-replay]').dispatchEvent(new MouseEvent("click", {bubbles: true}))`))
			}
			if href := eval[string](b, `(document.querySelector('a[rel=prev]')||{}).getAttribute ? document.querySelector('a[rel=prev]').getAttribute("href") : ""`); !strings.Contains(href, "01-why-rdma") {
				t.Errorf("previous-lesson link %q, want lesson 01", href)
			}
			if n := b.count(`a[href*="01-why-rdma"]`); n < 2 {
				t.Errorf("%d links to lesson 01, want the prerequisite link in the text and the previous-lesson link", n)
			}
			if n := b.count(`[data-testid=checkpoint] [data-testid=quiz]`); n < 6 {
				t.Errorf("checkpoint holds %d questions, want ≥ 6", n)
			}

			// The go-back-N question: the SACK misconception first, then the answer.
			q := `[data-testid=quiz][data-question="lossless/go-back-n"]`
			if n := b.count(q + ` [data-testid=feedback], ` + q + ` [data-testid=explanation]`); n != 0 {
				t.Fatal("feedback or explanation is in the page before any answer")
			}
			b.waitFor("quiz.js loaded", `document.querySelector('script[src*="js/quiz.js"]') && document.readyState === "complete"`, stepTimeout)
			answer := func(opt string) string {
				t.Helper()
				b.click(fmt.Sprintf(`%s input[name=answer][value=%q]`, q, opt))
				b.do("mark", evalVoid(`document.querySelector('`+q+`').dataset.e2eOld = "1"`))
				b.click(q + ` button[type=submit]`)
				b.waitFor("graded question", `(function(){var e=document.querySelector('`+q+`');return e && !e.dataset.e2eOld && e.querySelector("[data-testid=result]")})()`, stepTimeout)
				return eval[string](b, `document.querySelector('`+q+` [data-testid=result]').dataset.correct`)
			}
			if c := answer("only-lost"); c != "false" {
				t.Fatalf("only-lost graded correct=%s", c)
			}
			fb := b.text(q + ` [data-option=only-lost] [data-testid=feedback]`)
			if !strings.Contains(fb, "SACK") {
				t.Errorf("the SACK misconception's feedback = %q", fb)
			}
			if c := answer("from-lost"); c != "true" {
				t.Fatalf("from-lost graded correct=%s", c)
			}
			if ex := b.text(q + ` [data-testid=explanation]`); !strings.Contains(ex, "go-back-N") {
				t.Errorf("explanation %q does not name go-back-N", ex)
			}
		})
	}
}
