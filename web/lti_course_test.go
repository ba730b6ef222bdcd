package web

import (
	"context"
	"encoding/csv"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/crypto/bcrypt"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/lti"
	"github.com/rdmalab/rdmalab/lti/ltitest"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/instructor"
	"github.com/rdmalab/rdmalab/web/page"
)

// Issue 41: the LMS mapping survives re-registration, roles are per
// course, graded details reach the LMS. Every test drives the lab through
// the test platform (lti/ltitest, written from the IMS specs).

// gradedLink is a learner's launch of the lesson with a gradebook column.
func gradedLink(sub, course, item string, roles ...string) ltitest.Message {
	return ltitest.Message{Sub: sub, Name: "Student " + sub, ContextID: course, ContextTitle: "Course " + course,
		LineItem: item, Roles: roles, Custom: map[string]string{"lesson": "01-quiz"}}
}

// scoreAfter waits until the platform holds more than n scores and
// returns the newest.
func (e *ltiEnv) scoreAfter(n int) ltitest.Score {
	e.t.Helper()
	s := e.waitScores(n + 1)
	return s[len(s)-1]
}

// waitGiven waits until the newest score at the platform gives v.
func (e *ltiEnv) waitGiven(v float64) {
	e.t.Helper()
	for {
		s := e.waitScores(1)
		if s[len(s)-1].Score.ScoreGiven == v {
			return
		}
		e.waitScores(len(s) + 1)
	}
}

