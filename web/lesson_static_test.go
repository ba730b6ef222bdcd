package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
)

// pageCase is one lesson page request of a learner in some state.
type pageCase struct {
	name    string
	learner string
	method  string
	path    string
	form    url.Values // POST body (a quiz form submission)
}

// request builds the case's request with the learner's cookie.
func (pc pageCase) request() *http.Request {
	method := pc.method
	if method == "" {
		method = "GET"
	}
	var r *http.Request
	if pc.form != nil {
		r = httptest.NewRequest(method, pc.path, strings.NewReader(pc.form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		r = httptest.NewRequest(method, pc.path, nil)
	}
	r.AddCookie(&http.Cookie{Name: learnerCookie, Value: pc.learner})
	r.Header.Set("Accept-Language", "zh-CN,zh;q=0.9")
	return r
}

// lessonPageCases serves the built-in course with the sandbox on (so
// experiment widgets show their forms) and prepares learners in the states
// a lesson page shows differently: new, returning with quiz attempts (right,
// wrong, several), with a measured tcp-cost run, with the lesson completed;
// and requests with widget queries, a shown attempt, a rejected form.
func lessonPageCases(t *testing.T) (*runEnv, []pageCase) {
	t.Helper()
	env := newRunEnvTB(t, runner.Config{})
	env.t = t
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env.Course.Store(course)
	ctx := context.Background()
	db := env.DB
	l := course.Lesson(benchSlug)
	if l == nil || l.Quiz == nil || len(l.Quiz.Questions) < 3 {
		t.Fatalf("lesson %s needs a quiz of at least 3 questions", benchSlug)
	}
	qs := l.Quiz.Questions

	// answer stores an attempt at q: its first option (or 1 for numeric,
	// the options in display order for order questions), graded as submitted.
	answer := func(learner string, q *quiz.Question, right bool) int64 {
		t.Helper()
		var a quiz.Answer
		switch q.Type {
		case quiz.Single:
			a.Choice = q.Options[0].ID
		case quiz.Multi, quiz.Order:
			for _, o := range q.Options {
				a.Choices = append(a.Choices, o.ID)
			}
		case quiz.Numeric:
			a.Number = 1
		}
		att, err := db.AddAttempt(ctx, learner, q.ID, quiz.EncodeAnswer(q, a), right, false)
		if err != nil {
			t.Fatal(err)
		}
		return att.ID
	}

	fresh := store.NewLearnerID()
	quizzer := store.NewLearnerID()
	answer(quizzer, qs[0], false)
	answer(quizzer, qs[0], true)
	answer(quizzer, qs[0], false)
	answer(quizzer, qs[1], false)
	shown := answer(quizzer, qs[2], true)
	var inline *quiz.Question // a question the text places with ::quiz
	for _, id := range l.Page("zh").QuestionIDs {
		inline = course.Questions[id]
		break
	}
	if inline == nil {
		t.Fatalf("lesson %s places no question with ::quiz", benchSlug)
	}
	shownInline := answer(quizzer, inline, false)
	if err := db.MarkCompleted(ctx, quizzer, benchSlug); err != nil {
		t.Fatal(err)
	}

	measurer := store.NewLearnerID()
	if err := db.CreateRun(ctx, sandbox.RunInfo{ID: "run-measured", Learner: measurer, Experiment: "tcp-cost",
		Params: sandbox.Params{}, Status: sandbox.StatusQueued, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ok := true
	for i, ev := range []sandbox.Event{
		{Type: sandbox.EvStatus, Status: sandbox.StatusRunning, Backend: "host"},
		{Type: sandbox.EvResult, OK: &ok, Figures: map[string]float64{"ghz_per_gbps": 0.5342, "cpu_ghz": 2.45, "msg_size": 65536}},
		{Type: sandbox.EvStatus, Status: sandbox.StatusDone},
	} {
		ev.Seq, ev.Time = int64(i+1), time.Now()
		if err := db.AppendRunEvent(ctx, "run-measured", ev); err != nil {
			t.Fatal(err)
		}
	}

	page := "/lessons/" + benchSlug
	var cases []pageCase
	for _, lang := range []string{"zh", "en"} {
		p := page + "?lang=" + lang
		cases = append(cases,
			pageCase{name: lang + "-fresh", learner: fresh, path: p},
			pageCase{name: lang + "-quizzer", learner: quizzer, path: p},
			pageCase{name: lang + "-measurer", learner: measurer, path: p},
			pageCase{name: lang + "-query", learner: measurer, path: p + "&cb_gbps=40&wi_net=yes&wi_lib=yes"},
			pageCase{name: lang + "-badquery", learner: fresh, path: p + "&cb_ghz=abc&wi_lossless=maybe"},
			pageCase{name: lang + "-junkquery", learner: quizzer, path: p + "&utm_source=x"},
			pageCase{name: lang + "-attempt", learner: quizzer,
				path: p + "&attempt=" + strconv.FormatInt(shown, 10) + "&at=" + checkpointPrefix + qs[2].ID},
			pageCase{name: lang + "-attempt-inline", learner: quizzer,
				path: p + "&attempt=" + strconv.FormatInt(shownInline, 10) + "&at=" + inlinePrefix + inline.ID},
			pageCase{name: lang + "-attempt-everywhere", learner: quizzer, path: p + "&attempt=" + strconv.FormatInt(shownInline, 10)},
			pageCase{name: lang + "-others-attempt", learner: fresh, path: p + "&attempt=" + strconv.FormatInt(shown, 10)},
			pageCase{name: lang + "-rejected", learner: quizzer, method: "POST", path: attemptsPath(qs[0].ID) + "?lang=" + lang,
				form: url.Values{"lesson": {benchSlug}, "anchor": {checkpointPrefix + qs[0].ID}, "answer": {"no-such-option"}}},
		)
	}
	return env, cases
}

// TestStaticSkeletonMatchesPerRequest: the static skeleton must show every
// learner exactly what rendering each directive segment per request shows.
// Each case is served as production chooses, from the static skeleton,
// and with every directive segment rendered for the request; a plain view
// must be the same bytes all three ways, and a view that answers a widget
// form or shows a quiz answer must take the per-request path (the static
// skeleton would show it wrongly, which the test checks too, so the cases
// matter).
func TestStaticSkeletonMatchesPerRequest(t *testing.T) {
	env, cases := lessonPageCases(t)
	s := env.Server
	forced := func(static bool) http.Handler {
		return s.withLearner(page.WithLang(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.serveLessonFrom(w, r, lessonState{Slug: benchSlug, Status: http.StatusOK, Quiz: s.quizFromQuery(r)}, static)
		})))
	}
	serve := func(h http.Handler, pc pageCase) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, pc.request())
		return rec.Code, rec.Body.String()
	}
	// "quizzer" has answered questions of the page: the page restores their
	// latest answers (shownAt), which only the per-request path shows.
	plain := map[string]bool{"fresh": true, "measurer": true, "others-attempt": true}
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			code, got := serve(s.Handler(), pc)
			if pc.method == "POST" {
				// A rejected form: the page with the message at the question.
				if code != http.StatusBadRequest || !strings.Contains(got, `data-testid="quiz-error" role="alert">`) {
					t.Fatalf("rejected form: %d, message shown %v", code, strings.Contains(got, `role="alert">`))
				}
				return
			}
			_, perRequest := serve(forced(false), pc)
			_, static := serve(forced(true), pc)
			if code != http.StatusOK || len(got) < 10_000 {
				t.Fatalf("status %d, %d bytes", code, len(got))
			}
			if got != perRequest {
				t.Errorf("served page differs from the per-request rendering at byte %d", firstDiff(got, perRequest))
			}
			isPlain := plain[strings.SplitN(pc.name, "-", 2)[1]]
			if isPlain && static != perRequest {
				t.Errorf("static skeleton differs from the per-request rendering at byte %d:\n%s", firstDiff(static, perRequest), around(static, firstDiff(static, perRequest)))
			}
			if !isPlain && static == perRequest && !strings.Contains(pc.name, "junkquery") {
				t.Errorf("case does not exercise the per-request path: the static skeleton shows it the same")
			}
		})
	}
}

