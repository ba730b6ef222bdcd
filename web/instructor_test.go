package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/crypto/bcrypt"

	"github.com/rdmalab/rdmalab/internal/textclip"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/instructor"
	"github.com/rdmalab/rdmalab/web/page"
)

// The instructor tests run against a course loaded by the real loader from
// a temp dir (so live reload can edit it), a real SQLite file and httptest.

const alphaQuiz = `questions:
  - id: alpha/single
    type: single
    prompt: {zh: 选一个, en: Pick one}
    options:
      - id: a
        correct: true
        text: {zh: 甲, en: Option A}
      - id: b
        text: {zh: 乙, en: Option B}
      - id: c
        text: {zh: 丙, en: Option C}
    explanation: {zh: 因为甲。, en: Because A.}
  - id: alpha/multi
    type: multi
    prompt: {zh: 选两个, en: Pick two}
    options:
      - id: x
        correct: true
        text: {zh: 叉, en: X}
      - id: "y"
        correct: true
        text: {zh: 歪, en: "Y"}
      - id: z
        text: {zh: 贼, en: Z}
    explanation: {zh: 叉和歪。, en: X and Y.}
  - id: alpha/num
    type: numeric
    prompt: {zh: 100 Gbps 是多少 GB/s？, en: How many GB/s is 100 Gbps?}
    value: 12.5
    tolerance: 0.1
    unit: GB/s
    explanation: {zh: 除以 8。, en: Divide by 8.}
  - id: alpha/order
    type: order
    prompt: {zh: 排序, en: Put in order}
    options:
      - id: s1
        text: {zh: 一, en: One}
      - id: s2
        text: {zh: 二, en: Two}
    explanation: {zh: 先一后二。, en: One then two.}
`

func alphaPage(lang, title, body string) string {
	return "---\ntitle: " + title + "\nsummary: Test lesson.\norder: 1\n---\n\n" + body + "\n\n::checkpoint\n"
}

