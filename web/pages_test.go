package web

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
)

func TestHomeListsLessonsWithProgress(t *testing.T) {
	env := newEnv(t, nil)
	c := env.client()
	d := env.doc(c, "/", 200)
	cards := d.Find(`[data-testid=lesson]`)
	if cards.Length() != 2 {
		t.Fatalf("home shows %d lessons, want 2", cards.Length())
	}
	first := cards.First()
	if got := first.Find("h2 a").Text(); got != "第一课" {
		t.Errorf("first title %q", got)
	}
	if href, _ := first.Find("h2 a").Attr("href"); href != "/lessons/01-one" {
		t.Errorf("first href %q", href)
	}
	if got := first.Find(".summary").Text(); got != "第一课 summary" {
		t.Errorf("summary %q", got)
	}
	if !strings.Contains(first.Find(".duration").Text(), "20 min") {
		t.Errorf("duration missing: %q", first.Find(".meta").Text())
	}
	if st, _ := first.Find(`[data-testid=status]`).Attr("data-status"); st != "new" {
		t.Errorf("status before opening = %q, want new", st)
	}

	env.doc(c, "/lessons/01-one", 200) // opening records progress
	d = env.doc(c, "/", 200)
	if st, _ := d.Find(`[data-slug="01-one"] [data-testid=status]`).Attr("data-status"); st != "opened" {
		t.Errorf("status after opening = %q, want opened", st)
	}
	res := postForm(t, c, env.HTTP.URL+"/lessons/01-one/complete", nil)
	res.Body.Close()
	d = env.doc(c, "/", 200)
	if st, _ := d.Find(`[data-slug="01-one"] [data-testid=status]`).Attr("data-status"); st != "completed" {
		t.Errorf("status after completing = %q, want completed", st)
	}
	if st, _ := d.Find(`[data-slug="02-two"] [data-testid=status]`).Attr("data-status"); st != "new" {
		t.Errorf("other lesson status = %q, want new", st)
	}

	// Another learner (fresh cookie jar) starts from scratch.
	d = env.doc(env.client(), "/", 200)
	if st, _ := d.Find(`[data-slug="01-one"] [data-testid=status]`).Attr("data-status"); st != "new" {
		t.Errorf("a second learner sees status %q, want new", st)
	}
}

