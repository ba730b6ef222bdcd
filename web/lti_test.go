package web

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/crypto/bcrypt"

	rdmalab "github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/syncbuf"
	"github.com/rdmalab/rdmalab/internal/zhcheck"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/lti"
	"github.com/rdmalab/rdmalab/lti/ltitest"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
)

// ltiEnv is the lab serving quizCourse as an LTI tool, with the test
// platform (lti/ltitest, written from the IMS specs) registered, and the
// score deliverer running as serve runs it.
type ltiEnv struct {
	t        *testing.T
	dir      string
	DB       *store.DB
	HTTP     *httptest.Server
	Platform *ltitest.Platform
	Tool     *lti.Tool
	Logs     *syncbuf.Buffer // the deliverer logs from its own goroutine
	stop     context.CancelFunc
	stopped  chan struct{}
	course   atomic.Pointer[lessons.Course]
	Srv      *Server
	limits   Limits           // the server's limits (zero: the defaults)
	terms    rdmalab.TermHost // the server's terminals (nil: none)
}

func newLTIEnv(t *testing.T) *ltiEnv {
	t.Helper()
	p := ltitest.New()
	t.Cleanup(p.Close)
	e := &ltiEnv{t: t, dir: t.TempDir(), Platform: p}
	e.course.Store(quizCourse(t))
	e.start()
	if _, err := e.DB.AddLTIPlatform(context.Background(), p.Registration()); err != nil {
		t.Fatal(err)
	}
	return e
}

// start opens the database and serves (again, after stopServing: a restart).
func (e *ltiEnv) start() {
	t := e.t
	db, err := store.Open(filepath.Join(e.dir, "lab.db"))
	if err != nil {
		t.Fatal(err)
	}
	e.DB = db
	e.Tool = &lti.Tool{Registry: db, KeyFile: filepath.Join(e.dir, "lti-tool-key.pem")}
	e.Logs = new(syncbuf.Buffer)
	log := slog.New(slog.NewTextHandler(e.Logs, nil))
	d := lti.NewDeliverer(e.Tool, db, log)
	d.Poll = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	e.stop, e.stopped = cancel, make(chan struct{})
	go func() { d.Run(ctx); close(e.stopped) }()
	srv, err := New(Config{Course: e.course.Load, Store: db, Logger: log, Limits: e.limits, Terminals: e.terms,
		LTI: &LTI{Tool: e.Tool, Kick: d.Kick}})
	if err != nil {
		t.Fatal(err)
	}
	e.Srv = srv
	e.HTTP = httptest.NewServer(srv.Handler())
	e.Platform.SetToolJWKS(e.HTTP.URL + "/lti/jwks")
	t.Cleanup(e.stopServing)
}

func (e *ltiEnv) stopServing() {
	if e.HTTP == nil {
		return
	}
	e.HTTP.Close()
	e.stop()
	<-e.stopped
	e.DB.Close()
	e.HTTP = nil
}

// browser is one browser: its own cookies, redirects not followed.
func (e *ltiEnv) browser() *http.Client { return (&testEnv{}).client() }

func (e *ltiEnv) launch(c *http.Client, m ltitest.Message) *ltitest.Launched {
	e.t.Helper()
	l, err := e.Platform.Launch(c, e.HTTP.URL+"/lti/login", m, e.HTTP.URL+"/lessons/01-quiz")
	if err != nil {
		e.t.Fatalf("launch: %v", err)
	}
	return l
}