// writeCourse writes a one-lesson course into dir.
func writeCourse(t *testing.T, dir, body string) {
	t.Helper()
	files := map[string]string{
		"01-alpha/index.en.md": alphaPage("en", "Alpha", body),
		"01-alpha/index.zh.md": alphaPage("zh", "阿尔法", body),
		"01-alpha/quiz.yaml":   alphaQuiz,
	}
	for name, content := range files {
		writeTestFile(t, filepath.Join(dir, name), content)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

type instrEnv struct {
	t    *testing.T
	Dir  string
	DB   *store.DB
	Live *lessons.Live
	HTTP *httptest.Server
	Logs *bytes.Buffer
	// Shift moves the server's graded-mode clock (Config.Now) ahead of the
	// real one, so a test goes past a close date without sleeping.
	Shift atomic.Int64
	Srv   *Server
}

// newInstrEnv serves a watched course from a temp dir: writeCourse's
// lesson, and the builtin course's lessons named in builtin.
func newInstrEnv(t *testing.T, builtin ...string) *instrEnv {
	t.Helper()
	old := store.PasswordCost
	store.PasswordCost = bcrypt.MinCost // production uses bcrypt.DefaultCost
	t.Cleanup(func() { store.PasswordCost = old })

	dir := t.TempDir()
	writeCourse(t, dir, "First version.")
	for _, slug := range builtin {
		sub, err := fs.Sub(lessons.Builtin, slug)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(filepath.Join(dir, slug), sub); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	live, w, err := lessons.Watch(ctx, dir, lessons.Options{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "lab.db"))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	e := &instrEnv{t: t, Dir: dir, DB: db, Live: live, Logs: new(bytes.Buffer)}
	srv, err := New(Config{Course: live.Course, Live: live, Store: db,
		Now:    func() time.Time { return time.Now().Add(time.Duration(e.Shift.Load())) },
		Logger: slog.New(slog.NewTextHandler(e.Logs, nil)),
		// Tests speak for clients at other addresses through the proxy header
		// (loopback is the trusted proxy); without it a request is the peer's.
		ClientAddr: page.ClientAddrConfig{Header: "X-Real-IP"}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	e.Srv = srv
	e.HTTP = httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		e.HTTP.CloseClientConnections()
		e.HTTP.Close()
		cancel()
		<-w.Done()
		db.Close()
	})
	return e
}

// browser is a client with its own cookie jar that does not follow redirects.
func (e *instrEnv) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (e *instrEnv) do(c *http.Client, method, path string, form url.Values, header ...string) *http.Response {
	e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, e.HTTP.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// page reads a response as HTML, checking the status.
func (e *instrEnv) page(res *http.Response, want int) *goquery.Document {
	e.t.Helper()
	defer res.Body.Close()
	if res.StatusCode != want {
		b, _ := io.ReadAll(res.Body)
		e.t.Fatalf("%s %s: status %d, want %d\n%s", res.Request.Method, res.Request.URL.Path, res.StatusCode, want, b)
	}
	doc, err := goquery.NewDocumentFromReader(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return doc
}

func (e *instrEnv) login(c *http.Client, user, pw string) *http.Response {
	e.t.Helper()
	return e.do(c, "POST", "/instructor/login", url.Values{"username": {user}, "password": {pw}})
}

func (e *instrEnv) instructor(user, pw string) *http.Client {
	e.t.Helper()
	if _, err := e.DB.CreateInstructor(context.Background(), user, pw); err != nil {
		e.t.Fatal(err)
	}
	c := e.browser()
	res := e.login(c, user, pw)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/instructor" {
		e.t.Fatalf("login: %d → %q", res.StatusCode, res.Header.Get("Location"))
	}
	return c
}

func cookieNamed(res *http.Response, name string) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func TestInstructorLoginLogout(t *testing.T) {
	e := newInstrEnv(t)
	if _, err := e.DB.CreateInstructor(context.Background(), "ada", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	c := e.browser()

	// A fresh browser is sent to the login page, keeping where it wanted to go.
	res := e.do(c, "GET", "/instructor/export/runs.csv", nil)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/instructor/login?next=%2Finstructor%2Fexport%2Fruns.csv" {
		t.Fatalf("no session: %d → %q", res.StatusCode, res.Header.Get("Location"))
	}
	doc := e.page(e.do(c, "GET", "/instructor/login", nil), http.StatusOK)
	if doc.Find(`form[action="/instructor/login"] input[name=password][type=password]`).Length() != 1 {
		t.Fatal("no login form")
	}

	// Wrong password and unknown user: same status, same message.
	bad := e.page(e.login(c, "ada", "wrong password!"), http.StatusUnauthorized)
	unknown := e.page(e.login(c, "nobody", "wrong password!"), http.StatusUnauthorized)
	m1 := bad.Find(`[data-testid=login-error]`).Text()
	m2 := unknown.Find(`[data-testid=login-error]`).Text()
	if m1 == "" || m1 != m2 {
		t.Fatalf("messages differ: %q vs %q", m1, m2)
	}
	if v, _ := bad.Find(`input[name=password]`).Attr("value"); v != "" {
		t.Error("the password is echoed back")
	}

	// Right password: a session cookie (HttpOnly, SameSite, not Secure on plain HTTP).
	res = e.do(c, "POST", "/instructor/login", url.Values{"username": {"ADA"}, "password": {"correct horse battery"},
		"next": {"/instructor/export/runs.csv"}})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/instructor/export/runs.csv" {
		t.Fatalf("login: %d → %q", res.StatusCode, res.Header.Get("Location"))
	}
	ck := cookieNamed(res, instructor.SessionCookie)
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Secure || ck.Path != "/" || ck.MaxAge <= 0 {
		t.Fatalf("session cookie = %+v", ck)
	}
	token := ck.Value
	doc = e.page(e.do(c, "GET", "/instructor", nil), http.StatusOK)
	if doc.Find(`[data-testid=dashboard]`).Length() != 1 || doc.Find(`[data-testid=instructor]`).Text() != "ada" {
		t.Fatal("dashboard not shown after login")
	}

	// Logout deletes the server-side session: the old token is dead.
	res = e.do(c, "POST", "/instructor/logout", url.Values{})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/instructor/login?bye=1" {
		t.Fatalf("logout: %d → %q", res.StatusCode, res.Header.Get("Location"))
	}
	if ck := cookieNamed(res, instructor.SessionCookie); ck == nil || ck.MaxAge >= 0 {
		t.Fatalf("logout cookie = %+v", ck)
	}
	replay := e.browser()
	res = e.do(replay, "GET", "/instructor", nil, "Cookie", instructor.SessionCookie+"="+token)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/instructor/login?expired=1") {
		t.Fatalf("replayed token: %d → %q", res.StatusCode, res.Header.Get("Location"))
	}
}

func TestInstructorSessionExpiredOrForged(t *testing.T) {
	e := newInstrEnv(t)
	c := e.instructor("ada", "correct horse battery")
	if _, err := rawDB(t, e.DB).Exec(`UPDATE instructor_sessions SET expires_at = '2000-01-01T00:00:00.000000000Z'`); err != nil {
		t.Fatal(err)
	}
	res := e.do(c, "GET", "/instructor", nil)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/instructor/login?expired=1" {
		t.Fatalf("expired: %d → %q", res.StatusCode, res.Header.Get("Location"))
	}
	if ck := cookieNamed(res, instructor.SessionCookie); ck == nil || ck.MaxAge >= 0 {
		t.Fatalf("expired cookie not cleared: %+v", ck)
	}
	doc := e.page(e.do(e.browser(), "GET", "/instructor/login?expired=1", nil), http.StatusOK)
	if !strings.Contains(doc.Find(`[data-testid=notice]`).Text(), "过期") {
		t.Errorf("notice = %q", doc.Find(`[data-testid=notice]`).Text())
	}

	for _, forged := range []string{"forged", strings.Repeat("A", 43), strings.Repeat("x", 300)} {
		res := e.do(e.browser(), "GET", "/instructor/export/attempts.csv", nil, "Cookie", instructor.SessionCookie+"="+forged)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/instructor/login?") {
			t.Fatalf("forged %q: %d → %q", forged[:6], res.StatusCode, res.Header.Get("Location"))
		}
		if bytes.Contains(body, []byte("learner,")) {
			t.Fatal("forged session got data")
		}
	}
}

