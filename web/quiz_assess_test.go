package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
)

// optionOrder is the option ids of question id at its first placement.
func optionOrder(d *goquery.Document, id string) string {
	var ids []string
	d.Find(`section.quiz[data-question="` + id + `"]`).First().Find("li.quiz-option").Each(func(_ int, s *goquery.Selection) {
		ids = append(ids, s.AttrOr("data-option", ""))
	})
	return strings.Join(ids, ",")
}

// Lesson 01 as issue 14 found it: the correct option first for everyone,
// the checkpoint asking again what the text asked, two Checkpoint
// headings, a takeaways callout titled like its heading, further reading
// twice. Now: options in each learner's own stable order (the cached page
// skeleton and the per-request page agree), one of each, and a checkpoint
// of the questions the text did not ask.
func TestLessonQuizzesAssess(t *testing.T) {
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, course)
	const slug = "/lessons/01-why-rdma"
	for _, lang := range []string{"zh", "en"} {
		c := env.client()
		d := env.doc(c, slug+"?lang="+lang, http.StatusOK)
		if n := d.Find(`[id="checkpoint"]`).Length(); n != 1 {
			t.Errorf("%s: %d elements with id=checkpoint", lang, n)
		}
		if n := d.Find(`h2`).FilterFunction(func(_ int, s *goquery.Selection) bool {
			return strings.TrimSpace(s.Text()) == "检查点" || strings.TrimSpace(s.Text()) == "Checkpoint"
		}).Length(); n != 1 {
			t.Errorf("%s: %d Checkpoint headings", lang, n)
		}
		cp := d.Find("[data-testid=checkpoint]")
		inline := d.Find("section.quiz").Length() - cp.Find("section.quiz").Length()
		if n := cp.Find("section.quiz").Length(); n == 0 || n+inline != len(course.Lesson("01-why-rdma").Quiz.Questions) {
			t.Errorf("%s: checkpoint asks %d, the text %d", lang, n, inline)
		}
		cp.Find("section.quiz").Each(func(_ int, s *goquery.Selection) {
			if d.Find(`[id="q-`+s.AttrOr("data-question", "")+`"]`).Length() != 0 {
				t.Errorf("%s: the checkpoint asks %s again", lang, s.AttrOr("data-question", ""))
			}
		})
		if n := d.Find(".callout-takeaway .callout-label").Length(); n != 0 {
			t.Errorf("%s: the takeaways callout repeats its heading", lang)
		}
		for _, r := range course.Lesson("01-why-rdma").Page(lang).References {
			if n := d.Find(`article.lesson a[href="` + r.URL + `"]`).Length(); n > 1 {
				t.Errorf("%s: %s is listed %d times", lang, r.URL, n)
			}
		}

		// Per-learner order: stable on reload, the same on the skeleton
		// path and the per-request path (?attempt= with junk takes the
		// cached skeleton; ?x= takes the per-request one).
		var orders = map[string]bool{}
		first := map[string]bool{}
		for i := range 12 {
			c := env.client()
			a := env.doc(c, slug+"?lang="+lang, http.StatusOK)
			b := env.doc(c, slug+"?lang="+lang+"&x=1", http.StatusOK)
			o := optionOrder(a, "why-rdma/regmr-container")
			if o == "" || o != optionOrder(b, "why-rdma/regmr-container") || o != optionOrder(env.doc(c, slug+"?lang="+lang, 200), "why-rdma/regmr-container") {
				t.Fatalf("%s learner %d: order %q, per request %q", lang, i, o, optionOrder(b, "why-rdma/regmr-container"))
			}
			orders[o] = true
			first[strings.Split(o, ",")[0]] = true
		}
		if len(orders) < 3 || len(first) < 2 {
			t.Errorf("%s: 12 learners saw %d orders, %d different first options", lang, len(orders), len(first))
		}
	}
}

// "Show answer" is recorded for the instructor and shows the answer; a
// numeric answer in a bad format is recorded and its message gives no
// answer away.
func TestQuizRevealAndFormatErrors(t *testing.T) {
	env := newEnv(t, quizCourse(t))
	c := env.client()
	res, body := postJSON(t, env, c, "demo/number", `{"answer":"12,6 GB/s"}`, "Accept-Language", "en")
	if res.StatusCode != 400 || strings.Contains(string(body), "12.6") || strings.Contains(string(body), "12.5") {
		t.Errorf("format error %d %s", res.StatusCode, body)
	}
	form := url.Values{"answer": {"twelve"}, "lesson": {"01-quiz"}, "anchor": {"cp-demo/number"}}
	postForm(t, c, env.HTTP.URL+attemptsPath("demo/number"), form).Body.Close()

	// A wrong answer keeps the hint open.
	_, body = postJSON(t, env, c, "demo/pick-one", `{"answer":"b","anchor":"cp-demo/pick-one","lesson":"01-quiz"}`, "Accept-Language", "en")
	var wrong struct{ HTML string }
	json.Unmarshal(body, &wrong)
	if !strings.Contains(wrong.HTML, `data-testid="hint" open`) && !strings.Contains(wrong.HTML, `open data-testid="hint"`) {
		t.Errorf("hint not open after a wrong answer: %s", wrong.HTML)
	}
	res, body = postJSON(t, env, c, "demo/pick-one", `{"reveal":true,"anchor":"cp-demo/pick-one","lesson":"01-quiz"}`, "Accept-Language", "en")
	if res.StatusCode != 200 {
		t.Fatalf("reveal: %d %s", res.StatusCode, body)
	}
	var got struct{ HTML string }
	json.Unmarshal(body, &got)
	d, _ := goquery.NewDocumentFromReader(strings.NewReader(got.HTML))
	if d.Find(`li.quiz-option[data-mark=answer]`).Length() == 0 || d.Find("[data-testid=explanation]").Length() != 1 {
		t.Errorf("revealed html: %s", got.HTML)
	}
	// Without JavaScript: the button posts the form, the page shows it.
	form = url.Values{"reveal": {"1"}, "lesson": {"01-quiz"}, "anchor": {"cp-demo/steps"}}
	res = postForm(t, c, env.HTTP.URL+attemptsPath("demo/steps"), form)
	res.Body.Close()
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "reveal=demo%2Fsteps") {
		t.Fatalf("reveal form: %d %s", res.StatusCode, loc)
	}
	page := env.doc(c, loc, 200)
	if page.Find(`[id="cp-demo/steps"] [data-testid=placed] li[data-mark=answer]`).Length() != 3 {
		t.Error("the no-JS reveal does not show the order")
	}
	// Another learner following the link sees no answer.
	if env.doc(env.client(), loc, 200).Find("[data-testid=placed]").Length() != 0 {
		t.Error("another learner sees the revealed answer")
	}

	counts, err := env.DB.AllQuizEventCounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if counts["demo/number"].FormatErrors != 2 || counts["demo/pick-one"].Reveals != 1 || counts["demo/steps"].Reveals != 1 {
		t.Errorf("recorded %+v", counts)
	}
	if n := countAttempts(t, env); n != 1 {
		t.Errorf("%d attempts stored, want the 1 answer: reveals and format errors are not answers", n)
	}
	_ = quiz.Single
}