func firstDiff(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func around(s string, i int) string {
	return s[max(0, i-200):min(len(s), i+200)]
}

// TestLessonPageFollowsLearnerWrites: the records a plain view fills in
// come from per-learner caches; each write shows on the next view: a quiz
// answer (status line and checkpoint score), a finished tcp-cost run (the
// calculator's measured figure), a passed task check and completing the
// lesson.
func TestLessonPageFollowsLearnerWrites(t *testing.T) {
	env, _ := lessonPageCases(t)
	ctx := context.Background()
	learner := store.NewLearnerID()
	page := pageCase{learner: learner, path: "/lessons/" + benchSlug + "?lang=en"}
	view := func() string {
		t.Helper()
		rec := httptest.NewRecorder()
		env.Server.Handler().ServeHTTP(rec, page.request())
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
		return rec.Body.String()
	}
	before := view()
	view() // the learner's records are cached now
	for _, s := range []string{`data-attempts="1"`, `cpu-budget-measured`, `checkpoint-score">Answered correctly 1/`} {
		if strings.Contains(before, s) {
			t.Fatalf("new learner's page already has %s", s)
		}
	}
	q := env.Course.Load().Lesson(benchSlug).Quiz.Questions[0]
	if _, err := env.DB.AddAttempt(ctx, learner, q.ID, []byte(`"x"`), true, false); err != nil {
		t.Fatal(err)
	}
	if err := env.DB.CreateRun(ctx, sandbox.RunInfo{ID: "follow", Learner: learner, Experiment: "tcp-cost",
		Params: sandbox.Params{}, Status: sandbox.StatusQueued, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ok := true
	for i, ev := range []sandbox.Event{
		{Type: sandbox.EvResult, OK: &ok, Figures: map[string]float64{"ghz_per_gbps": 0.8, "cpu_ghz": 3.1, "msg_size": 4096}},
		{Type: sandbox.EvStatus, Status: sandbox.StatusDone},
	} {
		ev.Seq, ev.Time = int64(i+1), time.Now()
		if err := env.DB.AppendRunEvent(ctx, "follow", ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.DB.MarkCompleted(ctx, learner, benchSlug); err != nil {
		t.Fatal(err)
	}
	task := env.Course.Load().Lesson(benchSlug).Tasks[0].ID
	if strings.Contains(before, `class="task task-done" id="task-`+task+`"`) {
		t.Fatalf("new learner's page already has task %s done", task)
	}
	if err := env.DB.RecordTaskCheck(ctx, learner, benchSlug, task, true); err != nil {
		t.Fatal(err)
	}
	after := view()
	if !strings.Contains(after, `class="task task-done" id="task-`+task+`"`) {
		t.Errorf("the passed check of task %s does not show", task)
	}
	if n := strings.Count(after, `data-attempts="1" data-best="true"`); n < 1 {
		t.Errorf("the answer does not show in the status lines (%d)", n)
	}
	if !strings.Contains(after, `data-testid="cpu-budget-measured" data-ghz="0.8" data-core="3.1"`) {
		t.Error("the calculator does not offer the measured figure")
	}
	if !regexpScore.MatchString(after) {
		t.Errorf("the checkpoint score does not count the right answer: %q", regexp.MustCompile(`checkpoint-score">[^<]*<`).FindString(after))
	}
	if before == after {
		t.Error("page unchanged")
	}
	if got, want := view(), after; got != want {
		t.Error("the next view differs")
	}
}

var regexpScore = regexp.MustCompile(`checkpoint-score">[^<]* 1/\d+<`)