func TestLearnerGets403(t *testing.T) {
	e := newInstrEnv(t)
	learner := e.browser()
	e.page(e.do(learner, "GET", "/", nil), http.StatusOK) // now carries lab_learner
	if err := e.DB.SetDisplayName(context.Background(), store.NewLearnerID(), "Secret Name"); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/instructor", "/instructor/export/progress.csv", "/instructor/export/attempts.csv",
		"/instructor/export/runs.csv", "/instructor/anything"} {
		res := e.do(learner, "GET", path, nil)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("learner GET %s: status %d, want 403", path, res.StatusCode)
		}
		if bytes.Contains(body, []byte("Secret Name")) || bytes.Contains(body, []byte("dashboard")) {
			t.Errorf("learner GET %s: class data leaked", path)
		}
		// The 403 page offers the login form (an instructor may browse lessons first).
		if !bytes.Contains(body, []byte(`action="/instructor/login"`)) {
			t.Errorf("learner GET %s: no login form on the 403 page", path)
		}
	}
}

func TestCrossOriginPostRejected(t *testing.T) {
	e := newInstrEnv(t)
	if _, err := e.DB.CreateInstructor(context.Background(), "ada", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	learner := e.browser()
	e.page(e.do(learner, "GET", "/", nil), http.StatusOK)
	form := url.Values{"username": {"ada"}, "password": {"correct horse battery"}}
	cases := []struct {
		path   string
		form   url.Values
		header []string
	}{
		{"/instructor/login", form, []string{"Sec-Fetch-Site", "cross-site"}},
		{"/instructor/login", form, []string{"Origin", "http://evil.example"}},
		{"/instructor/logout", url.Values{}, []string{"Sec-Fetch-Site", "cross-site"}},
		{"/me", url.Values{"name": {"pwned"}}, []string{"Sec-Fetch-Site", "cross-site"}},
		{"/lessons/01-alpha/complete", url.Values{}, []string{"Sec-Fetch-Site", "same-site", "Origin", "http://sub.evil.example"}},
	}
	for _, tc := range cases {
		res := e.do(learner, "POST", tc.path, tc.form, tc.header...)
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("cross-origin POST %s %v: status %d, want 403", tc.path, tc.header, res.StatusCode)
		}
		if ck := cookieNamed(res, instructor.SessionCookie); ck != nil {
			t.Errorf("cross-origin login set a session cookie")
		}
	}
	// Nothing was acted on.
	if name, _ := e.DB.DisplayName(context.Background(), learnerOf(t, learner, e.HTTP.URL)); name != "" {
		t.Errorf("cross-origin POST /me saved %q", name)
	}
	// The API answers in JSON.
	res := e.do(learner, "POST", "/api/quiz/alpha/single/attempts", nil, "Sec-Fetch-Site", "cross-site")
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || !bytes.Contains(body, []byte(`"forbidden"`)) {
		t.Errorf("cross-origin API POST: %d %s", res.StatusCode, body)
	}
	// Same-origin browser posts pass.
	res = e.do(learner, "POST", "/me", url.Values{"name": {"Ann"}}, "Sec-Fetch-Site", "same-origin", "Origin", e.HTTP.URL)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("same-origin POST /me: %d", res.StatusCode)
	}
}

// learnerOf is the learner id in c's cookie jar.
func learnerOf(t *testing.T, c *http.Client, base string) string {
	u, _ := url.Parse(base)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == learnerCookie {
			return ck.Value
		}
	}
	t.Fatal("no learner cookie")
	return ""
}

func TestSecureCookieBehindTLS(t *testing.T) {
	e := newInstrEnv(t)
	if _, err := e.DB.CreateInstructor(context.Background(), "ada", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	res := e.do(e.browser(), "POST", "/instructor/login", url.Values{"username": {"ada"}, "password": {"correct horse battery"}},
		"X-Forwarded-Proto", "https")
	res.Body.Close()
	if ck := cookieNamed(res, instructor.SessionCookie); ck == nil || !ck.Secure {
		t.Fatalf("cookie behind TLS proxy = %+v", ck)
	}
}

func TestInstructorSetupLink(t *testing.T) {
	e := newInstrEnv(t)
	ctx := context.Background()
	path, err := instructor.SetupInstructors(ctx, e.DB, "")
	if err != nil || !strings.HasPrefix(path, "/instructor/setup?token=") {
		t.Fatalf("setup path %q, %v", path, err)
	}
	c := e.browser()
	// The login page says how to get in while no account exists.
	doc := e.page(e.do(c, "GET", "/instructor/login", nil), http.StatusOK)
	if doc.Find(`[data-testid=setup-hint]`).Length() != 1 {
		t.Error("no setup hint on the login page")
	}
	doc = e.page(e.do(c, "GET", path, nil), http.StatusOK)
	token, _ := doc.Find(`input[name=token]`).Attr("value")
	form := url.Values{"token": {token}, "username": {"ada"}, "password": {"short"}}
	doc = e.page(e.do(c, "POST", "/instructor/setup", form), http.StatusUnprocessableEntity)
	if doc.Find(`[data-testid=setup-error]`).Text() == "" {
		t.Error("no error for a short password")
	}
	form.Set("password", "correct horse battery")
	res := e.do(c, "POST", "/instructor/setup", form)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/instructor" {
		t.Fatalf("setup: %d → %q", res.StatusCode, res.Header.Get("Location"))
	}
	e.page(e.do(c, "GET", "/instructor", nil), http.StatusOK)
	// The link is used up.
	doc = e.page(e.do(e.browser(), "GET", path, nil), http.StatusNotFound)
	if doc.Find(`[data-testid=setup-invalid]`).Length() != 1 {
		t.Error("used link not reported as invalid")
	}
	// Once an instructor exists, no new link is made.
	if path, err := instructor.SetupInstructors(ctx, e.DB, ""); err != nil || path != "" {
		t.Fatalf("second start: %q, %v", path, err)
	}
	// LAB_ADMIN_PASSWORD creates (or resets) "admin".
	if path, err := instructor.SetupInstructors(ctx, e.DB, "admin password 1"); err != nil || path != "" {
		t.Fatalf("admin password: %q, %v", path, err)
	}
	res = e.login(e.browser(), "admin", "admin password 1")
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("admin login: %d", res.StatusCode)
	}
	if _, err := instructor.SetupInstructors(ctx, e.DB, "short"); err == nil {
		t.Fatal("a too short LAB_ADMIN_PASSWORD was accepted")
	}
}