func (e *ltiEnv) count(query string, args ...any) int {
	e.t.Helper()
	var n int
	if err := rawDB(e.t, e.DB).QueryRow(query, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// learnerOf is the learner id a browser's cookie names (unsigned here).
func (e *ltiEnv) learnerOf(c *http.Client) string {
	u, _ := url.Parse(e.HTTP.URL)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == learnerCookie {
			return ck.Value
		}
	}
	return ""
}

func TestLTILaunchIdentifiesLearnerAndClass(t *testing.T) {
	e := newLTIEnv(t)
	ada := e.browser()
	m := ltitest.Message{Sub: "u-1001", Name: "Ada Lovelace", ContextID: "course-7", ContextTitle: "RDMA 101"}
	l := e.launch(ada, m)
	if l.Resp.StatusCode != http.StatusSeeOther || l.Resp.Header.Get("Location") != "/lessons/01-quiz" {
		t.Fatalf("launch: %d → %q\n%s", l.Resp.StatusCode, l.Resp.Header.Get("Location"), l.Body)
	}
	id := e.learnerOf(ada)
	if !store.ValidLearnerID(id) {
		t.Fatalf("no learner cookie after the launch (%q)", id)
	}
	if name, _ := e.DB.DisplayName(context.Background(), id); name != "Ada Lovelace" {
		t.Errorf("display name %q, want the claims' name", name)
	}
	cohorts, err := e.DB.LearnerCohorts(context.Background(), id)
	if err != nil || len(cohorts) != 1 || cohorts[0].Name != "RDMA 101" {
		t.Fatalf("classes of the launched learner: %+v, %v; want the LMS course", cohorts, err)
	}
	// The lesson page opens with that cookie.
	res, err := ada.Get(e.HTTP.URL + "/lessons/01-quiz")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("lesson after launch: %v %v", res.Status, err)
	}
	res.Body.Close()

	// The same platform user on another device: the same learner, the same class.
	phone := e.browser()
	e.launch(phone, m)
	if got := e.learnerOf(phone); got != id {
		t.Errorf("second launch of the same sub is learner %q, want %q", got, id)
	}
	// Another student of the course joins the same class; an instructor
	// launching the course is staff, not a member.
	e.launch(e.browser(), ltitest.Message{Sub: "u-1002", Name: "Grace", ContextID: "course-7", ContextTitle: "RDMA 101"})
	teacher := e.browser()
	e.launch(teacher, ltitest.Message{Sub: "t-1", Name: "Prof", ContextID: "course-7", Roles: []string{lti.RoleInstructor}})
	if n := e.count(`SELECT COUNT(*) FROM cohorts`); n != 1 {
		t.Errorf("%d classes, want 1 (the LMS course)", n)
	}
	if n := e.count(`SELECT COUNT(*) FROM cohort_members`); n != 2 {
		t.Errorf("%d class members, want the 2 learners", n)
	}
	if n := e.count(`SELECT COUNT(*) FROM cohort_staff WHERE learner = ? AND role = 'instructor'`, e.learnerOf(teacher)); n != 1 {
		t.Error("an instructor's launch is not marked staff of the course's class")
	}
	if n := e.count(`SELECT COUNT(*) FROM lti_users`); n != 3 {
		t.Errorf("%d platform users, want 3", n)
	}
	// The LMS sets the name: /me cannot change it.
	if err := e.DB.SetDisplayName(context.Background(), id, "Someone Else"); err == nil {
		t.Error("an LMS user renamed themselves")
	}
}

func TestLTILaunchLandsOnTheLinkedQuestion(t *testing.T) {
	e := newLTIEnv(t)
	l := e.launch(e.browser(), ltitest.Message{Sub: "u-1", Custom: map[string]string{"lesson": "01-quiz", "question": "demo/pick-one"}})
	if got := l.Resp.Header.Get("Location"); got != "/lessons/01-quiz#cp-demo/pick-one" {
		t.Errorf("landing %q, want the question in the checkpoint", got)
	}
	l = e.launch(e.browser(), ltitest.Message{Sub: "u-2", TargetLink: "https://evil.example/x"})
	if got := l.Resp.Header.Get("Location"); got != "/" {
		t.Errorf("a foreign target_link_uri landed on %q, want the course home", got)
	}
}