func postForm(t *testing.T, c *http.Client, u string, form url.Values, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestLessonPage(t *testing.T) {
	env := newEnv(t, nil)
	c := env.client()
	d := env.doc(c, "/lessons/02-two", 200)
	if got := d.Find("h1").Text(); got != "第二课" {
		t.Errorf("h1 %q", got)
	}
	if got := d.Find("title").Text(); got != "第二课 · rdmalab" {
		t.Errorf("title %q", got)
	}
	if got := d.Find(`[data-testid=objectives] h2`).Text(); got != "学完这节你能做到" {
		t.Errorf("objectives heading %q", got)
	}
	if n := d.Find(`[data-testid=objectives] li`).Length(); n != 2 {
		t.Errorf("%d objectives, want 2", n)
	}
	if href, _ := d.Find(`[data-testid=prereqs] a`).Attr("href"); href != "/lessons/01-one" {
		t.Errorf("prerequisite link %q", href)
	}
	if got := d.Find(`[data-testid=prereqs] a`).Text(); got != "第一课" {
		t.Errorf("prerequisite title %q", got)
	}
	if hrefs := d.Find(`[data-testid=toc] a`).Map(func(_ int, s *goquerySel) string { h, _ := s.Attr("href"); return h }); strings.Join(hrefs, " ") != "#intro #detail" {
		t.Errorf("toc links %v", hrefs)
	}
	if d.Find(`[data-testid=body] #intro`).Length() != 1 || d.Find(`[data-testid=body] code`).Text() != "ibv_reg_mr" {
		t.Error("pre-rendered HTML segment missing from the body")
	}
	if d.Find(`[data-testid=body] .rd-diagram svg`).Length() != 1 {
		t.Error("diagram segment missing")
	}
	kinds := d.Find(`[data-testid=placeholder]`).Map(func(_ int, s *goquerySel) string { k, _ := s.Attr("data-kind"); return k })
	if strings.Join(kinds, ",") != "quiz,checkpoint" {
		t.Errorf("placeholders %v", kinds)
	}
	// The experiment directive renders the sandbox's widget; this server
	// has no runner, so the widget says experiments are off.
	if w := d.Find(`[data-testid=experiment][data-experiment=memlock]`); w.Find(`[data-testid=experiment-unavailable]`).Length() != 1 {
		t.Errorf("experiment widget for memlock missing or not saying it cannot run: %q", w.Text())
	}
	if href, _ := d.Find(`[data-testid=references] a`).Attr("href"); href != "https://example.org/sp" {
		t.Errorf("reference %q", href)
	}
	if href, _ := d.Find(`.pager a[rel=prev]`).Attr("href"); href != "/lessons/01-one" {
		t.Errorf("prev %q", href)
	}
	if d.Find(`.pager a[rel=next]`).Length() != 0 {
		t.Error("last lesson has a next link")
	}
	if action, _ := d.Find(`[data-testid=complete] form`).Attr("action"); action != "/lessons/02-two/complete" {
		t.Errorf("complete form action %q", action)
	}
	if d.Find(`[data-testid=fallback]`).Length() != 0 {
		t.Error("fallback notice on a page in its own language")
	}

	// English: the UI switches, and the zh-only lesson says it falls back.
	d = env.doc(c, "/lessons/02-two?lang=en", 200)
	if got := d.Find(`[data-testid=objectives] h2`).Text(); got != "After this lesson you can" {
		t.Errorf("en objectives heading %q", got)
	}
	if d.Find(`[data-testid=fallback]`).Length() != 1 {
		t.Error("no fallback notice for a lesson without an English version")
	}
	if lang, _ := d.Find("html").Attr("lang"); lang != "en" {
		t.Errorf("html lang %q", lang)
	}
	if lang, _ := d.Find("article").Attr("lang"); lang != "zh-CN" {
		t.Errorf("fallback article lang %q, want zh-CN (the text is Chinese)", lang)
	}
}

type goquerySel = goquery.Selection

func TestNotFound(t *testing.T) {
	env := newEnv(t, nil)
	for _, path := range []string{"/lessons/99-nope", "/no/such/page", "/lessons/01-one/assets/quiz.yaml"} {
		d := env.doc(env.client(), path, 404)
		if st, _ := d.Find(`[data-testid=error]`).Attr("data-status"); st != "404" {
			t.Errorf("%s: not the 404 page", path)
		}
		if d.Find("h1").Text() != "找不到这个页面" {
			t.Errorf("%s: heading %q", path, d.Find("h1").Text())
		}
		if href, _ := d.Find(`.error-page a`).Attr("href"); href != "/" {
			t.Errorf("%s: no link home", path)
		}
	}
	d := env.doc(env.client(), "/nope", 404, "Accept-Language", "en-US,en;q=0.9")
	if d.Find("h1").Text() != "Page not found" {
		t.Errorf("en 404 heading %q", d.Find("h1").Text())
	}

	res := postForm(t, env.client(), env.HTTP.URL+"/lessons/99-nope/complete", nil)
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Errorf("complete unknown lesson: %d", res.StatusCode)
	}
}