// Fixed learners for the class data set.
var (
	instrAnn = strings.Repeat("a", 32)
	instrBob = strings.Repeat("b", 32)
	instrCat = strings.Repeat("c", 32)
)

// seedClass writes a fixed data set whose statistics are computed by hand
// in the tests below.
func seedClass(t *testing.T, db *store.DB) {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.SetDisplayName(ctx, instrAnn, "=HYPERLINK(\"x\")"))
	must(db.SetDisplayName(ctx, instrBob, "李雷"))
	must(db.MarkOpened(ctx, instrAnn, "01-alpha"))
	must(db.MarkCompleted(ctx, instrAnn, "01-alpha"))
	must(db.MarkOpened(ctx, instrBob, "01-alpha"))
	must(db.MarkOpened(ctx, instrCat, "01-alpha"))
	add := func(learner, q, answer string, correct bool) {
		t.Helper()
		_, err := db.AddAttempt(ctx, learner, q, json.RawMessage(answer), correct, false)
		must(err)
	}
	// alpha/single: instrAnn b✗ then a✓; instrBob a✓; instrCat "gone"✗ (an option the author
	// removed since) then b✗. Facility 1/3; a chosen 2 (first 1), b 2 (first 1),
	// c 0, gone 1 (first 1).
	add(instrAnn, "alpha/single", `"b"`, false)
	add(instrAnn, "alpha/single", `"a"`, true)
	add(instrBob, "alpha/single", `"a"`, true)
	add(instrCat, "alpha/single", `"gone"`, false)
	add(instrCat, "alpha/single", `"b"`, false)
	// alpha/multi: instrAnn [x y]✓, instrBob [x z]✗. Facility 1/2; x 2, y 1, z 1; z is the wrong pick.
	add(instrAnn, "alpha/multi", `["x","y"]`, true)
	add(instrBob, "alpha/multi", `["x","z"]`, false)
	// alpha/num: instrAnn 12.5✓, instrBob 12✗, instrCat 12.5✓. Facility 2/3.
	add(instrAnn, "alpha/num", `12.5`, true)
	add(instrBob, "alpha/num", `12`, false)
	add(instrCat, "alpha/num", `12.5`, true)

	run := func(id, learner, exp string, final sandbox.Status, msg string) {
		t.Helper()
		must(db.CreateRun(ctx, sandbox.RunInfo{ID: id, Learner: learner, Experiment: exp, Params: sandbox.Params{"size": int64(4096)}, Status: sandbox.StatusQueued}))
		must(db.AppendRunEvent(ctx, id, sandbox.Event{Seq: 1, Time: time.Now(), Type: sandbox.EvStatus, Status: sandbox.StatusRunning, Backend: "host"}))
		if final == sandbox.StatusDone {
			ok := true
			must(db.AppendRunEvent(ctx, id, sandbox.Event{Seq: 2, Time: time.Now(), Type: sandbox.EvResult, OK: &ok, Message: "ENOMEM as expected"}))
		}
		must(db.AppendRunEvent(ctx, id, sandbox.Event{Seq: 3, Time: time.Now(), Type: sandbox.EvStatus, Status: final, Message: msg}))
	}
	run("run-1", instrAnn, "memlock", sandbox.StatusDone, "")
	run("run-2", instrBob, "memlock", sandbox.StatusFailed, "agent crashed")
	run("run-3", instrBob, "tcp-cost", sandbox.StatusTimedOut, "time limit 30s")
}