// TestLTIRefusals: forged, replayed and expired launches are refused with
// a page saying why, and nobody is created.
func TestLTIRefusals(t *testing.T) {
	e := newLTIEnv(t)
	forger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := e.Platform
	tamper := func(f func(c map[string]any)) ltitest.Forge { return ltitest.Forge{Tamper: f} }
	cases := []struct {
		name  string
		forge ltitest.Forge
		kind  lti.Kind
	}{
		{"wrong key", ltitest.Forge{SignWith: forger}, lti.KindSignature},
		{"alg none", ltitest.Forge{AlgNone: true}, lti.KindSignature},
		{"wrong aud", tamper(func(c map[string]any) { c["aud"] = "someone-else" }), lti.KindAudience},
		{"wrong azp", tamper(func(c map[string]any) { c["aud"] = []string{p.ClientID, "other"}; c["azp"] = "other" }), lti.KindAudience},
		{"wrong iss", tamper(func(c map[string]any) { c["iss"] = "https://evil.example" }), lti.KindAudience},
		{"unknown deployment", tamper(func(c map[string]any) { c[lti.ClaimDeploymentID] = "dep-x" }), lti.KindDeployment},
		{"expired", tamper(func(c map[string]any) {
			c["exp"] = time.Now().Add(-2 * time.Minute).Unix()
			c["iat"] = time.Now().Add(-10 * time.Minute).Unix()
		}), lti.KindExpired},
		{"issued in the future", tamper(func(c map[string]any) { c["iat"] = time.Now().Add(10 * time.Minute).Unix() }), lti.KindExpired},
		{"other nonce", tamper(func(c map[string]any) { c["nonce"] = "not-the-login-nonce" }), lti.KindNonce},
		{"no sub", tamper(func(c map[string]any) { delete(c, "sub") }), lti.KindClaims},
		{"version 1.1", tamper(func(c map[string]any) { c[lti.ClaimVersion] = "1.1" }), lti.KindClaims},
		{"no roles", tamper(func(c map[string]any) { delete(c, lti.ClaimRoles) }), lti.KindClaims},
	}
	msg := tr(page.DefaultLang) // the launch carries no language: the lab's default
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p.Forge(tc.forge)
			l := e.launch(e.browser(), ltitest.Message{Sub: "victim"})
			if l.Resp.StatusCode != http.StatusForbidden || !strings.Contains(l.Body, msg("lti.refused."+string(tc.kind))) {
				t.Errorf("status %d, want 403 with the %s message; body:\n%s", l.Resp.StatusCode, tc.kind, l.Body)
			}
		})
	}
	if n := e.count(`SELECT COUNT(*) FROM learners`); n != 0 {
		t.Errorf("%d learners made by refused launches", n)
	}

	// Replays: the same form posted again (state used), and a captured
	// id_token posted with the state of a fresh login (nonce not its own).
	c := e.browser()
	first := e.launch(c, ltitest.Message{Sub: "u-1"})
	if first.Resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("honest launch: %d\n%s", first.Resp.StatusCode, first.Body)
	}
	if err := first.Post(c); err != nil {
		t.Fatal(err)
	}
	if first.Resp.StatusCode != http.StatusForbidden || !strings.Contains(first.Body, msg("lti.refused.state-used")) {
		t.Errorf("replayed form: %d, want 403 with the state-used message\n%s", first.Resp.StatusCode, first.Body)
	}
	captured := first.Form.Get("id_token")
	// A fresh login whose launch carries the captured token instead.
	fresh := e.loginOnly(c, ltitest.Message{Sub: "u-1"})
	fresh.Form.Set("id_token", captured)
	if err := fresh.Post(c); err != nil {
		t.Fatal(err)
	}
	if fresh.Resp.StatusCode != http.StatusForbidden || !strings.Contains(fresh.Body, msg("lti.refused.nonce")) {
		t.Errorf("captured token with a fresh state: %d, want 403 with the nonce message\n%s", fresh.Resp.StatusCode, fresh.Body)
	}
	// An expired state.
	old := e.loginOnly(c, ltitest.Message{Sub: "u-1"})
	if _, err := rawDB(t, e.DB).Exec(`UPDATE lti_login_states SET expires_at = '2000-01-01T00:00:00.000000000Z'`); err != nil {
		t.Fatal(err)
	}
	if err := old.Post(c); err != nil {
		t.Fatal(err)
	}
	if old.Resp.StatusCode != http.StatusForbidden || !strings.Contains(old.Body, msg("lti.refused.state-expired")) {
		t.Errorf("expired state: %d, want 403 with the state-expired message", old.Resp.StatusCode)
	}
	// The refusal page in Chinese is Chinese.
	p.Forge(ltitest.Forge{SignWith: forger})
	zh := e.loginOnly(c, ltitest.Message{Sub: "u-1"})
	req, _ := http.NewRequest("POST", zh.Action, strings.NewReader(zh.Form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept-Language", "zh-CN,zh;q=0.9")
	res, err := c.Do(req)
	text := pageOf(t, res, err).Find("main").Text()
	if !strings.Contains(text, tr("zh")("lti.refused.signature")) {
		t.Errorf("zh refusal page lacks the zh message: %s", text)
	}
	if leaks := append(zhcheck.Prose(text), zhcheck.Leaks(text)...); len(leaks) > 0 {
		t.Errorf("English or Western punctuation on the zh refusal page: %q", leaks)
	}
	// Unknown platform at login.
	res, err = c.Get(e.HTTP.URL + "/lti/login?" + url.Values{"iss": {"https://nobody.example"}, "login_hint": {"x"},
		"target_link_uri": {e.HTTP.URL}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(b), msg("lti.refused.platform")) {
		t.Errorf("login from an unregistered issuer: %d", res.StatusCode)
	}
}

// loginOnly runs the login and the platform's auth step and returns the
// form without posting it.
func (e *ltiEnv) loginOnly(c *http.Client, m ltitest.Message) *ltitest.Launched {
	e.t.Helper()
	hint := e.Platform.Prepare(m)
	res, err := c.Get(e.HTTP.URL + "/lti/login?" + e.Platform.LoginQuery(hint, e.HTTP.URL+"/lessons/01-quiz").Encode())
	if err != nil || res.StatusCode != http.StatusFound {
		e.t.Fatalf("login: %v %v", res.Status, err)
	}
	res.Body.Close()
	auth, err := c.Get(res.Header.Get("Location"))
	if err != nil {
		e.t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(auth.Body)
	auth.Body.Close()
	if err != nil {
		e.t.Fatal(err)
	}
	kept := &ltitest.Launched{Form: url.Values{}}
	kept.Action, _ = doc.Find("form").Attr("action")
	doc.Find("input[type=hidden]").Each(func(_ int, s *goquery.Selection) {
		n, _ := s.Attr("name")
		v, _ := s.Attr("value")
		kept.Form.Set(n, v)
	})
	return kept
}

func TestLTIKeyRotation(t *testing.T) {
	e := newLTIEnv(t)
	if l := e.launch(e.browser(), ltitest.Message{Sub: "u-1"}); l.Resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("first launch: %d", l.Resp.StatusCode)
	}
	e.Platform.RotateKey() // a kid the tool's cached JWKS lacks: fetched again
	if l := e.launch(e.browser(), ltitest.Message{Sub: "u-1"}); l.Resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("launch signed with the rotated key: %d\n%s", l.Resp.StatusCode, l.Body)
	}
}

// waitScores waits for n scores at the platform (the deliverer works in
// the background); it fails after 20 s.
func (e *ltiEnv) waitScores(n int) []ltitest.Score {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := e.Platform.Scores()
		if len(s) >= n {
			return s
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d scores reached the platform, want %d; log:\n%s", len(s), n, e.Logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *ltiEnv) answer(c *http.Client, id, body string) {
	e.t.Helper()
	postAnswer(e.t, e.HTTP.URL, c, id, body)
}

// pageOf parses a response (and the error of its request) as HTML.
func pageOf(t *testing.T, res *http.Response, err error) *goquery.Document {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	doc, err := goquery.NewDocumentFromReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestLTIScoreReachesThePlatform(t *testing.T) {
	e := newLTIEnv(t)
	item := e.Platform.NewLineItem("Quiz")
	c := e.browser()
	e.launch(c, ltitest.Message{Sub: "u-42", LineItem: item, ContextID: "course-1", Custom: map[string]string{"lesson": "01-quiz"}})
	if n := len(e.Platform.Scores()); n != 0 {
		t.Fatalf("%d scores before any answer", n)
	}
	e.answer(c, "demo/pick-one", `{"answer":"b"}`) // wrong
	e.answer(c, "demo/pick-one", `{"answer":"a"}`) // right
	var got ltitest.Score
	for got.Score.ScoreGiven != 1 {
		s := e.waitScores(1)
		got = s[len(s)-1]
		if got.Score.ScoreGiven != 1 {
			e.waitScores(len(s) + 1)
		}
	}
	if got.LineItem != item || got.ContentType != lti.ScoreMediaType || got.Score.UserID != "u-42" ||
		got.Score.ScoreMaximum != 4 || got.Score.GradingProgress != "FullyGraded" || got.Score.ActivityProgress != "InProgress" {
		t.Errorf("score at the platform: %+v", got)
	}
	// A learner without a graded link sends nothing.
	other := e.browser()
	e.launch(other, ltitest.Message{Sub: "u-43"})
	e.answer(other, "demo/pick-one", `{"answer":"a"}`)
	if n := e.count(`SELECT COUNT(*) FROM lti_outbox`); n != 0 {
		t.Errorf("%d scores queued for a learner without a graded link", n)
	}
}

// TestLTIScoreSurvivesRestart: the platform refuses tokens, the score
// waits in the outbox with its error (shown on the instructor's page);
// after a restart with the platform back it arrives.
func TestLTIScoreSurvivesRestart(t *testing.T) {
	old := store.PasswordCost
	store.PasswordCost = bcrypt.MinCost
	t.Cleanup(func() { store.PasswordCost = old })
	e := newLTIEnv(t)
	item := e.Platform.NewLineItem("Quiz")
	c := e.browser()
	e.launch(c, ltitest.Message{Sub: "u-7", Name: "Lin", LineItem: item, Custom: map[string]string{"lesson": "01-quiz"}})
	e.Platform.FailTokens(http.StatusServiceUnavailable)
	e.answer(c, "demo/pick-one", `{"answer":"a"}`)
	deadline := time.Now().Add(20 * time.Second)
	for e.count(`SELECT COUNT(*) FROM lti_outbox WHERE attempts > 0 AND last_error != ''`) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no failed try recorded; log:\n%s", e.Logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The instructor sees it.
	if _, err := e.DB.CreateInstructor(context.Background(), "teacher", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	in := e.browser()
	res, err := in.PostForm(e.HTTP.URL+"/instructor/login", url.Values{"username": {"teacher"}, "password": {"correct horse battery"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	res, err = in.Get(e.HTTP.URL + "/instructor/lti?lang=en")
	doc := pageOf(t, res, err)
	row := doc.Find("[data-testid=lti-outbox-row]")
	if row.Length() != 1 || !strings.Contains(row.Text(), "Lin") || !strings.Contains(row.Text(), "503") {
		t.Errorf("outbox on the LTI page: %q", row.Text())
	}
	if urls := doc.Find("[data-testid=lti-tool-urls]").Text(); !strings.Contains(urls, e.HTTP.URL+"/lti/login") ||
		!strings.Contains(urls, e.HTTP.URL+"/lti/jwks") {
		t.Errorf("tool URLs on the LTI page: %q", urls)
	}

	e.stopServing()
	if n := len(e.Platform.Scores()); n != 0 {
		t.Fatalf("%d scores arrived while the token endpoint failed", n)
	}
	e.Platform.FailTokens(0)
	e.start() // a new server, deliverer and tool on the same files
	s := e.waitScores(1)
	if s[0].Score.UserID != "u-7" || s[0].Score.ScoreGiven != 1 {
		t.Errorf("delivered after restart: %+v", s[0])
	}
	deadline = time.Now().Add(20 * time.Second)
	for e.count(`SELECT COUNT(*) FROM lti_outbox`) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the delivered score stays in the outbox")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLTIDeepLinking(t *testing.T) {
	e := newLTIEnv(t)
	c := e.browser()
	l := e.launch(c, ltitest.Message{Type: lti.MsgDeepLinking, Sub: "t-1", Roles: []string{lti.RoleInstructor}, ContextID: "course-7"})
	loc := l.Resp.Header.Get("Location")
	if l.Resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/lti/deep-link/") {
		t.Fatalf("deep-linking launch: %d → %q\n%s", l.Resp.StatusCode, loc, l.Body)
	}
	res, err := c.Get(e.HTTP.URL + loc + "?lang=en")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("picker: %v %v", res.Status, err)
	}
	doc, _ := goquery.NewDocumentFromReader(res.Body)
	res.Body.Close()
	if doc.Find("[data-testid=lti-pick-lesson]").Length() != 1 || doc.Find("[data-testid=lti-pick-question]").Length() != 4 {
		t.Fatalf("picker lists %d lessons and %d questions", doc.Find("[data-testid=lti-pick-lesson]").Length(),
			doc.Find("[data-testid=lti-pick-question]").Length())
	}
	res, err = c.PostForm(e.HTTP.URL+loc, url.Values{"item": {"lesson:01-quiz"}, "graded": {"1"}})
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("choice: %v %v", res.Status, err)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' "+e.Platform.Issuer()) {
		t.Errorf("the response page's CSP does not let its form reach the LMS: %s", csp)
	}
	doc, _ = goquery.NewDocumentFromReader(res.Body)
	res.Body.Close()
	form := doc.Find("form[data-autosubmit]")
	action, _ := form.Attr("action")
	jwt, _ := form.Find("input[name=JWT]").Attr("value")
	if action != e.Platform.Issuer()+"/deeplink/return" || jwt == "" {
		t.Fatalf("response form: action %q, JWT %d bytes", action, len(jwt))
	}
	res, err = c.PostForm(action, url.Values{"JWT": {jwt}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the platform refused the deep-linking response: %s", b)
	}
	dl := e.Platform.DeepLinks()
	if len(dl) != 1 || len(dl[0].Items) != 1 {
		t.Fatalf("placed: %+v", dl)
	}
	it := dl[0].Items[0]
	custom, _ := it["custom"].(map[string]any)
	line, _ := it["lineItem"].(map[string]any)
	if it["type"] != "ltiResourceLink" || it["url"] != e.HTTP.URL+"/lessons/01-quiz" || custom["lesson"] != "01-quiz" ||
		line["scoreMaximum"] != float64(4) {
		t.Errorf("content item: %v", it)
	}
	if !strings.HasPrefix(dl[0].Claims[lti.ClaimDLData].(string), "opaque-") {
		t.Errorf("the request's data was not echoed: %v", dl[0].Claims[lti.ClaimDLData])
	}
	// The picker is used once.
	res, _ = c.PostForm(e.HTTP.URL+loc, url.Values{"item": {"lesson:01-quiz"}})
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a used picker answered %d", res.StatusCode)
	}
	// A learner cannot place content.
	l = e.launch(e.browser(), ltitest.Message{Type: lti.MsgDeepLinking, Sub: "u-1"})
	if l.Resp.StatusCode != http.StatusForbidden {
		t.Errorf("a learner's deep-linking request: %d", l.Resp.StatusCode)
	}
}

// TestLTIFraming: with a platform registered, its origin may frame the lab.
func TestLTIFraming(t *testing.T) {
	e := newLTIEnv(t)
	res, err := e.browser().Get(e.HTTP.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'self' "+e.Platform.Issuer()) {
		t.Errorf("CSP: %s", csp)
	}
	if xfo := res.Header.Get("X-Frame-Options"); xfo != "" {
		t.Errorf("X-Frame-Options %q would forbid the LMS's frame", xfo)
	}
}

// TestLTIPagesInChinese: the deep-linking picker and the admin page in
// Chinese carry no English prose or Western punctuation (question ids,
// URLs and the LMS's own error text aside).
func TestLTIPagesInChinese(t *testing.T) {
	old := store.PasswordCost
	store.PasswordCost = bcrypt.MinCost
	t.Cleanup(func() { store.PasswordCost = old })
	e := newLTIEnv(t)
	c := e.browser()
	l := e.launch(c, ltitest.Message{Type: lti.MsgDeepLinking, Sub: "t-1", Roles: []string{lti.RoleInstructor}})
	res, err := c.Get(e.HTTP.URL + l.Resp.Header.Get("Location") + "?lang=zh")
	doc := pageOf(t, res, err)
	// Lesson titles are the course's (the fixture's are "Quiz zh"), and a
	// question shows "id — prompt": ids are identifiers.
	doc.Find("[data-testid=lti-pick-question], [data-testid=lti-pick-lesson]").Parent().Remove()
	pick := doc.Find("main").Text()
	if _, err := e.DB.CreateInstructor(context.Background(), "teacher", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	in := e.browser()
	res, err = in.PostForm(e.HTTP.URL+"/instructor/login", url.Values{"username": {"teacher"}, "password": {"correct horse battery"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	res, err = in.Get(e.HTTP.URL + "/instructor/lti?lang=zh")
	doc = pageOf(t, res, err)
	doc.Find("code, [lang=en]").Remove()
	admin := doc.Find("main").Text()
	for name, text := range map[string]string{"picker": pick, "admin": admin} {
		if leaks := append(zhcheck.Prose(text), zhcheck.Leaks(text)...); len(leaks) > 0 {
			t.Errorf("%s page in Chinese: %q", name, leaks)
		}
	}
}

// TestLTILoginByPost: a login initiation posted cross-site (as Canvas
// does) passes CrossOriginProtection and answers with the authentication
// request the spec asks for.
func TestLTILoginByPost(t *testing.T) {
	e := newLTIEnv(t)
	hint := e.Platform.Prepare(ltitest.Message{Sub: "u-1"})
	req, _ := http.NewRequest("POST", e.HTTP.URL+"/lti/login",
		strings.NewReader(e.Platform.LoginQuery(hint, e.HTTP.URL+"/").Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Origin", e.Platform.URL)
	res, err := e.browser().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	u, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || err != nil || u.Scheme+"://"+u.Host+u.Path != e.Platform.URL+"/auth" {
		t.Fatalf("POST login: %d → %q", res.StatusCode, res.Header.Get("Location"))
	}
	q := u.Query()
	for k, want := range map[string]string{"scope": "openid", "response_type": "id_token", "response_mode": "form_post",
		"prompt": "none", "client_id": e.Platform.ClientID, "redirect_uri": e.HTTP.URL + "/lti/launch",
		"login_hint": hint, "lti_message_hint": "mh-" + hint[:6]} {
		if q.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, q.Get(k), want)
		}
	}
	if q.Get("state") == "" || q.Get("nonce") == "" || q.Get("state") == q.Get("nonce") {
		t.Errorf("state %q, nonce %q: want two different random values", q.Get("state"), q.Get("nonce"))
	}
	if n := e.count(`SELECT COUNT(*) FROM lti_login_states WHERE state = ? AND nonce = ?`, q.Get("state"), q.Get("nonce")); n != 1 {
		t.Errorf("the state is stored %d times with its nonce, want once", n)
	}
}