func TestAPIErrorsAreJSON(t *testing.T) {
	env := newEnv(t, nil)
	res := env.get(env.client(), "/api/nothing-here")
	defer res.Body.Close()
	if res.StatusCode != 404 || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d, content-type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var body struct {
		Error struct{ Code, Message string }
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Error.Code != "not_found" || body.Error.Message == "" {
		t.Errorf("error body %+v", body)
	}
}

func TestWriteErrorCodes(t *testing.T) {
	env := newEnv(t, nil)
	for _, tc := range []struct {
		err    error
		status int
		code   string
		msg    string
	}{
		{page.Errorf(page.CodeBadRequest, "bad json"), 400, "bad_request", "bad json"},
		{page.Errorf(page.CodeInvalid, "size too big"), 422, "invalid", "size too big"},
		{page.Errorf(page.CodeConflict, "already running"), 409, "conflict", "already running"},
		{page.Errorf(page.CodeBusy, "queue full"), 429, "busy", "queue full"},
		{&page.Error{Code: page.CodeUnavailable, Message: "no RDMA", Err: io.EOF}, 503, "unavailable", "no RDMA"},
		{io.ErrUnexpectedEOF, 500, "internal", "internal error; see the server log"},
	} {
		rec := httptest.NewRecorder()
		env.Server.WriteError(rec, httptest.NewRequest("GET", "/api/x", nil), tc.err)
		var body page.ErrorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if rec.Code != tc.status || string(body.Error.Code) != tc.code || body.Error.Message != tc.msg {
			t.Errorf("%v: got %d %+v, want %d %s %q", tc.err, rec.Code, body.Error, tc.status, tc.code, tc.msg)
		}
	}
	if !strings.Contains(env.Logs.String(), "unexpected EOF") {
		t.Error("internal error cause not logged")
	}
}

func TestHealthz(t *testing.T) {
	env := newEnv(t, nil)
	res := env.get(env.client(), "/healthz")
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(b) != "ok\n" {
		t.Fatalf("healthz: %d %q", res.StatusCode, b)
	}
	env.DB.Close() // the database goes away
	res = env.get(env.client(), "/healthz")
	res.Body.Close()
	if res.StatusCode != 503 {
		t.Fatalf("healthz with a closed database: %d, want 503", res.StatusCode)
	}
}

func TestLearnerCookie(t *testing.T) {
	env := newEnv(t, nil)
	res := env.get(http.DefaultClient, "/")
	res.Body.Close()
	var c *http.Cookie
	for _, k := range res.Cookies() {
		if k.Name == learnerCookie {
			c = k
		}
	}
	if c == nil {
		t.Fatal("no lab_learner cookie")
	}
	if !store.ValidLearnerID(c.Value) || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Secure || c.Path != "/" {
		t.Errorf("cookie %+v", c)
	}

	// A valid cookie is kept; a forged one is replaced.
	cl := env.client()
	u, _ := url.Parse(env.HTTP.URL)
	cl.Jar.SetCookies(u, []*http.Cookie{{Name: learnerCookie, Value: c.Value}})
	res = env.get(cl, "/")
	res.Body.Close()
	for _, k := range res.Cookies() {
		if k.Name == learnerCookie {
			t.Errorf("valid cookie was replaced by %q", k.Value)
		}
	}
	res = env.get(http.DefaultClient, "/", "Cookie", learnerCookie+"=../../etc")
	res.Body.Close()
	replaced := false
	for _, k := range res.Cookies() {
		replaced = replaced || (k.Name == learnerCookie && store.ValidLearnerID(k.Value))
	}
	if !replaced {
		t.Error("forged learner id was not replaced")
	}

	// Over TLS the cookie is Secure.
	tls := httptest.NewTLSServer(env.Server.Handler())
	defer tls.Close()
	res, err := tls.Client().Get(tls.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for _, k := range res.Cookies() {
		if k.Name == learnerCookie && !k.Secure {
			t.Error("cookie over TLS is not Secure")
		}
	}
}

func TestLangQuerySticks(t *testing.T) {
	env := newEnv(t, nil)
	c := env.client()
	d := env.doc(c, "/?lang=en", 200)
	if d.Find("h1").Text() != "The hands-on RDMA lab" {
		t.Fatalf("?lang=en heading %q", d.Find("h1").Text())
	}
	// The choice is remembered: the next page without ?lang= stays English,
	// even when the browser prefers Chinese.
	d = env.doc(c, "/lessons/01-one", 200, "Accept-Language", "zh-CN")
	if d.Find("h1").Text() != "Lesson one" {
		t.Errorf("after ?lang=en, h1 %q", d.Find("h1").Text())
	}
	if cur := d.Find(`[data-testid=langs] [aria-current]`).Text(); cur != "English" {
		t.Errorf("current language in the switch %q", cur)
	}
	if href, _ := d.Find(`[data-testid=langs] a[hreflang=zh]`).Attr("href"); href != "/lessons/01-one?lang=zh" {
		t.Errorf("switch link %q", href)
	}
}

func TestCompleteRedirectsAndRefusesCrossSite(t *testing.T) {
	env := newEnv(t, nil)
	c := env.client()
	res := postForm(t, c, env.HTTP.URL+"/lessons/01-one/complete", nil, "Origin", "https://evil.example")
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Fatalf("cross-site complete: %d, want 403", res.StatusCode)
	}
	res = postForm(t, c, env.HTTP.URL+"/lessons/01-one/complete", nil, "Origin", env.HTTP.URL)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/lessons/01-one#complete" {
		t.Fatalf("complete: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	d := env.doc(c, "/lessons/01-one", 200)
	if d.Find(`[data-testid=completed]`).Length() != 1 || d.Find(`[data-testid=complete] form`).Length() != 0 {
		t.Error("completed lesson still offers the form")
	}
}

func TestStaticAssets(t *testing.T) {
	env := newEnv(t, nil)
	d := env.doc(env.client(), "/", 200)
	href, _ := d.Find(`link[rel=stylesheet]`).Attr("href")
	if !strings.HasPrefix(href, "/static/css/lab.css?v=") {
		t.Fatalf("stylesheet href %q", href)
	}
	res := env.get(env.client(), href)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/css") || len(b) < 1000 {
		t.Fatalf("css: %d %q %d bytes", res.StatusCode, res.Header.Get("Content-Type"), len(b))
	}
	if cc := res.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
		t.Errorf("versioned asset Cache-Control %q", cc)
	}
	etag := res.Header.Get("ETag")
	res = env.get(env.client(), "/static/css/lab.css", "If-None-Match", etag)
	res.Body.Close()
	if res.StatusCode != 304 || strings.Contains(res.Header.Get("Cache-Control"), "immutable") {
		t.Errorf("unversioned revalidation: %d %q", res.StatusCode, res.Header.Get("Cache-Control"))
	}
	res = env.get(env.client(), "/static/css/nope.css")
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Errorf("missing asset: %d", res.StatusCode)
	}
}