func TestDashboardStatistics(t *testing.T) {
	e := newInstrEnv(t)
	seedClass(t, e.DB)
	c := e.instructor("ada", "correct horse battery")
	doc := e.page(e.do(c, "GET", "/instructor?lang=en", nil), http.StatusOK)

	if got := doc.Find(`[data-testid=learner]`).Length(); got != 3 {
		t.Errorf("%d learners listed, want 3", got)
	}
	if got := doc.Find(`[data-testid=active-count] strong`).Text(); got != "3" {
		t.Errorf("active = %q, want 3", got)
	}
	if !strings.Contains(doc.Find(`[data-testid=learners]`).Text(), "李雷") {
		t.Error("display name missing")
	}
	lesson := doc.Find(`[data-testid=dash-lesson][data-slug="01-alpha"]`)
	if got := lesson.Find(`[data-testid=opened]`).Text(); !strings.HasSuffix(got, "3/3") {
		t.Errorf("opened = %q", got)
	}
	if got := lesson.Find(`[data-testid=completed]`).Text(); !strings.HasSuffix(got, "1/3") {
		t.Errorf("completed = %q", got)
	}
	q := func(id string) *goquery.Selection { return lesson.Find(`[data-testid=question][data-id="` + id + `"]`) }
	chosen := func(sel *goquery.Selection) map[string]string {
		out := map[string]string{}
		sel.Find(`[data-testid=option]`).Each(func(_ int, o *goquery.Selection) {
			id, _ := o.Attr("data-id")
			n, _ := o.Attr("data-chosen")
			out[id] = n
		})
		return out
	}
	facility := func(id string) string {
		return strings.TrimSpace(strings.TrimPrefix(q(id).Find(`[data-testid=facility]`).Text(), "Facility"))
	}
	if f := facility("alpha/single"); f != "33%" {
		t.Errorf("single facility = %q, want 33%%", f)
	}
	if got, want := chosen(q("alpha/single")), map[string]string{"a": "2", "b": "2", "c": "0", "gone": "1"}; !maps.Equal(got, want) {
		t.Errorf("single options = %v, want %v", got, want)
	}
	if q("alpha/single").Find(`tr.removed[data-id=gone]`).Length() != 1 {
		t.Error("the removed option is not marked")
	}
	if f := facility("alpha/multi"); f != "50%" {
		t.Errorf("multi facility = %q, want 50%%", f)
	}
	if got, want := chosen(q("alpha/multi")), map[string]string{"x": "2", "y": "1", "z": "1"}; !maps.Equal(got, want) {
		t.Errorf("multi options = %v, want %v", got, want)
	}
	if q("alpha/multi").Find(`tr.wrongpick[data-id=z]`).Length() != 1 {
		t.Error("most-picked wrong option not marked")
	}
	if f := facility("alpha/num"); f != "67%" {
		t.Errorf("numeric facility = %q, want 67%%", f)
	}
	var values []string
	q("alpha/num").Find(`[data-testid=value]`).Each(func(_ int, s *goquery.Selection) {
		values = append(values, strings.Join(s.Find("td").Map(func(_ int, td *goquery.Selection) string { return td.Text() }), " "))
	})
	if !slices.Equal(values, []string{"12.5 2", "12 1"}) {
		t.Errorf("numeric values = %q", values)
	}
	if f := facility("alpha/order"); f != "–" {
		t.Errorf("unanswered facility = %q", f)
	}

	exp := doc.Find(`[data-testid=experiment][data-id=memlock]`)
	if exp.Find(`[data-status=done]`).Text() != "done 1" || exp.Find(`[data-status=failed]`).Text() != "failed 1" {
		t.Errorf("memlock outcomes = %q", strings.Join(strings.Fields(exp.Text()), " "))
	}
	if doc.Find(`[data-testid=experiment][data-id=tcp-cost] [data-status=timed-out]`).Text() != "timed-out 1" {
		t.Error("tcp-cost outcome missing")
	}
}

// fetchCSV downloads an export and parses it back.
func (e *instrEnv) fetchCSV(c *http.Client, path string) [][]string {
	e.t.Helper()
	res := e.do(c, "GET", path, nil)
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		e.t.Fatalf("GET %s: %d", path, res.StatusCode)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		e.t.Errorf("%s: content type %q", path, ct)
	}
	if cd := res.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") {
		e.t.Errorf("%s: disposition %q", path, cd)
	}
	b, _ := io.ReadAll(res.Body)
	b, ok := bytes.CutPrefix(b, []byte("\ufeff"))
	if !ok {
		e.t.Errorf("%s: no UTF-8 BOM", path)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		e.t.Fatalf("%s does not parse back: %v", path, err)
	}
	return rows
}

