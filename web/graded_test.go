package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
	"github.com/rdmalab/rdmalab/web/instructor"
	"github.com/rdmalab/rdmalab/web/page"
)

// gradedClass is a class of the instructor test course (lesson 01-alpha)
// whose lesson is graded by its instructor through the settings page.
type gradedClass struct {
	e     *instrEnv
	ada   *http.Client
	id    string
	code  string
	loc   *time.Location
	path  string
	opens time.Time
}

func newGradedClass(t *testing.T, e *instrEnv) *gradedClass {
	t.Helper()
	ada := e.instructor("ada", "correct horse battery")
	cl, err := e.DB.CreateCohort(context.Background(), "group A", 0)
	if err != nil {
		t.Fatal(err)
	}
	g := &gradedClass{e: e, ada: ada, id: strconv.FormatInt(cl.ID, 10), code: cl.Code, path: "/instructor/classes/" + strconv.FormatInt(cl.ID, 10) + "/graded"}
	res := e.do(ada, "POST", g.path+"/zone", url.Values{"zone": {"Asia/Shanghai"}})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("set zone: %d", res.StatusCode)
	}
	g.loc, _ = time.LoadLocation("Asia/Shanghai")
	return g
}

// set makes 01-alpha graded from opens to closes (entered as the form
// does: minutes, in the class's zone).
func (g *gradedClass) set(t *testing.T, opens, closes time.Time, limit int, counts string) {
	t.Helper()
	g.opens = opens
	res := g.e.do(g.ada, "POST", g.path, url.Values{"lesson": {"01-alpha"}, "mode": {"graded"},
		"opens": {opens.In(g.loc).Format(instructor.LocalInput)}, "closes": {closes.In(g.loc).Format(instructor.LocalInput)},
		"limit": {strconv.Itoa(limit)}, "counts": {counts}})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("set graded: %d", res.StatusCode)
	}
}

func (g *gradedClass) join(t *testing.T) (*http.Client, string) {
	t.Helper()
	c := g.e.browser()
	res := g.e.do(c, "POST", "/join", url.Values{"code": {g.code}})
	res.Body.Close()
	return c, learnerOf(t, c, g.e.HTTP.URL)
}