// settle waits until the outbox is empty (every queued score delivered).
func (e *ltiEnv) settle() {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for e.count(`SELECT COUNT(*) FROM lti_outbox`) != 0 {
		if time.Now().After(deadline) {
			e.t.Fatalf("scores stay in the outbox; log:\n%s", e.Logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// teacher is a lab instructor signed in.
func (e *ltiEnv) teacher() *http.Client {
	e.t.Helper()
	old := store.PasswordCost
	store.PasswordCost = bcrypt.MinCost
	e.t.Cleanup(func() { store.PasswordCost = old })
	if _, err := e.DB.CreateInstructor(context.Background(), "teacher", "correct horse battery"); err != nil {
		e.t.Fatal(err)
	}
	in := e.browser()
	res, err := in.PostForm(e.HTTP.URL+"/instructor/login", url.Values{"username": {"teacher"}, "password": {"correct horse battery"}})
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	return in
}

// classOf is the class of an LMS course.
func (e *ltiEnv) classOf(course string) int64 {
	e.t.Helper()
	var id int64
	if err := rawDB(e.t, e.DB).QueryRow(`SELECT cohort_id FROM lti_contexts WHERE context_id = ?`, course).Scan(&id); err != nil {
		e.t.Fatalf("class of %s: %v", course, err)
	}
	return id
}

// setGraded makes 01-quiz graded in class id through the settings form
// (the class's zone is UTC).
func (e *ltiEnv) setGraded(in *http.Client, id int64, opens, closes time.Time, limit int, counts string) {
	e.t.Helper()
	res, err := in.PostForm(e.HTTP.URL+"/instructor/classes/"+strconv.FormatInt(id, 10)+"/graded", url.Values{
		"lesson": {"01-quiz"}, "mode": {"graded"}, "opens": {opens.UTC().Format(instructor.LocalInput)},
		"closes": {closes.UTC().Format(instructor.LocalInput)}, "limit": {strconv.Itoa(limit)}, "counts": {counts}})
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("graded setting: %d", res.StatusCode)
	}
}

// TestLTIReRegisterKeepsLearners (item 1): removing a registration keeps
// its users' links; registering it again, or the same issuer under a new
// client id, reconnects the student to their own learner and class, and
// the next score is their work's, not an empty learner's 0.
func TestLTIReRegisterKeepsLearners(t *testing.T) {
	e := newLTIEnv(t)
	ctx := context.Background()
	item := e.Platform.NewLineItem("Quiz")
	c := e.browser()
	e.launch(c, gradedLink("u-1", "course-1", item))
	id := e.learnerOf(c)
	e.answer(c, "demo/pick-one", `{"answer":"a"}`)
	e.answer(c, "demo/pick-many", `{"answer":["a","b"]}`)
	e.waitGiven(2)
	e.settle()
	ps, _ := e.DB.LTIPlatforms(ctx)
	if err := e.DB.RemoveLTIPlatform(ctx, ps[0].ID); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT COUNT(*) FROM lti_users`) + e.count(`SELECT COUNT(*) FROM lti_grade_links`) + e.count(`SELECT COUNT(*) FROM lti_contexts`); n != 3 {
		t.Errorf("after removal %d user, link and course rows are left, want all 3 kept", n)
	}
	if _, err := e.DB.AddLTIPlatform(ctx, e.Platform.Registration()); err != nil {
		t.Fatalf("registering the platform again: %v", err)
	}
	again := e.browser()
	e.launch(again, gradedLink("u-1", "course-1", item))
	if got := e.learnerOf(again); got != id {
		t.Fatalf("after re-registering, the student is learner %q, want their own %q", got, id)
	}
	if n := e.count(`SELECT COUNT(*) FROM cohorts`); n != 1 {
		t.Errorf("%d classes after re-registering, want the course's one", n)
	}
	before := len(e.Platform.Scores())
	e.answer(again, "demo/number", `{"answer":100}`) // wrong: the LMS must still get 2
	if got := e.scoreAfter(before); got.Score.ScoreGiven != 2 || got.Score.UserID != "u-1" {
		t.Errorf("score after re-registering: %+v, want the student's 2", got.Score)
	}

	// The same LMS registered anew under another client id (a new tool
	// registration in the LMS): still the same person and course.
	e.settle()
	e.Platform.ClientID = "rdmalab-tool-2"
	if _, err := e.DB.AddLTIPlatform(ctx, e.Platform.Registration()); err != nil {
		t.Fatal(err)
	}
	third := e.browser()
	e.launch(third, gradedLink("u-1", "course-1", item))
	if got := e.learnerOf(third); got != id {
		t.Errorf("under a new client id the student is learner %q, want %q", got, id)
	}
	if n := e.count(`SELECT COUNT(*) FROM cohorts`); n != 1 {
		t.Errorf("%d classes under the new client id, want the course's one", n)
	}
	// A brand-new student who has answered nothing sends nothing.
	e.launch(e.browser(), gradedLink("u-2", "course-1", item))
	if n := e.count(`SELECT COUNT(*) FROM lti_outbox WHERE sub = 'u-2'`); n != 0 {
		t.Errorf("an empty learner's launch queued %d scores", n)
	}
}

// TestLTIRolesPerCourse (item 2): a TA of course A is still a learner of
// course B (counted, scored on their work); a learner who also
// administers the LMS site is a learner of the course.
func TestLTIRolesPerCourse(t *testing.T) {
	e := newLTIEnv(t)
	ctx := context.Background()
	itemB := e.Platform.NewLineItem("B")
	c := e.browser()
	e.launch(c, gradedLink("grad-1", "course-B", itemB))
	e.answer(c, "demo/pick-one", `{"answer":"a"}`)
	if got := e.scoreAfter(0); got.Score.ScoreGiven != 1 {
		t.Fatalf("first score in B: %+v", got.Score)
	}
	e.settle()
	e.launch(c, ltitest.Message{Sub: "grad-1", ContextID: "course-A", Roles: []string{lti.RoleTA}})
	e.launch(c, gradedLink("grad-1", "course-B", itemB))
	e.settle() // the launch sends the score it has (1)
	n := len(e.Platform.Scores())
	e.answer(c, "demo/pick-many", `{"answer":["a","b"]}`)
	if got := e.scoreAfter(n); got.Score.ScoreGiven != 2 {
		t.Errorf("score in B after a TA launch of A: %v/%v, want 2", got.Score.ScoreGiven, got.Score.ScoreMaximum)
	}
	b, err := e.DB.Cohort(ctx, e.classOf("course-B"))
	if err != nil || b.Members != 1 {
		t.Errorf("class B counts %d learners (%v), want the student", b.Members, err)
	}

	// A learner of A who becomes its TA leaves A's figures.
	ta := e.browser()
	e.launch(ta, ltitest.Message{Sub: "ta-1", ContextID: "course-A"})
	if a, _ := e.DB.Cohort(ctx, e.classOf("course-A")); a.Members != 1 {
		t.Fatalf("class A counts %d, want its learner", a.Members)
	}
	e.launch(ta, ltitest.Message{Sub: "ta-1", ContextID: "course-A", Roles: []string{lti.RoleTA}})
	if a, _ := e.DB.Cohort(ctx, e.classOf("course-A")); a.Members != 0 {
		t.Errorf("class A counts %d after its learner became TA, want 0", a.Members)
	}

	// Learner + system administrator: a learner of course C.
	e.settle()
	itemC := e.Platform.NewLineItem("C")
	adm := e.browser()
	e.launch(adm, gradedLink("adm-1", "course-C", itemC, lti.RoleLearner,
		"http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator"))
	n = len(e.Platform.Scores())
	e.answer(adm, "demo/pick-one", `{"answer":"a"}`)
	if got := e.scoreAfter(n); got.Score.ScoreGiven != 1 || got.Score.UserID != "adm-1" {
		t.Errorf("a learner who administers the LMS got %+v, want 1", got.Score)
	}
	if cl, _ := e.DB.Cohort(ctx, e.classOf("course-C")); cl.Members != 1 {
		t.Errorf("class C counts %d, want the learner-administrator", cl.Members)
	}
}

// TestLTIAttemptLimitAtomic (item 4): twelve answers sent at once to a
// question with a limit of one: one is stored, the others are refused
// and say nothing of right or wrong.
func TestLTIAttemptLimitAtomic(t *testing.T) {
	e := newLTIEnv(t)
	c := e.browser()
	e.launch(c, gradedLink("u-1", "course-1", ""))
	in := e.teacher()
	now := time.Now()
	e.setGraded(in, e.classOf("course-1"), now.Add(-time.Hour), now.Add(time.Hour), 1, "best")
	// Twelve connections open before the answers leave, so the answers
	// reach the server together rather than one dial after another.
	c = &http.Client{Jar: c.Jar, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var warm sync.WaitGroup
	for range 12 {
		warm.Add(1)
		go func() {
			defer warm.Done()
			if res, err := c.Get(e.HTTP.URL + "/healthz"); err == nil {
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		}()
	}
	warm.Wait()
	var leaked []string
	// Each question, twelve answers at once.
	for _, q := range []struct{ id, right, wrong string }{{"demo/pick-one", `"a"`, `"b"`},
		{"demo/pick-many", `["a","b"]`, `["c"]`}, {"demo/number", `12.5`, `100`},
		{"demo/steps", `["first","second","third"]`, `["third","second","first"]`}} {
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			taken int
		)
		gate := make(chan struct{}) // every answer leaves at once
		for i := range 12 {
			wg.Add(1)
			a := q.wrong
			if i%2 == 0 {
				a = q.right
			}
			req, _ := http.NewRequest("POST", e.HTTP.URL+attemptsPath(q.id), strings.NewReader(`{"answer":`+a+`}`))
			req.Header.Set("Content-Type", "application/json")
			go func() {
				defer wg.Done()
				<-gate
				res, err := c.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				mu.Lock()
				defer mu.Unlock()
				if res.StatusCode == http.StatusOK || res.StatusCode == http.StatusCreated {
					taken++
				} else if strings.Contains(string(body), `"correct"`) {
					leaked = append(leaked, string(body))
				}
			}()
		}
		close(gate)
		wg.Wait()
		if n := e.count(`SELECT COUNT(*) FROM attempts WHERE question_id = ?`, q.id); n != 1 || taken != 1 {
			t.Errorf("%s, limit 1, 12 answers at once: %d stored, %d accepted; want 1 and 1", q.id, n, taken)
		}
	}
	if len(leaked) > 0 {
		t.Errorf("refused answers say right or wrong: %q", leaked)
	}
}

// TestLTIArchivedClassRefusesLaunch (item 5): a course whose class is
// archived refuses launches with a page in zh and en, makes nothing, and
// no score leaves for it.
func TestLTIArchivedClassRefusesLaunch(t *testing.T) {
	e := newLTIEnv(t)
	ctx := context.Background()
	item := e.Platform.NewLineItem("Quiz")
	c := e.browser()
	e.launch(c, gradedLink("u-1", "course-1", item))
	if err := e.DB.ArchiveCohort(ctx, e.classOf("course-1"), true); err != nil {
		t.Fatal(err)
	}
	l := e.launch(e.browser(), gradedLink("u-2", "course-1", item))
	if l.Resp.StatusCode != http.StatusConflict || !strings.Contains(l.Body, tr(page.DefaultLang)("lti.archived.lede")) {
		t.Errorf("launch into an archived course: %d\n%s", l.Resp.StatusCode, l.Body)
	}
	zh := e.loginOnly(c, gradedLink("u-1", "course-1", item))
	req, _ := http.NewRequest("POST", zh.Action, strings.NewReader(zh.Form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept-Language", "zh-CN")
	res, err := c.Do(req)
	text := pageOf(t, res, err).Find("main").Text()
	if !strings.Contains(text, tr("zh")("lti.archived.lede")) {
		t.Errorf("zh page: %s", text)
	}
	if leaks := append(zhcheck.Prose(text), zhcheck.Leaks(text)...); len(leaks) > 0 {
		t.Errorf("English on the zh page: %q", leaks)
	}
	if n := e.count(`SELECT COUNT(*) FROM learners`); n != 1 {
		t.Errorf("%d learners, want only the one from before the archive", n)
	}
	if n := e.count(`SELECT COUNT(*) FROM cohorts`); n != 1 {
		t.Errorf("%d classes: the launch made another", n)
	}
	e.Platform.FailTokens(http.StatusServiceUnavailable) // anything queued would stay in the outbox
	e.answer(c, "demo/pick-one", `{"answer":"a"}`)
	if n := e.count(`SELECT COUNT(*) FROM lti_outbox`); n != 0 {
		t.Errorf("work after the archive queued %d scores for the LMS", n)
	}
}

// TestLTIClassHasNoJoinCode (item 6): the LMS course's class cannot be
// joined with its code.
func TestLTIClassHasNoJoinCode(t *testing.T) {
	e := newLTIEnv(t)
	e.launch(e.browser(), ltitest.Message{Sub: "u-1", Name: "Grace Hopper", ContextID: "course-1"})
	cl, err := e.DB.Cohort(context.Background(), e.classOf("course-1"))
	if err != nil {
		t.Fatal(err)
	}
	outsider := e.browser()
	res, err := outsider.PostForm(e.HTTP.URL+"/join", url.Values{"code": {cl.Code}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if n := e.count(`SELECT COUNT(*) FROM cohort_members`); n != 1 {
		t.Errorf("%d members after an outsider used the join code, want the LMS's one", n)
	}
	// The classes page shows none.
	res, err = e.teacher().Get(e.HTTP.URL + "/instructor/classes?lang=en")
	doc := pageOf(t, res, err)
	if doc.Find("[data-testid=class-code]").Length() != 0 || doc.Find("[data-testid=class-lms]").Length() != 1 {
		t.Errorf("the classes page of an LMS class: %s", doc.Find("main").Text())
	}
}

// TestLTIGradedChangesReachTheLMS (item 3): a graded setting changed, a
// "send again", and the close each send the class's scores again.
func TestLTIGradedChangesReachTheLMS(t *testing.T) {
	e := newLTIEnv(t)
	item := e.Platform.NewLineItem("Quiz")
	c := e.browser()
	e.launch(c, gradedLink("u-1", "course-1", item))
	cl := e.classOf("course-1")
	in := e.teacher()
	now := time.Now()
	e.setGraded(in, cl, now.Add(-time.Hour), now.Add(time.Hour), 3, "best")
	e.answer(c, "demo/pick-one", `{"answer":"b"}`) // wrong
	e.answer(c, "demo/pick-one", `{"answer":"a"}`) // right: best counts 1
	e.waitGiven(1)
	e.settle()
	n := len(e.Platform.Scores())
	e.setGraded(in, cl, now.Add(-time.Hour), now.Add(time.Hour), 3, "first") // the first was wrong: 0
	if got := e.scoreAfter(n); got.Score.ScoreGiven != 0 || got.Score.UserID != "u-1" {
		t.Errorf("after counts best → first the LMS got %+v, want 0", got.Score)
	}
	e.settle()
	n = len(e.Platform.Scores())
	res, err := in.PostForm(e.HTTP.URL+"/instructor/classes/"+strconv.FormatInt(cl, 10)+"/graded/lti-resend", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("send again: %d", res.StatusCode)
	}
	if got := e.scoreAfter(n); got.Score.ScoreGiven != 0 {
		t.Errorf("sent again: %+v", got.Score)
	}
	// The page offers it.
	res, err = in.Get(e.HTTP.URL + "/instructor/classes/" + strconv.FormatInt(cl, 10) + "/graded?lang=en")
	if doc := pageOf(t, res, err); doc.Find("[data-testid=gset-lti-resend]").Length() != 1 {
		t.Error("the graded settings of an LMS class offer no \"send again\"")
	}
	// Closed early: the scores go out final, Completed. (The answers are
	// moved half an hour back, so a close a minute ago follows them.)
	e.settle()
	back := now.Add(-30 * time.Minute).UTC().Format("2006-01-02T15:04:05.000000000Z")
	if _, err := rawDB(t, e.DB).Exec(`UPDATE attempts SET created_at = ?`, back); err != nil {
		t.Fatal(err)
	}
	if _, err := rawDB(t, e.DB).Exec(`UPDATE cohort_members SET joined_at = ?`, now.Add(-40*time.Minute).UTC().Format("2006-01-02T15:04:05.000000000Z")); err != nil {
		t.Fatal(err)
	}
	n = len(e.Platform.Scores())
	e.setGraded(in, cl, now.Add(-time.Hour), now.Add(-time.Minute), 3, "best")
	if got := e.scoreAfter(n); got.Score.ScoreGiven != 1 || got.Score.ActivityProgress != "Completed" {
		t.Errorf("closed early: %+v, want 1 and Completed", got.Score)
	}
	// The close watcher sends it once more, once.
	e.settle()
	n = len(e.Platform.Scores())
	for range 2 {
		if err := e.Srv.ltiSendCloses(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	e.settle()
	if got := len(e.Platform.Scores()) - n; got != 1 {
		t.Errorf("the close sent %d scores, want 1", got)
	}
}

// TestLTIDeepLinkMakesTheClass (item 8): placing content makes the
// course's class, so graded mode can be set before any learner comes.
func TestLTIDeepLinkMakesTheClass(t *testing.T) {
	e := newLTIEnv(t)
	l := e.launch(e.browser(), ltitest.Message{Type: lti.MsgDeepLinking, Sub: "t-1", Roles: []string{lti.RoleInstructor},
		ContextID: "course-9", ContextTitle: "RDMA 9"})
	if l.Resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("deep-linking launch: %d", l.Resp.StatusCode)
	}
	if n := e.count(`SELECT COUNT(*) FROM cohorts c JOIN lti_contexts x ON x.cohort_id = c.id WHERE c.name = 'RDMA 9'`); n != 1 {
		t.Errorf("%d classes for the course after deep linking, want 1", n)
	}
	if n := e.count(`SELECT COUNT(*) FROM cohort_staff`); n != 1 {
		t.Errorf("the placing instructor is staff of %d classes, want 1", n)
	}
}

// TestLTIStateBoundToBrowser (item 8): a launch form started in one
// browser (an attacker's login) and posted from another (the victim's)
// is refused, and the victim does not become the attacker's learner; the
// state stays good for the browser that started it.
func TestLTIStateBoundToBrowser(t *testing.T) {
	e := newLTIEnv(t)
	attacker, victim := e.browser(), e.browser()
	form := e.loginOnly(attacker, ltitest.Message{Sub: "attacker"})
	if err := form.Post(victim); err != nil {
		t.Fatal(err)
	}
	if form.Resp.StatusCode != http.StatusForbidden || !strings.Contains(form.Body, tr(page.DefaultLang)("lti.refused.browser")) {
		t.Errorf("another browser's launch: %d\n%s", form.Resp.StatusCode, form.Body)
	}
	if id := e.learnerOf(victim); id != "" {
		t.Errorf("the victim's browser became learner %q", id)
	}
	if err := form.Post(attacker); err != nil {
		t.Fatal(err)
	}
	if form.Resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the launch in its own browser: %d", form.Resp.StatusCode)
	}
}

// TestLTIRefusalWording (item 9): each state and nonce problem has its
// own message.
func TestLTIRefusalWording(t *testing.T) {
	e := newLTIEnv(t)
	msg := tr(page.DefaultLang)
	c := e.browser()
	kinds := []string{"state", "state-used", "state-expired", "nonce", "browser"}
	seen := map[string]string{}
	for _, k := range kinds {
		m := msg("lti.refused." + k)
		if other, dup := seen[m]; dup {
			t.Errorf("%s and %s say the same: %q", k, other, m)
		} else if m == "lti.refused."+k {
			t.Errorf("%s has no message of its own", k)
		}
		seen[m] = k
	}
	// Unknown: a state the lab never issued, with its cookie.
	u, _ := url.Parse(e.HTTP.URL + "/lti/")
	c.Jar.SetCookies(u, []*http.Cookie{{Name: lti.StateCookie("made-up"), Value: "made-up", Path: "/lti/"}})
	res, err := c.PostForm(e.HTTP.URL+"/lti/launch", url.Values{"state": {"made-up"}, "id_token": {"x.y.z"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(b), msg("lti.refused.state")) {
		t.Errorf("unknown state: %d %s", res.StatusCode, b)
	}
}

// TestLTILaunchRateLimited (item 9): a launch over the write rate says so
// in the LMS's words, not "The run could not start".
func TestLTILaunchRateLimited(t *testing.T) {
	p := ltitest.New()
	t.Cleanup(p.Close)
	e := &ltiEnv{t: t, dir: t.TempDir(), Platform: p, limits: Limits{WriteBurst: 1, WriteEvery: time.Hour}}
	e.course.Store(quizCourse(t))
	e.start()
	if _, err := e.DB.AddLTIPlatform(context.Background(), p.Registration()); err != nil {
		t.Fatal(err)
	}
	hint := p.Prepare(ltitest.Message{Sub: "u-1"})
	c := e.browser()
	for range 2 {
		res, err := c.Get(e.HTTP.URL + "/lti/login?" + p.LoginQuery(hint, e.HTTP.URL+"/").Encode() + "&lang=en")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusTooManyRequests {
			continue
		}
		if strings.Contains(string(b), tr("en")("run.refused")) || !strings.Contains(string(b), tr("en")("lti.busy")) {
			t.Errorf("429 on a launch:\n%s", b)
		}
		return
	}
	t.Error("no 429 at the second login with a burst of 1")
}

// TestLTIMeShowsTheLMSName (item 9): /me shows an LMS learner their
// LMS name, with no field it would refuse.
func TestLTIMeShowsTheLMSName(t *testing.T) {
	e := newLTIEnv(t)
	c := e.browser()
	e.launch(c, ltitest.Message{Sub: "u-1", Name: "Mei Chen"})
	res, err := c.Get(e.HTTP.URL + "/me?lang=en")
	doc := pageOf(t, res, err)
	if doc.Find("input[name=name]").Length() != 0 || doc.Find("[data-testid=me-lms]").Length() != 1 ||
		doc.Find("[data-testid=me-name]").Text() != "Mei Chen" {
		t.Errorf("/me of an LMS learner: %s", doc.Find("main").Text())
	}
}

// TestLTIPlatformFormNamesFields (item 9): the admin form's errors name
// its fields, not the CLI's flags.
func TestLTIPlatformFormNamesFields(t *testing.T) {
	e := newLTIEnv(t)
	in := e.teacher()
	res, err := in.PostForm(e.HTTP.URL+"/instructor/lti?lang=en", url.Values{"issuer": {"https://lms.example"}, "client_id": {"c"},
		"auth_url": {"ftp://x"}, "token_url": {"https://lms.example/t"}, "jwks_url": {"https://lms.example/j"}, "deployments": {"1"}})
	text := pageOf(t, res, err).Find("main").Text()
	if strings.Contains(text, "--") || !strings.Contains(text, tr("en")("lti.f.auth")) {
		t.Errorf("form error: %s", text)
	}
}

// TestLTITasksCompleteTheLesson (item 9): in a graded lesson with a
// terminal task, the task's check that completes the work sends
// Completed.
func TestLTITasksCompleteTheLesson(t *testing.T) {
	p := ltitest.New()
	t.Cleanup(p.Close)
	terms := &taskTerms{fakeTerms: &fakeTerms{max: 2, queueMax: 1, sessions: map[string]*fakeShell{}},
		open: map[string]bool{}, verdict: map[string]TaskVerdict{}}
	e := &ltiEnv{t: t, dir: t.TempDir(), Platform: p, terms: terms}
	course := quizCourse(t)
	course.Lessons[0].Tasks = []*lessons.Task{{ID: "memlock", Path: "tasks/memlock.sh", Script: []byte("#!/bin/sh\n")}}
	e.course.Store(course)
	e.start()
	if _, err := e.DB.AddLTIPlatform(context.Background(), p.Registration()); err != nil {
		t.Fatal(err)
	}
	item := p.NewLineItem("Quiz")
	c := e.browser()
	e.launch(c, gradedLink("u-1", "course-1", item))
	in := e.teacher()
	now := time.Now()
	e.setGraded(in, e.classOf("course-1"), now.Add(-time.Hour), now.Add(time.Hour), 3, "best")
	for _, a := range [][2]string{{"demo/pick-one", `"a"`}, {"demo/pick-many", `["a","b"]`}, {"demo/number", `12.5`},
		{"demo/steps", `["first","second","third"]`}} {
		e.answer(c, a[0], `{"answer":`+a[1]+`}`)
	}
	e.settle()
	s := p.Scores()
	if last := s[len(s)-1].Score; last.ScoreGiven != 4 || last.ActivityProgress != "InProgress" {
		t.Fatalf("every question answered, the task not done: %+v", last)
	}
	id := e.learnerOf(c)
	terms.mu.Lock()
	terms.open[id], terms.verdict[id] = true, TaskVerdict{Passed: true}
	terms.mu.Unlock()
	req, _ := http.NewRequest("POST", e.HTTP.URL+"/api/lessons/01-quiz/tasks/memlock/check", nil)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := e.scoreAfter(len(s)); got.Score.ActivityProgress != "Completed" || got.Score.ScoreGiven != 4 {
		t.Errorf("after the task: %+v, want 4 and Completed", got.Score)
	}
}

// gradebookCSV is the gradebook export of the class of LMS course as an
// instructor gets it, with its columns by name.
func (e *ltiEnv) gradebookCSV(course string) (rows [][]string, col map[string]int) {
	e.t.Helper()
	res, err := e.teacher().Get(e.HTTP.URL + "/instructor/export/gradebook.csv?class=" + strconv.FormatInt(e.classOf(course), 10))
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	rows, err = csv.NewReader(strings.NewReader(strings.TrimPrefix(string(b), "\ufeff"))).ReadAll()
	if err != nil || len(rows) < 2 {
		e.t.Fatalf("export: %v\n%s", err, b)
	}
	col = map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	return rows, col
}

// TestLTIExportCarriesLMSID: the gradebook export names each LMS learner
// by the LMS's user id and email, to match the LMS gradebook.
func TestLTIExportCarriesLMSID(t *testing.T) {
	e := newLTIEnv(t)
	c := e.browser()
	e.launch(c, ltitest.Message{Sub: "lms-77", Name: "Mei Chen", Email: "mei@school.edu", ContextID: "course-1"})
	e.answer(c, "demo/pick-one", `{"answer":"a"}`)
	rows, col := e.gradebookCSV("course-1")
	if r := rows[1]; r[col["lms_user_id"]] != "lms-77" || r[col["lms_email"]] != "mei@school.edu" {
		t.Errorf("export row: %q (header %q)", r, rows[0])
	}
}

// TestLTIRosterSync: the class page of an LMS course reads its roster from
// the LMS (NRPS, paged) and shows who is enrolled and launched, enrolled
// and never launched, and who dropped; it shows no join code.
func TestLTIRosterSync(t *testing.T) {
	e := newLTIEnv(t)
	learner := []string{lti.RoleLearner}
	e.Platform.SetMembers("course-1", []lti.Member{
		{UserID: "u-1", Name: "Ada", Roles: learner},
		{UserID: "u-2", Name: "Grace", Email: "grace@school.edu", Roles: learner},
		{UserID: "u-3", Name: "Lin", Roles: learner, Status: "Inactive"},
		{UserID: "t-1", Name: "Prof", Roles: []string{lti.RoleInstructor}},
	}, 3)
	for _, m := range []ltitest.Message{{Sub: "u-1", Name: "Ada"}, {Sub: "u-3", Name: "Lin"}, {Sub: "u-9", Name: "Gone"},
		{Sub: "t-1", Name: "Prof", Roles: []string{lti.RoleInstructor}}} {
		m.ContextID = "course-1"
		e.launch(e.browser(), m)
	}
	in := e.teacher()
	path := e.HTTP.URL + "/instructor/classes/" + strconv.FormatInt(e.classOf("course-1"), 10) + "/roster"
	res, err := in.Get(path + "?lang=en")
	doc := pageOf(t, res, err)
	if doc.Find("[data-testid=lms-roster-sync]").Length() != 1 || doc.Find("[data-testid=roster-class-code]").Length() != 0 {
		t.Fatalf("roster page of an LMS class before the sync: %s", doc.Find("main").Text())
	}
	res, err = in.PostForm(path+"/lti-sync", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sync: %d", res.StatusCode)
	}
	res, err = in.Get(path + "?lang=en")
	doc = pageOf(t, res, err)
	got := map[string]string{}
	doc.Find("[data-testid=lms-roster-row]").Each(func(_ int, r *goquery.Selection) {
		st, _ := r.Attr("data-status")
		got[r.Find("code").Text()] = st
	})
	want := map[string]string{"u-1": "launched", "u-2": "never", "u-3": "dropped", "u-9": "dropped", "t-1": "launched"}
	if len(got) != len(want) {
		t.Errorf("roster rows %v, want %v", got, want)
	}
	for sub, st := range want {
		if got[sub] != st {
			t.Errorf("%s: %q, want %q (all: %v)", sub, got[sub], st, got)
		}
	}
}

// TestLTIProgramsScore (issue 40, "programs count"): a lesson's LMS score
// is a point per question and per :::program exercise; a program passed
// earns its point, one passed after its solution was shown does not,
// and the gradebook's CSV gives the LMS's figure (points of points_max).
func TestLTIProgramsScore(t *testing.T) {
	p := ltitest.New()
	t.Cleanup(p.Close)
	e := &ltiEnv{t: t, dir: t.TempDir(), Platform: p}
	course := quizCourse(t)
	course.Lessons[0].Programs = []*lessons.Program{{ID: "open-device"}, {ID: "reg-mr"}}
	e.course.Store(course)
	e.start()
	ctx := context.Background()
	if _, err := e.DB.AddLTIPlatform(ctx, p.Registration()); err != nil {
		t.Fatal(err)
	}
	item := p.NewLineItem("Quiz")
	c := e.browser()
	e.launch(c, gradedLink("u-1", "course-1", item))
	e.answer(c, "demo/pick-one", `{"answer":"a"}`) // right
	e.settle()
	s := p.Scores()
	if len(s) == 0 {
		t.Fatal("no score after a right answer")
	}
	if got := s[len(s)-1].Score; got.ScoreGiven != 1 || got.ScoreMaximum != 6 {
		t.Fatalf("one question right: %v of %v, want 1 of 6 (4 questions and 2 programs)", got.ScoreGiven, got.ScoreMaximum)
	}
	id := e.learnerOf(c)
	if err := e.DB.RecordProgramRun(ctx, id, "01-quiz", "open-device", false); err != nil {
		t.Fatal(err)
	}
	if err := e.DB.RecordProgramRun(ctx, id, "01-quiz", "open-device", true); err != nil {
		t.Fatal(err)
	}
	e.Srv.ltiQueueLesson(ctx, id, "01-quiz")
	if got := e.scoreAfter(len(s)).Score; got.ScoreGiven != 2 || got.ScoreMaximum != 6 {
		t.Fatalf("a program passed: %v of %v, want 2 of 6", got.ScoreGiven, got.ScoreMaximum)
	}
	s = p.Scores()
	if err := e.DB.RecordSolutionShown(ctx, id, "01-quiz", "reg-mr"); err != nil {
		t.Fatal(err)
	}
	if err := e.DB.RecordProgramRun(ctx, id, "01-quiz", "reg-mr", true); err != nil {
		t.Fatal(err)
	}
	e.Srv.ltiQueueLesson(ctx, id, "01-quiz")
	if got := e.scoreAfter(len(s)).Score; got.ScoreGiven != 2 || got.ActivityProgress != "InProgress" {
		t.Errorf("a program passed after its solution was shown: %v (%s), want still 2, in progress (3 questions unanswered)", got.ScoreGiven, got.ActivityProgress)
	}
	rows, col := e.gradebookCSV("course-1")
	if r := rows[1]; r[col["points"]] != "2" || r[col["points_max"]] != "6" || r[col["programs_passed"]] != "2" || r[col["score"]] != "1" {
		t.Errorf("export row: %q (header %q); want points 2 of 6, programs passed 2, score 1", r, rows[0])
	}
}