func TestCSVExports(t *testing.T) {
	e := newInstrEnv(t)
	seedClass(t, e.DB)
	c := e.instructor("ada", "correct horse battery")

	rows := e.fetchCSV(c, "/instructor/export/progress.csv?lang=en")
	want := [][]string{
		{"learner", "display_name", "lesson", "lesson_title", "opened_at", "completed_at"},
		{instrAnn, `'=HYPERLINK("x")`, "01-alpha", "Alpha"},
		{instrBob, "李雷", "01-alpha", "Alpha"},
		{instrCat, "", "01-alpha", "Alpha"},
	}
	if len(rows) != len(want) || !slices.Equal(rows[0], want[0]) {
		t.Fatalf("progress.csv = %q", rows)
	}
	for i, w := range want[1:] {
		r := rows[i+1]
		if !slices.Equal(r[:4], w) || r[4] == "" {
			t.Errorf("progress row %d = %q, want prefix %q", i+1, r, w)
		}
		if _, err := time.Parse(time.RFC3339, r[4]); err != nil {
			t.Errorf("opened_at %q: %v", r[4], err)
		}
		if completed := r[5] != ""; completed != (r[0] == instrAnn) {
			t.Errorf("row %d completed_at = %q", i+1, r[5])
		}
	}

	rows = e.fetchCSV(c, "/instructor/export/attempts.csv")
	if !slices.Equal(rows[0], []string{"attempt", "learner", "display_name", "lesson", "question", "type", "answer", "correct", "answer_seen", "created_at",
		"mode", "counted", "revealed", "event"}) {
		t.Fatalf("attempts header = %q", rows[0])
	}
	if len(rows) != 11 {
		t.Fatalf("%d attempt rows, want 10", len(rows)-1)
	}
	wantAttempts := [][]string{
		{"1", instrAnn, `'=HYPERLINK("x")`, "01-alpha", "alpha/single", "single", `"b"`, "false"},
		{"4", instrCat, "", "01-alpha", "alpha/single", "single", `"gone"`, "false"},
		{"7", instrBob, "李雷", "01-alpha", "alpha/multi", "multi", `["x","z"]`, "false"},
		{"10", instrCat, "", "01-alpha", "alpha/num", "numeric", `12.5`, "true"},
	}
	for _, w := range wantAttempts {
		var got []string
		for _, r := range rows[1:] {
			if r[0] == w[0] {
				got = r
			}
		}
		if got == nil || !slices.Equal(got[:8], w) {
			t.Errorf("attempt %s = %q, want %q", w[0], got, w)
		}
	}

	rows = e.fetchCSV(c, "/instructor/export/runs.csv")
	if len(rows) != 4 {
		t.Fatalf("runs.csv = %q", rows)
	}
	h := rows[0]
	col := func(r []string, name string) string { return r[slices.Index(h, name)] }
	if col(rows[1], "run") != "run-1" || col(rows[1], "status") != "done" || col(rows[1], "result_ok") != "true" ||
		col(rows[1], "result") != "ENOMEM as expected" || col(rows[1], "backend") != "host" || col(rows[1], "params") != `{"size":4096}` {
		t.Errorf("run-1 = %q", rows[1])
	}
	if col(rows[2], "status") != "failed" || col(rows[2], "error") != "agent crashed" || col(rows[2], "display_name") != "李雷" {
		t.Errorf("run-2 = %q", rows[2])
	}
	if col(rows[3], "experiment") != "tcp-cost" || col(rows[3], "status") != "timed-out" || col(rows[3], "duration_s") == "" {
		t.Errorf("run-3 = %q", rows[3])
	}
}

func TestDisplayNamePage(t *testing.T) {
	e := newInstrEnv(t)
	learner := e.browser()
	doc := e.page(e.do(learner, "GET", "/me?lang=en", nil), http.StatusOK)
	if doc.Find(`form[action="/me"] input[name=name]`).Length() != 1 {
		t.Fatal("no name form")
	}
	res := e.do(learner, "POST", "/me", url.Values{"name": {"  Ann Lee "}})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/me?saved=1" {
		t.Fatalf("save: %d → %q", res.StatusCode, res.Header.Get("Location"))
	}
	doc = e.page(e.do(learner, "GET", "/me?saved=1", nil), http.StatusOK)
	if v, _ := doc.Find(`input[name=name]`).Attr("value"); v != "Ann Lee" || doc.Find(`[data-testid=me-saved]`).Length() != 1 {
		t.Fatalf("after save: value %q", v)
	}
	e.page(e.do(learner, "POST", "/me", url.Values{"name": {strings.Repeat("x", 61)}}), http.StatusUnprocessableEntity)

	// Instructors see it; another learner's pages never show it.
	c := e.instructor("ada", "correct horse battery")
	if !strings.Contains(e.page(e.do(c, "GET", "/instructor", nil), http.StatusOK).Find(`[data-testid=learners]`).Text(), "Ann Lee") {
		t.Error("name not on the dashboard")
	}
	other := e.browser()
	for _, path := range []string{"/", "/lessons/01-alpha", "/me"} {
		res := e.do(other, "GET", path, nil)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if bytes.Contains(body, []byte("Ann Lee")) {
			t.Errorf("another learner sees the name on %s", path)
		}
	}
}

// sseEvent is one server-sent event.
type sseEvent struct{ Event, Data string }

