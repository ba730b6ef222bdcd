package web

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/web/page"
)

// quizCourse is one lesson whose quiz.yaml is quiz/testdata/valid.yaml (one
// question of each type). demo/pick-many is placed in the text with ::quiz
// and appears again in the checkpoint.
func quizCourse(t *testing.T) *lessons.Course {
	t.Helper()
	data, err := os.ReadFile("../quiz/testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set, err := quiz.Parse("01-quiz/quiz.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	lessons.RenderQuiz(set) // as lessons.Load does
	page := func(lang string) *lessons.Page {
		// `checkpoint: all`: pick-many is placed in the text and asked
		// again in the checkpoint; the answer shows after 2 wrong attempts.
		return &lessons.Page{Lang: lang, Title: "Quiz " + lang, Order: 1, CheckpointAll: true, RevealAfter: 2,
			QuestionIDs: []string{"demo/pick-many", "demo/pick-one", "demo/number", "demo/steps"},
			Body: []lessons.Segment{
				{Kind: lessons.SegHTML, HTML: "<p>Some prose.</p>"},
				{Kind: lessons.SegQuiz, ID: "demo/pick-many"},
				{Kind: lessons.SegCheckpoint, Questions: []string{"demo/pick-many", "demo/pick-one", "demo/number", "demo/steps"}},
			}}
	}
	l := &lessons.Lesson{Slug: "01-quiz", Order: 1, Quiz: set,
		Pages: map[string]*lessons.Page{"zh": page("zh"), "en": page("en")}}
	c := &lessons.Course{Lessons: []*lessons.Lesson{l}, Questions: map[string]*quiz.Question{}}
	for _, q := range set.Questions {
		c.Questions[q.ID] = q
	}
	return c
}

// postJSON posts body to the attempts endpoint of question id.
func postJSON(t *testing.T, env *testEnv, c *http.Client, id, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", env.HTTP.URL+attemptsPath(id), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

func countAttempts(t *testing.T, env *testEnv) int {
	t.Helper()
	all, err := env.DB.AllAttempts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(all)
}

// secrets are every text a learner must not see before submitting: feedback
// and explanations in both languages, as the page would render them. Texts
// under four characters (the fixture's "对") would match unrelated words.
func secrets(c *lessons.Course) []string {
	var out []string
	add := func(src, html quiz.Text, render func(string) template.HTML) {
		for lang, s := range src {
			if len([]rune(s)) >= 4 {
				out = append(out, string(render(html[lang])))
			}
		}
	}
	block := func(h string) template.HTML { return template.HTML(h) }
	for _, q := range c.Questions {
		add(q.Explanation, q.HTML.Explanation, block)
		for _, o := range q.Options {
			add(o.Feedback, o.HTML.Feedback, page.InlineHTML)
		}
	}
	return out
}

// TestQuizPageHoldsNoAnswers fetches served lesson pages (the fixture and
// the real built-in lesson) and checks that nothing in them gives an answer
// away before a submission.
func TestQuizPageHoldsNoAnswers(t *testing.T) {
	builtin, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatalf("built-in course: %v", err)
	}
	for _, tc := range []struct {
		name   string
		course *lessons.Course
		slug   string
	}{{"fixture", quizCourse(t), "01-quiz"}, {"builtin", builtin, "01-why-rdma"}} {
		for _, lang := range []string{"zh", "en"} {
			t.Run(tc.name+"/"+lang, func(t *testing.T) {
				env := newEnv(t, tc.course)
				res := env.get(env.client(), page.LessonHref(tc.slug)+"?lang="+lang)
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					t.Fatalf("status %d", res.StatusCode)
				}
				html := string(body)
				d, err := goquery.NewDocumentFromReader(strings.NewReader(html))
				if err != nil {
					t.Fatal(err)
				}
				n := d.Find("section.quiz").Length()
				if n < len(tc.course.Lesson(tc.slug).Quiz.Questions) {
					t.Fatalf("%d question sections on the page", n)
				}
				secret := secrets(tc.course)
				if len(secret) < 10 {
					t.Fatalf("only %d texts to look for", len(secret))
				}
				for _, s := range secret {
					if strings.Contains(html, s) {
						t.Errorf("page contains an answer text before any submission: %q", s)
					}
				}
				for _, sel := range []string{"[data-testid=result]", "[data-testid=feedback]", "[data-testid=explanation]", "[data-testid=mark]", "[data-correct]", "[data-mark=right]", "[data-mark=wrong]", "[data-mark=missed]"} {
					if d.Find(sel).Length() > 0 {
						t.Errorf("page has %s before any submission", sel)
					}
				}
				for _, word := range []string{"correct:", `"correct"`, "data-correct", "tolerance"} {
					if strings.Contains(html, word) {
						t.Errorf("page contains %q", word)
					}
				}
				// Order steps are not offered in the answer order.
				for _, q := range tc.course.Lesson(tc.slug).Quiz.Questions {
					if q.Type != quiz.Order {
						continue
					}
					var shown []string
					d.Find(`section.quiz[data-question="` + q.ID + `"] select`).First().Find("option[value!='']").Each(func(_ int, s *goquery.Selection) {
						v, _ := s.Attr("value")
						shown = append(shown, v)
					})
					var answer []string
					for _, o := range q.Options {
						answer = append(answer, o.ID)
					}
					if len(shown) != len(answer) || strings.Join(shown, ",") == strings.Join(answer, ",") {
						t.Errorf("%s: steps offered as %v (answer %v)", q.ID, shown, answer)
					}
				}
			})
		}
	}
}

