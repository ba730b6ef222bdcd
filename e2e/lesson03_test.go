package e2e

import (
	"fmt"
	"strings"
	"testing"
)

const lesson03 = "03-verbs-lifecycle"

// TestLesson03Walk walks lesson 03 in Chinese and in English: its text and
// table of contents, the rdma-cm and ud-vs-rc experiments, the step-through
// widget (reached with Tab; this labserver has no Soft-RoCE guest, so the
// widget says why and keeps Start disabled — the step-through itself is
// walked by keyboard in web's TestLesson03StepThroughByKeyboard and for
// real in the guest by sandbox/rdmaexp), the links back to lessons 01 and
// 02, and a question answered with a misconception, then right.
func TestLesson03Walk(t *testing.T) {
	flow(t)
	for _, lang := range []string{"zh", "en"} {
		t.Run(lang, func(t *testing.T) {
			b := newBrowser(t, shared)
			b.open("/lessons/" + lesson03 + "?lang=" + lang)
			if slug := eval[string](b, `(document.querySelector("[data-testid=lesson]")||{dataset:{}}).dataset.slug || ""`); slug != lesson03 {
				t.Fatalf("lesson page slug = %q, want %s", slug, lesson03)
			}
			h1 := b.text("article h1")
			if cjk := eval[bool](b, hasCJK+`(document.querySelector("article h1").textContent)`); cjk != (lang == "zh") {
				t.Errorf("%s title %q: Chinese text = %v", lang, h1, cjk)
			}
			if n := b.count("[data-testid=objectives] li"); n != 4 {
				t.Errorf("%d objectives, want 4", n)
			}
			tocBroken := eval[[]string](b, `Array.from(document.querySelectorAll("[data-testid=toc] a")).map(a => a.getAttribute("href")).filter(h => !document.getElementById(decodeURIComponent(h.slice(1))))`)
			if n := b.count("[data-testid=toc] a"); n < 10 || len(tocBroken) > 0 {
				t.Errorf("table of contents: %d links, broken %v", n, tocBroken)
			}
			for _, id := range []string{"rdma-cm", "ud-vs-rc"} {
				if n := b.count(`[data-testid=experiment][data-experiment="` + id + `"]`); n != 1 {
					t.Errorf("experiment %s placed %d times, want once", id, n)
				}
			}
			st := `[data-testid=stepthrough][data-experiment=verbs-steps]`
			if n := b.count(st); n != 1 {
				t.Fatalf("the step-through is placed %d times, want once", n)
			}
			b.waitFor("the step-through's lab line", `(document.querySelector('`+st+` [data-testid=st-lab]')||{}).dataset.state`, stepTimeout)
			if s := eval[string](b, `document.querySelector('`+st+` [data-testid=st-lab]').dataset.state`); s == "ready" {
				t.Skip("this labserver has a ready Soft-RoCE lab; the walk below expects none")
			}
			if !eval[bool](b, `document.querySelector('`+st+` [data-action=start]').disabled`) {
				t.Error("Start is enabled although the lab cannot run RDMA experiments")
			}
			if got := b.text(st + ` [data-testid=st-lab]`); len(got) < 10 {
				t.Errorf("the lab line says %q: it should say why the walk cannot start", got)
			}
			if n := b.count(st + ` [data-cmd]:not([hidden])`); n != 0 {
				t.Errorf("%d command buttons shown before a run", n)
			}
			if href := eval[string](b, `(document.querySelector('a[rel=prev]')||{getAttribute:()=>""}).getAttribute("href") || ""`); !strings.Contains(href, "02-lossless-roce") {
				t.Errorf("previous-lesson link %q, want lesson 02", href)
			}
			if n := b.count(`a[href*="01-why-rdma"]`); n < 1 {
				t.Error("no link to the prerequisite lesson 01")
			}
			if n := b.count(`[data-testid=checkpoint] [data-testid=quiz]`); n < 3 {
				t.Errorf("checkpoint holds %d questions, want ≥ 3", n)
			}

			// The wrong-QPN question: "the device refuses it at RTR" first.
			q := `[data-testid=quiz][data-question="verbs/wrong-qpn"]`
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
			if c := answer("einval"); c != "false" {
				t.Fatalf("einval graded correct=%s", c)
			}
			fb := b.text(q + ` [data-option=einval] [data-testid=feedback]`)
			if want := map[string]string{"zh": "无从知道", "en": "cannot know"}[lang]; !strings.Contains(fb, want) {
				t.Errorf("the EINVAL misconception's feedback = %q, want it to say the device %q", fb, want)
			}
			if c := answer("retry-exc"); c != "true" {
				t.Fatalf("retry-exc graded correct=%s", c)
			}
			if ex := b.text(q + ` [data-testid=explanation]`); !strings.Contains(ex, "IBV_WC_RETRY_EXC_ERR") {
				t.Errorf("explanation %q does not name IBV_WC_RETRY_EXC_ERR", ex)
			}
		})
	}
}
