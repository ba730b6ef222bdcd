package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestCheckpointQuiz: a checkpoint question answered wrong, then right,
// inline (quiz.js, no page load): per-option feedback, the explanation, the
// attempt count, and the score on the home page.
func TestCheckpointQuiz(t *testing.T) {
	flow(t)
	b := newBrowser(t, shared)
	b.open(lesson01EN)
	q := `[data-testid=checkpoint] [data-testid=quiz][data-question="why-rdma/overheads"]`
	if n := b.count(q); n != 1 {
		t.Fatalf("checkpoint shows the overheads question %d times", n)
	}
	if n := b.count(q + ` [data-testid=feedback], ` + q + ` [data-testid=explanation]`); n != 0 {
		t.Fatal("feedback or explanation is in the page before any answer")
	}
	b.waitFor("quiz.js loaded", `document.querySelector('script[src*="js/quiz.js"]') && document.readyState === "complete"`, stepTimeout)
	b.do("mark page", evalVoid(`window.__e2eStay = true`))

	// choose sets the checkboxes to exactly the given options, by clicking.
	choose := func(want ...string) {
		t.Helper()
		opts := eval[[]string](b, `Array.from(document.querySelectorAll('`+q+` input[name=answer]')).map(i => i.value)`)
		for _, o := range opts {
			sel := fmt.Sprintf(`%s input[name=answer][value=%q]`, q, o)
			checked := eval[bool](b, `document.querySelector('`+strings.ReplaceAll(sel, `'`, `\'`)+`').checked`)
			if checked != contains(want, o) {
				b.click(sel)
			}
		}
	}
	submit := func() {
		t.Helper()
		b.do("clear marker", evalVoid(`document.querySelector('`+q+`').dataset.e2eOld = "1"`))
		b.click(q + ` button[type=submit]`)
		// quiz.js replaces the whole question with the server's rendering.
		b.waitFor("graded question", `(function(){var e=document.querySelector('`+q+`');return e && !e.dataset.e2eOld && e.querySelector("[data-testid=result]")})()`, stepTimeout)
	}

	// Wrong: a real overhead plus a misconception (acknowledgements and
	// retransmission are not removed, they move into the NIC).
	choose("copies", "acks")
	submit()
	if c := eval[string](b, `document.querySelector('`+q+` [data-testid=result]').dataset.correct`); c != "false" {
		t.Fatalf("copies+acks graded correct=%s, want false", c)
	}
	// Before the answer is revealed a wrong multi answer says how many
	// picks are right, never which: no marks, no per-option feedback, no
	// explanation (it states the answer); "show answer" is offered.
	if tally := b.text(q + ` [data-testid=tally]`); !strings.Contains(tally, "1 of the 2") {
		t.Errorf("the wrong answer's tally is %q, want 1 of the 2 picks right", tally)
	}
	if n := b.count(q + ` [data-testid=feedback], ` + q + ` [data-testid=mark], ` + q + ` [data-testid=explanation]`); n != 0 {
		t.Error("a first wrong attempt gives the answer away (options marked or explanation shown)")
	}
	if n := b.count(q + ` [data-testid=reveal]`); n != 1 {
		t.Error("no show-answer button after a wrong attempt")
	}
	if !eval[bool](b, `window.__e2eStay === true`) {
		t.Fatal("answering loaded a new page: the inline (JavaScript) path was not used")
	}

	// Right: exactly the overheads RDMA removes — the source's three
	// (copies, the kernel stack, context switches) and the stack's
	// per-packet interrupts, which the lesson names on their own.
	choose("copies", "stack", "irqs", "switches")
	submit()
	if c := eval[string](b, `document.querySelector('`+q+` [data-testid=result]').dataset.correct`); c != "true" {
		t.Fatalf("copies+stack+irqs+switches graded correct=%s, want true", c)
	}
	if ex := b.text(q + ` [data-testid=explanation]`); len(ex) < 20 {
		t.Errorf("explanation %q", ex)
	}
	st := eval[map[string]string](b, `Object.assign({}, document.querySelector('`+q+` [data-testid=quiz-status]').dataset)`)
	if st["attempts"] != "2" || st["best"] != "true" {
		t.Errorf("status after wrong then right: %v, want 2 attempts, best right", st)
	}
	if !eval[bool](b, `window.__e2eStay === true`) {
		t.Fatal("the second answer loaded a new page")
	}

	// "Show answer" on another checkpoint question shows it, inline.
	rq := `[data-testid=checkpoint] [data-testid=quiz][data-question="why-rdma/write-semantics"]`
	b.do("mark reveal", evalVoid(`document.querySelector('`+rq+`').dataset.e2eOld = "1"`))
	// Apart from Submit and confirmed: the button that shows the answer is
	// hidden until the learner opens "Show answer" and reads what it costs.
	if eval[bool](b, `(function(){ var r = document.querySelector('`+rq+` [data-testid=reveal]'); return !!r && r.checkVisibility(); })()`) {
		t.Error("the button that shows the answer is visible before the learner asked for it")
	}
	if eval[bool](b, `!!document.querySelector('`+rq+` .quiz-actions [data-testid=reveal], `+rq+` .quiz-actions [data-testid=reveal-open]')`) {
		t.Error("\"Show answer\" sits beside Submit")
	}
	b.click(rq + ` [data-testid=reveal-open]`)
	if msg := b.text(rq + ` [data-testid=reveal-box] p`); !strings.Contains(msg, "no credit") {
		t.Errorf("opening \"Show answer\" says %q, not what it costs", msg)
	}
	b.click(rq + ` [data-testid=reveal]`)
	b.waitFor("revealed answer", `(function(){var e=document.querySelector('`+rq+`');return e && !e.dataset.e2eOld && e.querySelector("[data-testid=explanation]")})()`, stepTimeout)
	if n := b.count(rq + ` li[data-mark=answer]`); n != 1 {
		t.Errorf("the revealed answer marks %d options", n)
	}
	if st := b.text(rq + ` [data-testid=quiz-status]`); strings.Contains(st, "best") || !strings.Contains(st, "answer seen") {
		t.Errorf("after showing the answer without an attempt the status reads %q (want no attempt, answer seen)", st)
	}

	// The home page counts the checkpoint question as solved.
	b.open("/")
	score := b.text(`[data-testid=lesson][data-slug="` + lesson01 + `"] [data-testid=score]`)
	if !regexp.MustCompile(`(^|\D)1/\d+`).MatchString(score) {
		t.Errorf("home score after one right answer = %q, want 1/N", score)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