func TestGzip(t *testing.T) {
	env := newEnv(t, nil)
	tr := &http.Transport{DisableCompression: true}
	c := &http.Client{Transport: tr}
	res := env.get(c, "/lessons/01-one", "Accept-Encoding", "gzip")
	res.Body.Close()
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("lesson page not gzipped: %q", res.Header.Get("Content-Encoding"))
	}
}

func TestPanicBecomes500Page(t *testing.T) {
	env := newEnv(t, nil)
	env.Course.Store(nil) // a nil course makes the home handler panic
	res := env.get(env.client(), "/")
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 500 || !strings.Contains(string(b), "出错了") {
		t.Errorf("panic: %d %.200q", res.StatusCode, b)
	}
	if !strings.Contains(env.Logs.String(), "panic") {
		t.Error("panic not logged")
	}
}

func TestStringsComplete(t *testing.T) {
	for lang, dict := range ui.Table {
		for other, od := range ui.Table {
			for k := range od {
				if _, ok := dict[k]; !ok {
					t.Errorf("key %q is in %s but not in %s", k, other, lang)
				}
			}
		}
	}
	if tr("zh")("lesson.objectives") != "学完这节你能做到" || tr("en")("lesson.objectives") != "After this lesson you can" {
		t.Error("objectives titles changed")
	}
}

func TestHeadRequests(t *testing.T) {
	env := newEnv(t, nil)
	for _, path := range []string{"/", "/lessons/01-one", "/healthz"} {
		req, _ := http.NewRequest("HEAD", env.HTTP.URL+path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || len(b) != 0 {
			t.Errorf("HEAD %s: %d with %d body bytes", path, res.StatusCode, len(b))
		}
	}
}