// openReload connects to /api/reload with c and returns its events.
func (e *instrEnv) openReload(c *http.Client) <-chan sseEvent {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.HTTP.URL+"/api/reload", nil)
	res, err := c.Do(req)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		e.t.Fatalf("/api/reload: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	ch := make(chan sseEvent, 16)
	go func() {
		defer close(ch)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Event != "" {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.Event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.Data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	e.t.Cleanup(cancel)
	return ch
}

func nextEvent(t *testing.T, ch <-chan sseEvent, what string) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("stream closed waiting for %s", what)
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	return sseEvent{}
}

// lessonBody fetches the lesson page as a learner.
func (e *instrEnv) lessonBody(c *http.Client) string {
	e.t.Helper()
	return e.page(e.do(c, "GET", "/lessons/01-alpha?lang=en", nil), http.StatusOK).Find(`[data-testid=body]`).Text()
}

// The whole live-authoring loop: an edit reloads open pages with the new
// content; a broken edit keeps learners on the last good version and shows
// instructors file:line errors; the fix recovers.
func TestLiveReload(t *testing.T) {
	e := newInstrEnv(t)
	learner := e.browser()
	instr := e.instructor("ada", "correct horse battery")
	if !strings.Contains(e.lessonBody(learner), "First version.") {
		t.Fatal("initial content missing")
	}
	doc := e.page(e.do(learner, "GET", "/lessons/01-alpha", nil), http.StatusOK)
	if doc.Find(`script[src^="/static/js/reload.js"]`).Length() != 1 {
		t.Error("pages do not load reload.js")
	}

	ls := e.openReload(learner)
	is := e.openReload(instr)
	st := nextEvent(t, ls, "learner state")
	if st.Event != "state" || st.Data == "" {
		t.Fatalf("first learner event = %+v", st)
	}
	if ev := nextEvent(t, is, "instructor state"); ev.Event != "state" || ev.Data != st.Data {
		t.Fatalf("instructor state = %+v", ev)
	}
	if ev := nextEvent(t, is, "instructor errors"); ev.Event != "errors" || ev.Data != "[]" {
		t.Fatalf("instructor errors = %+v", ev)
	}

	// Edit → reload pushed, new content served.
	idx := filepath.Join(e.Dir, "01-alpha", "index.en.md")
	writeTestFile(t, idx, alphaPage("en", "Alpha", "Second version."))
	r1 := nextEvent(t, ls, "reload after edit")
	if r1.Event != "reload" || r1.Data == st.Data {
		t.Fatalf("learner got %+v", r1)
	}
	if ev := nextEvent(t, is, "instructor reload"); ev.Event != "reload" || ev.Data != r1.Data {
		t.Fatalf("instructor got %+v", ev)
	}
	if !strings.Contains(e.lessonBody(learner), "Second version.") {
		t.Fatal("edited content not served")
	}

	// Broken edit → instructors get the errors, learners nothing.
	writeTestFile(t, idx, "---\ntitle: Alpha\nsummary: s\norder: one\n---\n\nThird, broken.\n\n::nosuch thing\n")
	ev := nextEvent(t, is, "errors")
	if ev.Event != "errors" {
		t.Fatalf("instructor got %+v", ev)
	}
	var diags []reloadDiag
	if err := json.Unmarshal([]byte(ev.Data), &diags); err != nil || len(diags) == 0 {
		t.Fatalf("errors data %q: %v", ev.Data, err)
	}
	var lines []string
	for _, d := range diags {
		lines = append(lines, d.File+":"+strconv.Itoa(d.Line)+": "+d.Message)
	}
	joined := strings.Join(lines, "\n")
	if !strings.Contains(joined, "01-alpha/index.en.md:4: front matter: order") ||
		!strings.Contains(joined, "01-alpha/index.en.md:9:") {
		t.Errorf("errors =\n%s", joined)
	}
	if !strings.Contains(e.lessonBody(learner), "Second version.") {
		t.Fatal("learners lost the last good version")
	}
	// The dashboard shows the same lines.
	dash := e.page(e.do(instr, "GET", "/instructor", nil), http.StatusOK)
	if !strings.Contains(dash.Find(`[data-testid=course-errors]`).Text(), "01-alpha/index.en.md:4:") {
		t.Error("dashboard does not show the course errors")
	}

	// Fix → both reload; the instructor's overlay clears.
	writeTestFile(t, idx, alphaPage("en", "Alpha", "Fourth version."))
	if ev := nextEvent(t, is, "cleared errors"); ev.Event != "errors" || ev.Data != "[]" {
		t.Fatalf("instructor got %+v", ev)
	}
	if ev := nextEvent(t, is, "instructor reload"); ev.Event != "reload" {
		t.Fatalf("instructor got %+v", ev)
	}
	// The learner's very next event is the reload to the fixed version: the
	// broken state was never pushed to learners.
	r2 := nextEvent(t, ls, "reload after fix")
	if r2.Event != "reload" || r2.Data == r1.Data {
		t.Fatalf("learner got %+v", r2)
	}
	if !strings.Contains(e.lessonBody(learner), "Fourth version.") {
		t.Fatal("fixed content not served")
	}

	// A deleted lesson folder: its page is gone after the reload.
	writeTestFile(t, filepath.Join(e.Dir, "02-beta", "index.en.md"), "---\ntitle: Beta\nsummary: s\norder: 2\n---\n\nBeta.\n")
	nextEvent(t, ls, "reload after new lesson")
	e.page(e.do(learner, "GET", "/lessons/02-beta", nil), http.StatusOK)
	if err := os.RemoveAll(filepath.Join(e.Dir, "02-beta")); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, ls, "reload after deletion")
	e.page(e.do(learner, "GET", "/lessons/02-beta", nil), http.StatusNotFound)
}

func TestReloadOffWithoutWatch(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "lab.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := &lessons.Course{}
	srv, err := New(Config{Course: func() *lessons.Course { return c }, Store: db})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/reload", nil))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("status %d, want 204", rec.Code)
	}
	rec = httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if strings.Contains(rec.Body.String(), "reload.js") {
		t.Error("reload.js loaded without a watched course")
	}
}

