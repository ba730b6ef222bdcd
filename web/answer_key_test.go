package web

import (
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// TestAnswerKey: every question with its answers and explanation, for
// instructors only; the stylesheet hides the site chrome when printing.
func TestAnswerKey(t *testing.T) {
	e := newInstrEnv(t)
	ada := e.instructor("ada", "correct horse battery")
	doc := e.page(e.do(ada, "GET", "/instructor/answers?lang=en", nil), http.StatusOK)
	if n := doc.Find(`[data-testid=key-question]`).Length(); n != 4 {
		t.Fatalf("%d questions in the key, want 4", n)
	}
	single := doc.Find(`[data-testid=key-question][data-id="alpha/single"]`)
	if ids := single.Find(`[data-testid=key-option][data-correct]`).AttrOr("data-id", ""); ids != "a" {
		t.Errorf("single: correct option %q, want a", ids)
	}
	if !strings.Contains(single.Text(), "Because A.") {
		t.Error("single: no explanation")
	}
	if got := doc.Find(`[data-testid=key-question][data-id="alpha/multi"] [data-testid=key-option][data-correct]`).Length(); got != 2 {
		t.Errorf("multi: %d correct options, want 2", got)
	}
	if got := strings.TrimSpace(doc.Find(`[data-testid=key-numeric]`).Text()); !strings.Contains(got, "12.5 ± 0.1 GB/s") {
		t.Errorf("numeric answer %q", got)
	}
	order := doc.Find(`[data-testid=key-question][data-id="alpha/order"] [data-testid=key-option]`)
	if order.Length() != 2 || !strings.HasPrefix(strings.TrimSpace(order.First().Text()), "1.") {
		t.Errorf("order answer: %q", order.Text())
	}
	// Learners never see it.
	learner := e.browser()
	e.do(learner, "GET", "/", nil).Body.Close()
	res := e.do(learner, "GET", "/instructor/answers", nil)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a learner gets %d for the answer key", res.StatusCode)
	}
	css, err := os.ReadFile("../static/css/instructor.css")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(css), "@media print") || !strings.Contains(string(css), "header.site, footer.site") {
		t.Error("instructor.css has no print rules hiding the site chrome")
	}
}

// TestAnswerKeyPerLessonAndClass (issue 29 item 10): the key of one
// lesson; a class's results beside each question; the question sheet
// prints what its page says (no answers); an option's id and text are
// apart in the text, not "aOption A".
func TestAnswerKeyPerLessonAndClass(t *testing.T) {
	e := newInstrEnv(t)
	ada := e.instructor("ada", "correct horse battery")
	res := e.do(ada, "POST", "/instructor/classes", url.Values{"name": {"Group A"}})
	res.Body.Close()
	doc := e.page(e.do(ada, "GET", "/instructor/classes", nil), http.StatusOK)
	code := doc.Find(`[data-testid=class-code]`).Text()
	for _, answers := range [][]string{{`{"answer":"b"}`, `{"answer":"a"}`}, {`{"answer":"a"}`}, {`{"answer":"c"}`}} {
		l := e.browser()
		res := e.do(l, "POST", "/join", url.Values{"code": {code}})
		res.Body.Close()
		for _, a := range answers {
			e.answer(l, "alpha/single", a)
		}
	}
	e.answer(e.browser(), "alpha/single", `{"answer":"a"}`) // outside the class

	doc = e.page(e.do(ada, "GET", "/instructor/answers?lesson=01-alpha&class=1&lang=zh", nil), http.StatusOK)
	if n := doc.Find(`[data-testid=key-lesson]`).Length(); n != 1 {
		t.Errorf("%d lessons in one lesson's key", n)
	}
	if got := doc.Find(`[data-testid=key-nav] [aria-current]`).Text(); !strings.HasPrefix(got, "第 01 课") {
		t.Errorf("current lesson in the nav %q", got)
	}
	single := doc.Find(`[data-testid=key-question][data-id="alpha/single"]`)
	if got := single.Find(`[data-testid=key-class-stats]`).Text(); got != "Group A：3 人作答，首次答对 33%。" {
		t.Errorf("class stats %q", got)
	}
	var counts []string
	single.Find(`[data-testid=key-class-count]`).Each(func(_ int, s *goquery.Selection) { counts = append(counts, s.Text()) })
	if strings.Join(counts, "|") != "（首次选择：1 人）|（首次选择：1 人）|（首次选择：1 人）" {
		t.Errorf("first choices %q", counts)
	}
	doc = e.page(e.do(ada, "GET", "/instructor/answers?lang=en", nil), http.StatusOK)
	if got := strings.Join(strings.Fields(doc.Find(`[data-testid=key-question][data-id="alpha/single"] [data-testid=key-option]`).Last().Text()), " "); got != "c Option C" {
		t.Errorf("option id and text read %q", got)
	}
	if doc.Find(`[data-testid=key-class-stats]`).Length() != 0 {
		t.Error("class results without a class")
	}
	e.page(e.do(ada, "GET", "/instructor/answers?lesson=99-nope", nil), http.StatusNotFound)
	e.page(e.do(ada, "GET", "/instructor/answers?class=9", nil), http.StatusNotFound)

	// The question sheet: no answer, feedback, hint or explanation anywhere.
	toggle, _ := doc.Find(`[data-testid=key-toggle]`).Attr("href")
	doc = e.page(e.do(ada, "GET", toggle+"&lang=en", nil), http.StatusOK)
	text := doc.Find(`[data-testid=answer-key]`).Text()
	for _, leak := range []string{"Because A.", "12.5", "✓", "One then two.", "Pick the"} {
		if strings.Contains(text, leak) {
			t.Errorf("the question sheet shows %q", leak)
		}
	}
	if doc.Find(`[data-correct]`).Length() != 0 || doc.Find(`[data-testid=key-option]`).Length() != 8 {
		t.Errorf("question sheet: %d marked correct, %d options", doc.Find(`[data-correct]`).Length(), doc.Find(`[data-testid=key-option]`).Length())
	}
	if !strings.Contains(doc.Find(`h1`).Text(), "Question sheet") {
		t.Errorf("sheet heading %q", doc.Find(`h1`).Text())
	}
}