// Every element id on the page is unique, although demo/pick-many is both
// placed in the text and part of the checkpoint.
func TestQuizDOMIDsUnique(t *testing.T) {
	env := newEnv(t, quizCourse(t))
	d := env.doc(env.client(), "/lessons/01-quiz", 200)
	seen := map[string]bool{}
	d.Find("[id]").Each(func(_ int, s *goquery.Selection) {
		id, _ := s.Attr("id")
		if seen[id] {
			t.Errorf("duplicate id %q", id)
		}
		seen[id] = true
	})
	for _, id := range []string{"q-demo/pick-many", "cp-demo/pick-many", "cp-demo/steps", "q-demo/pick-many:a", "cp-demo/pick-many:a"} {
		if !seen[id] {
			t.Errorf("missing id %q", id)
		}
	}
	if n := d.Find("section.quiz").Length(); n != 5 {
		t.Errorf("%d question sections, want 5 (one placed + four in the checkpoint)", n)
	}
	if got := d.Find(`label[for="q-demo/pick-many:c"]`).Text(); strings.TrimSpace(got) != "丙" {
		t.Errorf("label = %q", got)
	}
}

func TestQuizAttemptJSON(t *testing.T) {
	env := newEnv(t, quizCourse(t))
	c := env.client()
	res, body := postJSON(t, env, c, "demo/pick-many", `{"answer":["a","d"],"anchor":"q-demo/pick-many","lesson":"01-quiz"}`, "Accept-Language", "en")
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	var got struct {
		quiz.Result
		AttemptID int64  `json:"attempt_id"`
		Attempts  int    `json:"attempts"`
		Best      bool   `json:"ever_correct"`
		HTML      string `json:"html"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	// A first wrong answer to a multi question tells how many picks are
	// right, not which (issue 30 item 9): no marks, no missed option, no
	// explanation (it states the answer).
	want := quiz.Result{Correct: false, Options: []quiz.OptionResult{}, Tally: &quiz.Tally{Right: 1, Of: 2}}
	if fmt.Sprint(got.Options, got.Explanation, got.Correct) != fmt.Sprint(want.Options, want.Explanation, want.Correct) ||
		got.Tally == nil || *got.Tally != *want.Tally {
		t.Errorf("result = %+v\nwant     %+v", got.Result, want)
	}
	if got.AttemptID == 0 || got.Attempts != 1 || got.Best {
		t.Errorf("attempt %d, attempts %d, best %v", got.AttemptID, got.Attempts, got.Best)
	}
	// The HTML the script swaps in is the same question with the verdicts.
	d, err := goquery.NewDocumentFromReader(strings.NewReader(got.HTML))
	if err != nil {
		t.Fatal(err)
	}
	sec := d.Find(byID("q-demo/pick-many"))
	if sec.Length() != 1 || sec.Find("[data-testid=result]").AttrOr("data-correct", "") != "false" {
		t.Fatalf("html fragment: %s", got.HTML)
	}
	marks := map[string]string{}
	sec.Find("li.quiz-option").Each(func(_ int, s *goquery.Selection) {
		marks[s.AttrOr("data-option", "")] = s.AttrOr("data-mark", "")
	})
	if fmt.Sprint(marks) != "map[a: b: c: d:]" {
		t.Errorf("marks = %v", marks)
	}
	if tally := sec.Find("[data-testid=tally]").Text(); !strings.Contains(tally, "1 of the 2 options you chose") {
		t.Errorf("tally = %q", tally)
	}
	if sec.Find("input[value=d]").AttrOr("checked", "no") == "no" || sec.Find("input[value=b]").Is("[checked]") {
		t.Error("the form is not refilled with the answer")
	}
	if sec.Find("[data-testid=explanation]").Length() != 0 || strings.Contains(got.HTML, "A and B.") {
		t.Error("a first wrong answer shows the explanation")
	}
	if sec.Find("[data-testid=reveal]").Length() != 1 || !strings.Contains(sec.Find("[data-testid=reveal-note]").Text(), "1 more") {
		t.Errorf("no show-answer button or note: %q", sec.Find("[data-testid=reveal-note]").Text())
	}

	// The second wrong answer reaches the lesson's reveal_after (2): the
	// answer, the missed option and the explanation now show.
	_, body = postJSON(t, env, c, "demo/pick-many", `{"answer":["a","d"],"anchor":"q-demo/pick-many","lesson":"01-quiz"}`, "Accept-Language", "en")
	json.Unmarshal(body, &got)
	if got.Explanation != "A and B." || len(got.Options) != 4 {
		t.Errorf("after 2 wrong attempts: %+v", got.Result)
	}
	d, _ = goquery.NewDocumentFromReader(strings.NewReader(got.HTML))
	if m := d.Find(`li.quiz-option[data-option=b]`).AttrOr("data-mark", ""); m != "missed" {
		t.Errorf("after 2 wrong attempts b is marked %q", m)
	}
	if st := sec.Find("[data-testid=quiz-status]").AttrOr("data-attempts", ""); st != "1" {
		t.Errorf("status attempts = %q", st)
	}

	// A right answer after the answer showed by itself; the language
	// follows the learner (zh by default here). It is right, and it earns
	// nothing (issue 29 item 5): the answer was on the screen.
	res, body = postJSON(t, env, c, "demo/pick-many", `{"answer":["b","a"]}`)
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	json.Unmarshal(body, &got)
	if !got.Correct || got.Explanation != "甲和乙。" || got.Attempts != 3 || got.Best {
		t.Errorf("third attempt = %+v", got)
	}
	d, _ = goquery.NewDocumentFromReader(strings.NewReader(got.HTML))
	if d.Find("[data-testid=seen]").Length() != 1 || d.Find("[data-testid=quiz-status]").AttrOr("data-seen", "") != "true" {
		t.Errorf("a right answer after the answer showed is not flagged: %s", got.HTML)
	}
	// Numeric and order answers.
	for _, tc := range []struct {
		id, answer string
		correct    bool
	}{
		{"demo/number", `12.6`, true},
		{"demo/number", `100`, false},
		{"demo/steps", `["first","second","third"]`, true},
		{"demo/steps", `["third","second","first"]`, false},
		{"demo/pick-one", `"a"`, true},
	} {
		res, body := postJSON(t, env, c, tc.id, `{"answer":`+tc.answer+`}`)
		var r quiz.Result
		json.Unmarshal(body, &r)
		if res.StatusCode != 200 || r.Correct != tc.correct {
			t.Errorf("%s %s: status %d correct %v: %s", tc.id, tc.answer, res.StatusCode, r.Correct, body)
		}
	}
	if n := countAttempts(t, env); n != 8 {
		t.Errorf("%d attempts stored, want 8", n)
	}
}

func TestQuizAttemptRejected(t *testing.T) {
	env := newEnv(t, quizCourse(t))
	c := env.client()
	for _, tc := range []struct {
		name, id, body string
		status         int
		code           string
		msg            string
		header         []string
	}{
		{"unknown question", "demo/nope", `{"answer":"a"}`, 404, "not_found", "demo/nope", nil},
		{"missing /attempts", "demo/pick-one/extra", `{"answer":"a"}`, 404, "not_found", "", nil},
		{"wrong type", "demo/pick-one", `{"answer":["a"]}`, 400, "bad_request", "单选题只能选一项", nil},
		{"unknown option", "demo/pick-one", `{"answer":"zzz"}`, 400, "bad_request", `这道题没有选项 "zzz"`, nil},
		{"unknown option en", "demo/pick-many", `{"answer":["a","zzz"]}`, 400, "bad_request", `This question has no option "zzz"`, []string{"Accept-Language", "en"}},
		{"duplicate", "demo/pick-many", `{"answer":["a","a"]}`, 400, "bad_request", `"a"`, nil},
		{"empty multi", "demo/pick-many", `{"answer":[]}`, 400, "bad_request", "请先作答", nil},
		{"order incomplete", "demo/steps", `{"answer":["first"]}`, 400, "bad_request", "每个位置", nil},
		{"number as text", "demo/number", `{"answer":"twelve"}`, 400, "bad_request", "数字", nil},
		{"no answer", "demo/number", `{}`, 400, "bad_request", "请先作答", nil},
		{"empty body", "demo/pick-one", ``, 400, "bad_request", "请求是空的", nil},
		{"not json", "demo/pick-one", `answer=a`, 400, "bad_request", "JSON", nil},
		{"trailing data", "demo/pick-one", `{"answer":"a"} {"answer":"b"}`, 400, "bad_request", "JSON", nil},
		{"unknown field", "demo/pick-one", `{"answer":"a","correct":true}`, 400, "bad_request", "JSON", nil},
		// The one body limit (body_limit.go) answers before the handler runs.
		{"oversized", "demo/pick-many", `{"answer":["` + strings.Repeat("a", 65<<10) + `"]}`, 413, "too_large", "64 KiB", nil},
		{"content type", "demo/pick-one", `{"answer":"a"}`, 400, "bad_request", "JSON", []string{"Content-Type", "text/plain"}},
		{"cross site", "demo/pick-one", `{"answer":"a"}`, 403, "forbidden", "", []string{"Origin", "https://evil.example"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := postJSON(t, env, c, tc.id, tc.body, tc.header...)
			var e page.ErrorBody
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			if res.StatusCode != tc.status || string(e.Error.Code) != tc.code || !strings.Contains(e.Error.Message, tc.msg) {
				t.Errorf("status %d, error %+v; want %d %s containing %q", res.StatusCode, e.Error, tc.status, tc.code, tc.msg)
			}
		})
	}
	if n := countAttempts(t, env); n != 0 {
		t.Errorf("%d attempts stored from rejected submissions", n)
	}
}

// The no-JavaScript path: a form post redirects to the lesson page, which
// shows the stored attempt at the placement it came from.
func TestQuizAttemptForm(t *testing.T) {
	env := newEnv(t, quizCourse(t))
	c := env.client()
	env.get(c, "/?lang=en").Body.Close() // the learner reads in English
	form := url.Values{"answer": {"b", "c"}, "lesson": {"01-quiz"}, "anchor": {"cp-demo/pick-many"}}
	res := postForm(t, c, env.HTTP.URL+attemptsPath("demo/pick-many"), form)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("status %d", res.StatusCode)
	}
	loc := res.Header.Get("Location")
	all, _ := env.DB.AllAttempts(context.Background())
	if len(all) != 1 || all[0].Correct || string(all[0].Answer) != `["b","c"]` {
		t.Fatalf("stored %+v", all)
	}
	want := fmt.Sprintf("/lessons/01-quiz?at=cp-demo%%2Fpick-many&attempt=%d#cp-demo/pick-many", all[0].ID)
	if loc != want {
		t.Fatalf("Location = %q, want %q", loc, want)
	}
	d := env.doc(c, loc, 200)
	cp := d.Find(byID("cp-demo/pick-many"))
	if cp.Find("[data-testid=result]").AttrOr("data-correct", "") != "false" {
		t.Fatal("no result at the checkpoint placement")
	}
	var fb []string
	cp.Find("[data-testid=feedback]").Each(func(_ int, s *goquery.Selection) { fb = append(fb, s.Text()) })
	sort.Strings(fb)
	if len(fb) != 0 || !strings.Contains(cp.Find("[data-testid=tally]").Text(), "1 of the 2 options you chose") {
		t.Errorf("feedback = %q, tally %q (a wrong multi answer says how many picks are right, not which)", fb, cp.Find("[data-testid=tally]").Text())
	}
	if cp.Find("[data-testid=explanation]").Length() != 0 {
		t.Error("a first wrong answer shows the explanation")
	}
	if got := strings.TrimSpace(cp.Find("button.primary[type=submit]").Text()); got != "Try again" {
		t.Errorf("button = %q", got)
	}
	// The same question placed in the text stays a plain form.
	inline := d.Find(byID("q-demo/pick-many"))
	if inline.Length() != 1 || inline.Find("[data-testid=result]").Length() != 0 {
		t.Error("the result leaked into the other placement")
	}
	if got := inline.Find("[data-testid=quiz-status]").AttrOr("data-attempts", ""); got != "1" {
		t.Errorf("status of the other placement: attempts %q", got)
	}

	// Another learner following the same link sees no result.
	other := env.client()
	d = env.doc(other, loc, 200)
	if d.Find("[data-testid=result]").Length() != 0 {
		t.Error("another learner sees the attempt")
	}

	// A right order answer through selects, then the page and home score.
	form = url.Values{"answer": {"first", "second", "third"}, "lesson": {"01-quiz"}, "anchor": {"cp-demo/steps"}}
	res = postForm(t, c, env.HTTP.URL+attemptsPath("demo/steps"), form)
	res.Body.Close()
	d = env.doc(c, res.Header.Get("Location"), 200)
	steps := d.Find(byID("cp-demo/steps"))
	if steps.Find("[data-testid=result]").AttrOr("data-correct", "") != "true" {
		t.Error("order answer not shown as correct")
	}
	if got := steps.Find("select").Eq(1).Find("option[selected]").AttrOr("value", ""); got != "second" {
		t.Errorf("position 2 refilled with %q", got)
	}
	if got := d.Find("[data-testid=checkpoint-score]").Text(); !strings.HasSuffix(strings.TrimSpace(got), "1/4") {
		t.Errorf("checkpoint score %q", got)
	}
	home := env.doc(c, "/", 200)
	if got := home.Find(`[data-slug="01-quiz"] [data-testid=score]`).Text(); got != "Checkpoint 1/4" {
		t.Errorf("home score = %q", got)
	}
	if got := env.doc(other, "/", 200).Find(`[data-slug="01-quiz"] [data-testid=score]`).Text(); got != "检查点 0/4" {
		t.Errorf("new learner's home score = %q", got)
	}
}

func TestQuizAttemptFormRejected(t *testing.T) {
	env := newEnv(t, quizCourse(t))
	c := env.client()
	for _, tc := range []struct {
		name string
		id   string
		form url.Values
		msg  string
	}{
		{"no choice", "demo/pick-one", url.Values{"lesson": {"01-quiz"}, "anchor": {"cp-demo/pick-one"}}, "请先作答"},
		{"empty body", "demo/pick-one", url.Values{}, "请先作答"},
		{"not a number", "demo/number", url.Values{"answer": {"twelve"}, "anchor": {"cp-demo/number"}}, "请输入一个数字"},
		{"step twice", "demo/steps", url.Values{"answer": {"first", "first", "third"}, "anchor": {"cp-demo/steps"}}, `"first"`},
		{"unknown option", "demo/pick-many", url.Values{"answer": {"a", "zzz"}, "anchor": {"q-demo/pick-many"}}, `"zzz"`},
		// An oversized form is the one body limit's 413 (TestOversizedBodies in http_hostile_test.go).
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := postForm(t, c, env.HTTP.URL+attemptsPath(tc.id), tc.form)
			defer res.Body.Close()
			if res.StatusCode != 400 {
				t.Fatalf("status %d", res.StatusCode)
			}
			d, err := goquery.NewDocumentFromReader(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			var msgs []string
			d.Find("[data-testid=quiz-error]:not([hidden])").Each(func(_ int, s *goquery.Selection) { msgs = append(msgs, s.Text()) })
			if len(msgs) == 0 || !strings.Contains(msgs[0], tc.msg) {
				t.Errorf("messages %q, want one containing %q", msgs, tc.msg)
			}
			if d.Find("[data-testid=result]").Length() != 0 {
				t.Error("a rejected answer shows a result")
			}
		})
	}
	// The learner's input survives the round trip.
	res := postForm(t, c, env.HTTP.URL+attemptsPath("demo/number"), url.Values{"answer": {"twelve"}, "anchor": {"cp-demo/number"}})
	d, _ := goquery.NewDocumentFromReader(res.Body)
	res.Body.Close()
	if v := d.Find(byID("cp-demo/number")+" input[name=answer]").AttrOr("value", ""); v != "twelve" {
		t.Errorf("number input refilled with %q", v)
	}
	// A cross-site form post is refused with the 403 page.
	res = postForm(t, c, env.HTTP.URL+attemptsPath("demo/pick-one"), url.Values{"answer": {"a"}}, "Origin", "https://evil.example")
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Errorf("cross-site form: status %d", res.StatusCode)
	}
	if n := countAttempts(t, env); n != 0 {
		t.Errorf("%d attempts stored from rejected submissions", n)
	}
}

// Two submissions at once (two tabs, a double click) are both stored.
func TestQuizAttemptConcurrent(t *testing.T) {
	env := newEnv(t, quizCourse(t))
	c := env.client()
	env.get(c, "/").Body.Close() // one learner cookie for both
	var wg sync.WaitGroup
	status := make([]int, 2)
	for i := range status {
		wg.Go(func() {
			res, _ := postJSON(t, env, c, "demo/pick-one", fmt.Sprintf(`{"answer":%q}`, []string{"a", "b"}[i]))
			status[i] = res.StatusCode
		})
	}
	wg.Wait()
	all, err := env.DB.AllAttempts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if status[0] != 200 || status[1] != 200 || len(all) != 2 || all[0].Learner != all[1].Learner {
		t.Errorf("statuses %v, stored %+v", status, all)
	}
}

func TestValidAnchor(t *testing.T) {
	for _, tc := range []struct {
		anchor string
		ok     bool
	}{
		{"q-a/b", true}, {"cp-a/b", true}, {"q-a/b~2", true}, {"q-a/b~10", true},
		{"q-a/b~1", false}, {"q-a/b~02", false}, {"q-a/b~x", false}, {"cp-a/b~2", false},
		{"q-a/bc", false}, {"x-a/b", false}, {"", false}, {`q-a/b"><script>`, false},
	} {
		if got := validAnchor("a/b", tc.anchor); got != tc.ok {
			t.Errorf("validAnchor(%q) = %v", tc.anchor, got)
		}
	}
}

// byID is a selector for the element with id, which may hold '/' and ':'.
func byID(id string) string { return `[id="` + id + `"]` }

// quiz.css and quiz.js are loaded exactly once on a page with questions.
func TestQuizAssetsOnce(t *testing.T) {
	env := newEnv(t, quizCourse(t))
	d := env.doc(env.client(), "/lessons/01-quiz", 200)
	if n := d.Find(`script[src*="js/quiz.js"]`).Length(); n != 1 {
		t.Errorf("%d quiz.js scripts", n)
	}
	if n := d.Find(`link[href*="css/quiz.css"]`).Length(); n != 1 {
		t.Errorf("%d quiz.css links", n)
	}
	for _, asset := range []string{"js/quiz.js", "css/quiz.css"} {
		res := env.get(env.client(), "/static/"+asset)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("%s: status %d", asset, res.StatusCode)
		}
	}
}