// A form body that does not parse must not act like an empty form.
func TestMalformedFormRefused(t *testing.T) {
	e := newInstrEnv(t)
	learner := e.browser()
	res := e.do(learner, "POST", "/me", url.Values{"name": {"Ann"}})
	res.Body.Close()
	id := learnerOf(t, learner, e.HTTP.URL)
	req, _ := http.NewRequest("POST", e.HTTP.URL+"/me", strings.NewReader("name=%zz"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := learner.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte("表单")) {
		t.Fatalf("malformed form: %d", res.StatusCode)
	}
	if name, _ := e.DB.DisplayName(context.Background(), id); name != "Ann" {
		t.Fatalf("display name after a malformed post = %q", name)
	}
}

// TestRunsCSVGuardsWorkerFields: a run's backend, result and error can be
// a worker's words (another machine, possibly hostile): runs.csv cuts them
// to instructor.MaxWorkerText bytes and defuses a formula, as it does a learner's name.
func TestRunsCSVGuardsWorkerFields(t *testing.T) {
	e := newInstrEnv(t)
	seedClass(t, e.DB)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("y", 5000)
	must(e.DB.CreateRun(ctx, sandbox.RunInfo{ID: "run-w", Learner: instrAnn, Experiment: "memlock", Params: sandbox.Params{}, Status: sandbox.StatusQueued}))
	must(e.DB.AppendRunEvent(ctx, "run-w", sandbox.Event{Seq: 1, Time: time.Now(), Type: sandbox.EvStatus, Status: sandbox.StatusRunning, Backend: `=HYPERLINK("http://evil")`}))
	ok := true
	must(e.DB.AppendRunEvent(ctx, "run-w", sandbox.Event{Seq: 2, Time: time.Now(), Type: sandbox.EvResult, OK: &ok, Message: "@SUM(1)" + long}))
	must(e.DB.AppendRunEvent(ctx, "run-w", sandbox.Event{Seq: 3, Time: time.Now(), Type: sandbox.EvStatus, Status: sandbox.StatusFailed, Message: `+cmd|' /C calc'!A0`}))
	c := e.instructor("ada", "correct horse battery")
	rows := e.fetchCSV(c, "/instructor/export/runs.csv")
	h := rows[0]
	col := func(r []string, name string) string { return r[slices.Index(h, name)] }
	for _, r := range rows[1:] {
		if r[0] != "run-w" {
			continue
		}
		if b := col(r, "backend"); b != `'=HYPERLINK("http://evil")` {
			t.Errorf("backend %q", b)
		}
		if v := col(r, "result"); !strings.HasPrefix(v, "'@SUM(1)") || len(v) > instructor.MaxWorkerText+10 {
			t.Errorf("result %q… (%d bytes)", textclip.Bytes(v, 40), len(v))
		}
		if v := col(r, "error"); v != `'+cmd|' /C calc'!A0` {
			t.Errorf("error %q", v)
		}
		return
	}
	t.Fatalf("run-w not in runs.csv: %q", rows)
}

// TestDashboardPrograms: the dashboard counts, per :::program exercise,
// the learners who reached its check, passed it and were shown its
// solution, and the runs; the learners table counts each one's passes.
func TestDashboardPrograms(t *testing.T) {
	const slug = "04-first-program"
	// with the lessons it links to: the whole course
	ents, err := fs.ReadDir(lessons.Builtin, ".")
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, d := range ents {
		if d.IsDir() {
			all = append(all, d.Name())
		}
	}
	e := newInstrEnv(t, all...)
	l := e.Live.Course().Lesson(slug)
	if l == nil || len(l.Programs) < 2 {
		t.Fatalf("lesson %s with programs: %v (warnings %v)", slug, l, e.Live.Course().Warnings)
	}
	ctx := context.Background()
	ann, bob, cyd := instrAnn, instrBob, strings.Repeat("c", 32)
	first, second := l.Programs[0].ID, l.Programs[1].ID
	runs := []struct {
		learner, program string
		passed           bool
	}{
		{ann, first, false}, {ann, first, true}, {ann, first, true},
		{bob, first, false}, {bob, second, true},
		{cyd, first, false}, {cyd, first, false},
		{ann, "gone-program", true}, // removed since: counted nowhere
	}
	for _, r := range runs {
		if err := e.DB.RecordProgramRun(ctx, r.learner, slug, r.program, r.passed); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.DB.RecordSolutionShown(ctx, cyd, slug, first); err != nil {
		t.Fatal(err)
	}
	c := e.instructor("ada", "correct horse battery")
	for _, lang := range []string{"en", "zh"} {
		doc := e.page(e.do(c, "GET", "/instructor?lang="+lang, nil), http.StatusOK)
		row := func(id string) string {
			sel := doc.Find(`[data-testid=dash-lesson][data-slug="` + slug + `"] [data-testid=dash-program][data-id="` + id + `"]`)
			return strings.Join(sel.Find("td.num").Map(func(_ int, s *goquery.Selection) string { return s.Text() }), " ")
		}
		// tried, passed, runs, solution shown
		if got := row(first); got != "3 1 6 1" {
			t.Errorf("%s: %s = %q, want 3 1 6 1", lang, first, got)
		}
		if got := row(second); got != "1 1 1 0" {
			t.Errorf("%s: %s = %q, want 1 1 1 0", lang, second, got)
		}
		if n := doc.Find(`[data-testid=dash-lesson][data-slug="` + slug + `"] [data-testid=dash-program]`).Length(); n != len(l.Programs) {
			t.Errorf("%s: %d program rows, want %d", lang, n, len(l.Programs))
		}
		passes := map[string]string{}
		doc.Find(`[data-testid=learner]`).Each(func(_ int, s *goquery.Selection) {
			passes[s.Find(".id").Text()] = s.Find(`[data-testid=learner-programs]`).Text()
		})
		if want := map[string]string{ann[:8]: "2", bob[:8]: "1", cyd[:8]: "0"}; !maps.Equal(passes, want) {
			t.Errorf("%s: programs passed per learner %v, want %v", lang, passes, want)
		}
		if lang == "zh" {
			if got := doc.Find(`[data-testid=dash-programs] caption`).First().Text(); got != "编程练习" {
				t.Errorf("zh caption %q", got)
			}
		}
	}
}
