package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
)

// TestGradedQuiz (issue 29, graded mode): an instructor makes lesson 01
// graded for a class in the Asia/Shanghai zone on the settings page; a
// learner of the class answers a checkpoint question in the browser
// (quiz.js): the question says how many of its attempts are used and when
// the quiz closes, with the zone's name and offset, and shows no answer,
// marks or explanation — in English and in Chinese (no English or Western
// punctuation leaking into the zh page). The instructor moves the close
// date into the past: the same page then shows the answer and explanation
// and takes no more answers, in both languages.
func TestGradedQuiz(t *testing.T) {
	flow(t)
	admin := newBrowser(t, shared)
	admin.open("/instructor/login?lang=en")
	admin.do("fill the login form",
		chromedp.SendKeys(chromedp.CSS(`[data-testid=instructor-login] input[name=username]`), "admin"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=instructor-login] input[name=password]`), instructorPassword),
	)
	admin.navigates("log in", chromedpClick(`[data-testid=instructor-login] button[type=submit]`))
	admin.open("/instructor/classes?lang=en")
	admin.do("name the class", evalVoid(`document.querySelector("[data-testid=classes] input[name=name]").value = "计分班"`))
	admin.navigates("create the class", chromedpClick(`[data-testid=class-create]`))
	row := `(function(){for(var r of document.querySelectorAll("[data-testid=class]")){if(r.textContent.indexOf("计分班")>=0){return r}}})()`
	join := eval[string](admin, `new URL(`+row+`.querySelector("[data-testid=class-join-url]").value).pathname`)
	admin.navigates("open graded mode", evalVoid(row+`.querySelector("[data-testid=class-graded]").click()`))
	if n := admin.count(`[data-testid=graded-settings]`); n != 1 {
		t.Fatalf("no graded settings page (at %s)", eval[string](admin, `location.pathname`))
	}
	admin.do("choose the zone", evalVoid(`document.getElementById("gset-zone").value = "Asia/Shanghai"`))
	admin.navigates("save the zone", evalVoid(`document.querySelector("[data-testid=gset-zone-form]").submit()`))
	if z := admin.text(`[data-testid=gset-zone]`); !strings.Contains(z, "Asia/Shanghai (UTC+08:00)") {
		t.Fatalf("zone shown %q", z)
	}
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	form := `document.querySelector('[data-testid=gset-lesson][data-lesson="` + lesson01 + `"] form')`
	setGraded := func(opens, closes time.Time) {
		t.Helper()
		admin.do("fill the lesson's graded setting", evalVoid(fmt.Sprintf(`(function(f){
			f.querySelector('input[name=mode][value=graded]').checked = true;
			f.querySelector('input[name=opens]').value = %q;
			f.querySelector('input[name=closes]').value = %q;
			f.querySelector('input[name=limit]').value = "2";
			f.querySelector('select[name=counts]').value = "best";
		})(%s)`, opens.In(shanghai).Format("2006-01-02T15:04"), closes.In(shanghai).Format("2006-01-02T15:04"), form)))
		admin.navigates("save the lesson's setting", evalVoid(form+`.submit()`))
		if n := admin.count(`[data-testid=gset-notice]`); n != 1 {
			t.Fatalf("saving the graded setting: %q", admin.text(`body`))
		}
	}
	now := time.Now()
	closes := now.Add(time.Hour)
	setGraded(now.Add(-time.Hour), closes)
	closesShown := closes.In(shanghai).Format("2006-01-02 15:04")

	learner := newBrowser(t, shared)
	learner.open(join + "?lang=en")
	learner.navigates("join", chromedpClick(`[data-testid=join-submit]`))
	learner.open(lesson01EN)
	q := `[data-testid=checkpoint] [data-testid=quiz][data-question="why-rdma/overheads"]`
	status := func() string { return learner.text(q + ` [data-testid=quiz-status]`) }
	if s := status(); !strings.Contains(s, "Attempts: 0 of 2") || !strings.Contains(s, "closes "+closesShown+" (Asia/Shanghai, UTC+08:00)") {
		t.Errorf("before answering the status line says %q", s)
	}
	learner.waitFor("quiz.js loaded", `document.querySelector('script[src*="js/quiz.js"]') && document.readyState === "complete"`, stepTimeout)
	learner.click(q + ` input[name=answer][value=copies]`)
	learner.do("clear marker", evalVoid(`document.querySelector('`+q+`').dataset.e2eOld = "1"`))
	learner.click(q + ` button[type=submit]`)
	learner.waitFor("graded question", `(function(){var e=document.querySelector('`+q+`');return e && !e.dataset.e2eOld && e.querySelector("[data-testid=result]")})()`, stepTimeout)
	hidden := func(lang string) {
		t.Helper()
		if n := learner.count(q + ` [data-testid=explanation], ` + q + ` [data-testid=feedback], ` + q + ` [data-testid=mark], ` + q + ` [data-testid=tally]`); n != 0 {
			t.Errorf("%s: before the close the question shows %d of explanation, feedback, marks, tally", lang, n)
		}
		if n := learner.count(q + ` [data-mark=right], ` + q + ` [data-mark=missed], ` + q + ` [data-mark=answer]`); n != 0 {
			t.Errorf("%s: before the close %d options are marked", lang, n)
		}
	}
	if s := status(); !strings.Contains(s, "Attempts: 1 of 2") || !strings.Contains(s, "(Asia/Shanghai, UTC+08:00)") {
		t.Errorf("after answering (inline) the status line says %q", s)
	}
	hidden("en")
	if r := learner.text(q + ` [data-testid=result]`); !strings.Contains(r, "Submitted: not correct.") || !strings.Contains(r, closesShown) {
		t.Errorf("the sealed verdict says %q", r)
	}

	learner.open("/lessons/" + lesson01 + "?lang=zh")
	s := status()
	if !strings.Contains(s, "已作答 1 次，共 2 次机会") || !strings.Contains(s, "截止："+closesShown+"（Asia/Shanghai，UTC+08:00）") {
		t.Errorf("zh status line %q", s)
	}
	if leaks := append(zhcheck.Prose(s), zhcheck.Leaks(s)...); len(leaks) > 0 {
		t.Errorf("zh status line %q: %v", s, leaks)
	}
	box := learner.text(`[data-testid=graded-box]`)
	if leaks := append(zhcheck.Prose(box), zhcheck.Leaks(box)...); len(leaks) > 0 || !strings.Contains(box, "计分测验") {
		t.Errorf("zh graded box %q: %v", box, leaks)
	}
	hidden("zh")

	// The instructor closes the quiz (a close date a minute ago).
	setGraded(now.Add(-time.Hour), time.Now().Add(-time.Minute))
	for _, lang := range []string{"en", "zh"} {
		learner.open("/lessons/" + lesson01 + "?lang=" + lang)
		if n := learner.count(q + ` [data-testid=explanation]`); n != 1 {
			t.Errorf("%s: after the close the question shows %d explanations, want 1", lang, n)
		}
		if n := learner.count(q + ` [data-mark=missed], ` + q + ` [data-mark=right], ` + q + ` [data-mark=wrong]`); n == 0 {
			t.Errorf("%s: after the close no option is marked", lang)
		}
		if n := learner.count(q + ` [data-testid=quiz-locked]`); n != 1 {
			t.Errorf("%s: after the close the question still takes answers", lang)
		}
		other := `[data-testid=checkpoint] [data-testid=quiz]:not([data-question="why-rdma/overheads"]) [data-testid=explanation]`
		if n := learner.count(other); n == 0 {
			t.Errorf("%s: after the close the unanswered questions show no answer", lang)
		}
	}
}