// post sends a JSON body to a question's attempts endpoint in lang and
// returns the status and the raw body.
func (e *instrEnv) post(c *http.Client, id, lang, body string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.HTTP.URL+attemptsPath(id)+"?lang="+lang, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// answers is what a graded JSON answer holds.
type gradedAnswer struct {
	Correct     bool   `json:"correct"`
	Explanation string `json:"explanation"`
	Options     []struct {
		ID       string `json:"id"`
		Chosen   bool   `json:"chosen"`
		Correct  bool   `json:"correct"`
		Feedback string `json:"feedback"`
	} `json:"options"`
	Tally  *struct{} `json:"tally"`
	HTML   string    `json:"html"`
	Graded *struct {
		Used     int    `json:"attempts_used"`
		Limit    int    `json:"attempt_limit"`
		TimeZone string `json:"time_zone"`
		Shown    string `json:"closes_shown"`
		Revealed bool   `json:"revealed"`
	} `json:"graded"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decodeGraded(t *testing.T, body string) gradedAnswer {
	t.Helper()
	var a gradedAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return a
}

// explanations and answer texts of the course that must not reach a
// learner before the close.
var alphaSecrets = []string{"Because A.", "因为甲", "X and Y.", "叉和歪", "Divide by 8", "除以 8", "One then two", "先一后二", `"correct":true`}

func noSecrets(t *testing.T, what, s string) {
	t.Helper()
	for _, secret := range alphaSecrets {
		if strings.Contains(s, secret) {
			t.Errorf("%s leaks %q before the close:\n%s", what, secret, s)
		}
	}
}

// TestGradedWithheldAndLimits (issue 29, graded mode): while a graded
// lesson is open the JSON answer and its HTML say right or wrong and
// nothing more (no explanation, option marks, feedback or tally), even for
// a right answer; the lesson page neither; each question takes the attempt
// limit and refuses the next answer with a message in zh and en, storing
// nothing; the status line and the JSON show the count and the close date
// with the class's zone; "show answer" shows it and scores the question 0.
func TestGradedWithheldAndLimits(t *testing.T) {
	e := newInstrEnv(t)
	g := newGradedClass(t, e)
	now := time.Now()
	g.set(t, now.Add(-time.Hour), now.Add(time.Hour), 2, "best")
	ann, annID := g.join(t)
	practice := e.browser() // in no class: practice as before

	code, body := e.post(ann, "alpha/single", "en", `{"answer":"b"}`)
	a := decodeGraded(t, body)
	if code != http.StatusOK || a.Correct || a.Explanation != "" || a.Tally != nil || a.Graded == nil {
		t.Fatalf("wrong answer: %d %s", code, body)
	}
	for _, o := range a.Options {
		if o.Correct || o.Feedback != "" || !o.Chosen {
			t.Errorf("option %+v tells more than the choice", o)
		}
	}
	if a.Graded.Used != 1 || a.Graded.Limit != 2 || a.Graded.TimeZone != "Asia/Shanghai" || !strings.Contains(a.Graded.Shown, "(Asia/Shanghai, UTC+08:00)") {
		t.Errorf("graded info %+v", a.Graded)
	}
	noSecrets(t, "the JSON of a wrong answer", body)
	code, body = e.post(ann, "alpha/single", "en", `{"answer":"a"}`)
	if a = decodeGraded(t, body); code != http.StatusOK || !a.Correct || a.Explanation != "" {
		t.Fatalf("right answer: %d %s", code, body)
	}
	noSecrets(t, "the JSON of a right answer", strings.ReplaceAll(body, `"correct":true,"options"`, ""))
	if !strings.Contains(a.HTML, "Attempts: 2 of 2") || !strings.Contains(a.HTML, "Submitted: correct.") {
		t.Errorf("the re-rendered question lacks the count or verdict:\n%s", a.HTML)
	}
	// The limit: a third answer is refused, in either language, and not stored.
	for _, lang := range []string{"en", "zh"} {
		code, body = e.post(ann, "alpha/single", lang, `{"answer":"a"}`)
		a = decodeGraded(t, body)
		if code != http.StatusConflict || a.Error == nil || !strings.Contains(a.Error.Message, "2") {
			t.Errorf("%s: third answer: %d %s", lang, code, body)
			continue
		}
		if lang == "zh" {
			if leaks := append(zhcheck.Prose(a.Error.Message), zhcheck.Leaks(a.Error.Message)...); len(leaks) > 0 {
				t.Errorf("zh refusal %q: %v", a.Error.Message, leaks)
			}
		}
	}
	st, _ := e.DB.LearnerQuestionStatus(context.Background(), annID, []string{"alpha/single"})
	if st["alpha/single"].Attempts != 2 {
		t.Errorf("stored %d attempts, want 2 (refused ones are not stored)", st["alpha/single"].Attempts)
	}
	// The page: count, close date with zone, the form locked, no answer.
	res := e.do(ann, "GET", "/lessons/01-alpha?lang=en", nil)
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	html := string(page)
	noSecrets(t, "the lesson page", html)
	for _, want := range []string{"Attempts: 2 of 2", "closes " + g.opens.Add(2*time.Hour).In(g.loc).Format("2006-01-02 15:04") + " (Asia/Shanghai, UTC+08:00)",
		`data-testid="quiz-locked"`, "You have used all attempts", `data-testid="graded-box"`, "Attempts: 0 of 2"} {
		if !strings.Contains(html, want) {
			t.Errorf("the lesson page lacks %q", want)
		}
	}
	if strings.Contains(html, `data-mark="right"`) || strings.Contains(html, `data-mark="missed"`) || strings.Contains(html, "lesson.complete") {
		t.Error("the lesson page marks options or offers the complete button")
	}
	// "Show answer" in graded mode shows it (the learner chose) and costs the question.
	code, body = e.post(ann, "alpha/multi", "en", `{"reveal":true}`)
	if a = decodeGraded(t, body); code != http.StatusOK || a.Explanation != "X and Y." || a.Graded == nil || !a.Graded.Revealed {
		t.Errorf("reveal: %d %s", code, body)
	}
	if !strings.Contains(a.HTML, "answer shown: this question scores 0") {
		t.Errorf("the revealed question does not say it scores 0:\n%s", a.HTML)
	}
	// Practice stays as it was for a learner of no class.
	code, body = e.post(practice, "alpha/single", "en", `{"answer":"a"}`)
	if a = decodeGraded(t, body); code != http.StatusOK || a.Explanation != "Because A." || a.Graded != nil {
		t.Errorf("practice: %d %s", code, body)
	}
}

// TestGradedCountsAndExports: first, last and best count different
// answers of the same two learners; a reveal scores 0 and is flagged in
// gradebook.csv and attempts.csv; "complete" comes from the work (the
// button is refused); answers before the open or after the close are
// refused, stored nowhere and counted nowhere; after the close the page
// shows the answer.
func TestGradedCountsAndExports(t *testing.T) {
	e := newInstrEnv(t)
	g := newGradedClass(t, e)
	ctx := context.Background()
	now := time.Now()
	// Not open yet: answers and reveals refused.
	g.set(t, now.Add(time.Hour), now.Add(2*time.Hour), 3, "best")
	ann, annID := g.join(t)
	bob, bobID := g.join(t)
	for _, lang := range []string{"en", "zh"} {
		code, body := e.post(ann, "alpha/single", lang, `{"answer":"a"}`)
		if a := decodeGraded(t, body); code != http.StatusConflict || a.Error == nil || !strings.Contains(a.Error.Message, "Asia/Shanghai") {
			t.Errorf("%s: before the open: %d %s", lang, code, body)
		}
	}
	if code, _ := e.post(ann, "alpha/single", "en", `{"reveal":true}`); code != http.StatusConflict {
		t.Errorf("reveal before the open: %d", code)
	}

	g.set(t, now.Add(-time.Hour), now.Add(time.Hour), 3, "best")
	post := func(c *http.Client, id, answer string) {
		t.Helper()
		if code, body := e.post(c, id, "en", answer); code != http.StatusOK {
			t.Fatalf("%s %s: %d %s", id, answer, code, body)
		}
	}
	// ann: single wrong then right; bob: single right then wrong.
	post(ann, "alpha/single", `{"answer":"b"}`)
	post(ann, "alpha/single", `{"answer":"a"}`)
	post(bob, "alpha/single", `{"answer":"a"}`)
	post(bob, "alpha/single", `{"answer":"c"}`)
	// ann: multi revealed, then answered right: 0, flagged.
	post(ann, "alpha/multi", `{"reveal":true}`)
	post(ann, "alpha/multi", `{"answer":["x","y"]}`)
	// bob: reveals num and never answers it.
	post(bob, "alpha/num", `{"reveal":true}`)

	cl, _ := strconv.ParseInt(g.id, 10, 64)
	for _, c := range []struct {
		counts   string
		ann, bob int
	}{{"best", 1, 1}, {"first", 0, 1}, {"last", 1, 0}} {
		g.set(t, now.Add(-time.Hour), now.Add(time.Hour), 3, c.counts)
		srv := e.Srv
		as, err := srv.instructors.LessonScore(ctx, cl, annID, "01-alpha")
		if err != nil {
			t.Fatal(err)
		}
		bs, _ := srv.instructors.LessonScore(ctx, cl, bobID, "01-alpha")
		if as.Score != c.ann || bs.Score != c.bob || !as.Graded || as.Questions != 4 {
			t.Errorf("%s: ann %+v, bob %+v; want %d and %d", c.counts, as, bs, c.ann, c.bob)
		}
		if !slices.Equal(as.Revealed, []string{"alpha/multi"}) || !slices.Equal(bs.Revealed, []string{"alpha/num"}) {
			t.Errorf("revealed: ann %v, bob %v", as.Revealed, bs.Revealed)
		}
		// The gradebook CSV says the same.
		rows := e.fetchCSV(g.ada, "/instructor/export/gradebook.csv?class="+g.id)
		col := func(name string) int { return slices.Index(rows[0], name) }
		for _, r := range rows[1:] {
			want, rev := c.ann, "alpha/multi"
			if r[0] == bobID {
				want, rev = c.bob, "alpha/num"
			}
			if r[col("score")] != strconv.Itoa(want) || r[col("mode")] != "graded" || r[col("counts")] != c.counts ||
				r[col("revealed")] != rev || r[col("answer_seen")] != "1" || r[col("attempt_limit")] != "3" || r[col("closes_at")] == "" {
				t.Errorf("%s: gradebook row %q", c.counts, r)
			}
		}
	}
	// attempts.csv: the answer after the reveal flagged, the reveal itself listed.
	rows := e.fetchCSV(g.ada, "/instructor/export/attempts.csv?class="+g.id)
	col := func(name string) int { return slices.Index(rows[0], name) }
	var multi, bobReveal []string
	for _, r := range rows[1:] {
		if r[col("question")] == "alpha/multi" && r[col("event")] == "answer" {
			multi = r
		}
		if r[col("question")] == "alpha/num" && r[col("event")] == "reveal" {
			bobReveal = r
		}
		if r[col("mode")] != "graded" || r[col("counted")] == "" && r[col("event")] == "answer" {
			t.Errorf("attempt row without mode or counted: %q", r)
		}
	}
	if multi == nil || multi[col("revealed")] != "true" || multi[col("answer_seen")] != "true" || multi[col("counted")] != "true" {
		t.Errorf("the answer after the reveal: %q", multi)
	}
	if bobReveal == nil || bobReveal[col("learner")] != bobID || bobReveal[col("revealed")] != "true" {
		t.Errorf("bob's reveal without an answer is not in attempts.csv: %q", bobReveal)
	}

	// Complete from the work: the button is refused; ann completes by
	// answering every question.
	res := e.do(ann, "POST", "/lessons/01-alpha/complete", url.Values{})
	res.Body.Close()
	if res.StatusCode != http.StatusConflict {
		t.Errorf("mark complete on a graded lesson: %d", res.StatusCode)
	}
	completed := func(learner string) string {
		rows := e.fetchCSV(g.ada, "/instructor/export/gradebook.csv?class="+g.id)
		for _, r := range rows[1:] {
			if r[0] == learner {
				return r[slices.Index(rows[0], "completed")]
			}
		}
		return "?"
	}
	if got := completed(annID); got != "false" {
		t.Errorf("ann completed %s before answering everything", got)
	}
	homeDone := func() bool {
		res := e.do(ann, "GET", "/?lang=en", nil)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		i := strings.Index(string(b), `data-slug="01-alpha"`)
		j := strings.LastIndex(string(b[:max(i, 0)]), `<li class="`)
		return i > 0 && j >= 0 && strings.Contains(string(b[j:i]), "done")
	}
	if homeDone() {
		t.Error("the home page marks the graded lesson done before the work is")
	}
	post(ann, "alpha/num", `{"answer":12.5}`)
	post(ann, "alpha/order", `{"answer":["s1","s2"]}`)
	if got := completed(annID); got != "true" {
		t.Errorf("ann answered every question: completed %s", got)
	}
	if !homeDone() {
		t.Error("the home page does not mark the graded lesson done once the work is (complete from the work, as the gradebook says)")
	}
	res = e.do(ann, "GET", "/lessons/01-alpha?lang=en", nil)
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(page), "Lesson complete (computed from your work)") {
		t.Error("the lesson page does not say the lesson is complete from the work")
	}
	noSecrets(t, "ann's lesson page before the close", strings.ReplaceAll(string(page), "X and Y.", "")) // multi: she chose to see it

	// After the close: answers refused and not counted; the answers show.
	e.Shift.Store(int64(2 * time.Hour))
	for _, lang := range []string{"en", "zh"} {
		code, body := e.post(bob, "alpha/num", lang, `{"answer":12.5}`)
		a := decodeGraded(t, body)
		if code != http.StatusConflict || a.Error == nil || !strings.Contains(a.Error.Message, "UTC+08:00") {
			t.Errorf("%s: after the close: %d %s", lang, code, body)
		}
	}
	if code, _ := e.post(bob, "alpha/order", "en", `{"reveal":true}`); code != http.StatusConflict {
		t.Errorf("reveal after the close: %d", code)
	}
	bs, _ := e.Srv.instructors.LessonScore(ctx, cl, bobID, "01-alpha")
	if bs.Score != 0 { // last: bob's single ends wrong; nothing after the close counts
		t.Errorf("bob after the close: %+v", bs)
	}
	res = e.do(bob, "GET", "/lessons/01-alpha?lang=en", nil)
	page, _ = io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"Because A.", "X and Y.", "Divide by 8", "One then two", "The quiz closed", "The quiz has closed. Here is the answer."} {
		if !strings.Contains(string(page), want) {
			t.Errorf("after the close the page lacks %q", want)
		}
	}
}

// TestGradedDocExamples: the messages and status line docs/authoring.md
// quotes in "Graded mode" are the ones the server says, in both languages.
func TestGradedDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../docs/authoring.md")
	if err != nil {
		t.Fatal(err)
	}
	loc, _ := time.LoadLocation("Asia/Shanghai")
	closes := time.Date(2026, 12, 8, 18, 0, 0, 0, loc)
	text := strings.Join(strings.Fields(string(doc)), " ")
	for _, want := range []string{
		trf("en", "graded.err.closed", page.ZoneTime("en", closes, loc)),
		trf("zh", "graded.err.closed", page.ZoneTime("zh", closes, loc)),
		trf("en", "graded.status.attempts", 1, 3) + " · " + trf("en", "graded.status.counts", tr("en")("graded.counts.best")) +
			" · " + trf("en", "graded.status.closes", page.ZoneTime("en", closes, loc)),
		tr("en")("graded.reveal"),
	} {
		if !strings.Contains(text, strings.Join(strings.Fields(want), " ")) {
			t.Errorf("docs/authoring.md does not quote %q", want)
		}
	}
}
