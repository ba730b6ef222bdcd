package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/internal/testwait"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
)

// rawGET sends path byte for byte (no client-side cleaning or escaping)
// and returns the status and body.
func rawGET(t *testing.T, base, path string) (int, string) {
	t.Helper()
	u, _ := url.Parse(base)
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, u.Host)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		// A request line the server refuses outright is fine too.
		return 400, ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

const secretMarker = "TOP-SECRET-0xdeadbeef"

// TestPathTraversal asks the asset and static routes for files outside
// what they serve: the course's secrets (quiz answers, sources), a file
// beside the course folder, a symlink out of the lesson folder, and the
// Go sources embedded next to the static files. Only real assets come back.
func TestPathTraversal(t *testing.T) {
	root := t.TempDir()
	courseDir := filepath.Join(root, "course")
	lesson := filepath.Join(courseDir, "01-evil")
	if err := os.MkdirAll(filepath.Join(lesson, "images"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "secret.txt"), secretMarker)
	write(filepath.Join(root, "secret.png"), secretMarker)
	write(filepath.Join(lesson, "images", ".hidden.png"), secretMarker)
	write(filepath.Join(lesson, "images", "pic.png"), "\x89PNG fine")
	write(filepath.Join(lesson, "index.en.md"), "---\ntitle: T\nsummary: S\norder: 1\n---\n\n![p](images/pic.png)\n\n::quiz evil/one\n")
	write(filepath.Join(lesson, "quiz.yaml"), strings.Replace(hostileQuiz, "<script>", secretMarker+"<script>", 1))
	if err := os.Symlink(filepath.Join(root, "secret.png"), filepath.Join(lesson, "images", "link.png")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(lesson, "up")); err != nil {
		t.Fatal(err)
	}
	// The same FS the server uses for `serve --lessons DIR`.
	course, err := lessons.Load(os.DirFS(courseDir), lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, course)

	if code, body := rawGET(t, env.HTTP.URL, "/lessons/01-evil/assets/images/pic.png"); code != 200 || !strings.Contains(body, "PNG fine") {
		t.Fatalf("the real asset: %d %q", code, body)
	}
	if code, _ := rawGET(t, env.HTTP.URL, "/static/css/lab.css"); code != 200 {
		t.Fatalf("a real static file: %d", code)
	}
	for _, p := range []string{
		"/lessons/01-evil/assets/../../../secret.txt",
		"/lessons/01-evil/assets/..%2f..%2f..%2fsecret.txt",
		"/lessons/01-evil/assets/%2e%2e/%2e%2e/%2e%2e/secret.txt",
		"/lessons/01-evil/assets/images/..%2F..%2F..%2Fsecret.png",
		"/lessons/01-evil/assets/%252e%252e%252f%252e%252e%252fsecret.png",
		"/lessons/01-evil/assets/..\\..\\..\\secret.png",
		"/lessons/01-evil/assets/..%5c..%5c..%5csecret.png",
		"/lessons/01-evil/assets//" + filepath.Join(root, "secret.png"),
		"/lessons/01-evil/assets/" + url.PathEscape(filepath.Join(root, "secret.png")),
		"/lessons/01-evil/assets/quiz.yaml",
		"/lessons/01-evil/assets/index.en.md",
		"/lessons/01-evil/assets/images/.hidden.png",
		"/lessons/01-evil/assets/images/link.png",
		"/lessons/01-evil/assets/up/secret.png",
		"/lessons/01-evil/assets/images/pic.png%00.txt",
		"/lessons/..%2f..%2f/assets/secret.png",
		"/lessons/%2e%2e/assets/secret.png",
		"/lessons/01-evil%2f..%2f..%2f/assets/secret.png",
		"/static/../static.go",
		"/static/..%2fstatic.go",
		"/static/%2e%2e/static.go",
		"/static/css/..%2f..%2fstatic.go",
		"/static/static.go",
		"/static/..%2f..%2fgo.mod",
	} {
		code, body := rawGET(t, env.HTTP.URL, p)
		if code == 200 || strings.Contains(body, secretMarker) || strings.Contains(body, "package static") ||
			strings.Contains(body, "correct: true") {
			t.Errorf("GET %s: %d, served %q", p, code, clip(body))
		}
	}
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// postRoutes lists every POST route of the server's router, so a route
// added later is covered without editing this test.
func postRoutes(t *testing.T, h http.Handler) []string {
	t.Helper()
	routes, ok := h.(chi.Routes)
	if !ok {
		t.Fatalf("handler %T is not a chi router", h)
	}
	var out []string
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method == http.MethodPost {
			out = append(out, route)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 5 {
		t.Fatalf("only %d POST routes found: %v", len(out), out)
	}
	return out
}

// concrete fills a route pattern's parameters with values that reach the
// handler (a real lesson, question and run).
func concrete(route, runID string) string {
	r := strings.NewReplacer("{slug}", "01-one", "{id}", runID, "{questionID...}", "one/q1")
	p := r.Replace(route)
	if strings.HasSuffix(p, "/*") {
		p = strings.TrimSuffix(p, "*") + "one/q1/attempts"
	}
	return p
}

// hostileEnv is a lab with the sandbox on (fixture course, real store,
// real runner over the in-process agent) and one learner who has data.
func hostileEnv(t *testing.T) (*runEnv, *http.Client, string) {
	t.Helper()
	env := newRunEnv(t, runner.Config{})
	victim := env.client()
	runID := env.submit(victim, "ticks", map[string]any{"n": 1})
	return env, victim, runID
}

// TestCrossOriginPOSTEveryRoute sends every POST route a browser request
// marked cross-site (Sec-Fetch-Site) and one from a foreign Origin: each
// is refused with 403 before its handler runs, and nothing is stored.
func TestCrossOriginPOSTEveryRoute(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	victim := env.client()
	ctx := context.Background()
	// A run held open, so the cancel routes have something to cancel.
	key := time.Now().UnixNano()%(1<<40) + 7
	runID := env.submit(victim, "hold", map[string]any{"key": key, "before": 0, "after": 1})
	for {
		if run, _ := env.DB.Run(ctx, runID); run.Status == sandbox.StatusRunning {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	learner := learnerOf(t, victim, env.HTTP.URL)
	before := dbCounts(t, env.DB)

	for _, route := range postRoutes(t, env.Server.Handler()) {
		if route == "/lti/login" || route == "/lti/launch" {
			// Cross-site by design (an LMS's page posts them): exempt in
			// cross_origin.go; forged launches are refused by their
			// signature instead (TestLTIRefusals).
			continue
		}
		path := concrete(route, runID)
		for _, hdr := range [][]string{
			{"Sec-Fetch-Site", "cross-site"},
			{"Origin", "https://evil.example"},
			{"Sec-Fetch-Site", "same-site", "Origin", "https://sub." + strings.TrimPrefix(env.HTTP.URL, "http://")},
		} {
			for _, ct := range []string{"application/x-www-form-urlencoded", "application/json", "text/plain"} {
				body := `answer=a&name=pwned&experiment=ticks&username=u&password=p`
				if ct == "application/json" {
					body = `{"answer":"a","experiment":"ticks","params":{"n":1}}`
				}
				req, _ := http.NewRequest("POST", env.HTTP.URL+path, strings.NewReader(body))
				req.Header.Set("Content-Type", ct)
				for i := 0; i+1 < len(hdr); i += 2 {
					req.Header.Set(hdr[i], hdr[i+1])
				}
				res, err := victim.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusForbidden {
					t.Errorf("POST %s %v %s: %d, want 403", path, hdr, ct, res.StatusCode)
				}
				if strings.HasPrefix(path, "/api/") && !strings.Contains(string(b), `"forbidden"`) {
					t.Errorf("POST %s: API refusal is not a JSON forbidden error: %s", path, b)
				}
			}
		}
	}
	if after := dbCounts(t, env.DB); after != before {
		t.Errorf("cross-origin POSTs changed the database: %v → %v", before, after)
	}
	if name, _ := env.DB.DisplayName(ctx, learner); name != "" {
		t.Errorf("display name set cross-origin: %q", name)
	}
	// The run was not cancelled: released, it runs to its end.
	close(gate(key))
	if run := waitRunFinal(t, env.DB, runID); run.Status != sandbox.StatusDone {
		t.Errorf("run ended %s after cross-origin POSTs, want done", run.Status)
	}
	// The same requests from our own pages pass the check.
	req, _ := http.NewRequest("POST", env.HTTP.URL+"/api/quiz/one/q1/attempts", strings.NewReader(`{"answer":"a"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", env.HTTP.URL)
	res, err := victim.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == http.StatusForbidden {
		t.Errorf("same-origin quiz POST refused")
	}
}

// counts is a snapshot of how many rows each learner-writable table holds.
type counts struct{ learners, progress, attempts, runs, events, sessions int }

func dbCounts(t *testing.T, db *store.DB) counts {
	t.Helper()
	var c counts
	raw := rawDB(t, db)
	for table, dst := range map[string]*int{
		"learners": &c.learners, "progress": &c.progress, "attempts": &c.attempts,
		"runs": &c.runs, "run_events": &c.events, "instructor_sessions": &c.sessions,
	} {
		if err := raw.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(dst); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// waitRunFinal waits (bounded) until the stored run has a final status.
func waitRunFinal(t *testing.T, db *store.DB, id string) store.Run {
	t.Helper()
	var run store.Run
	if !testwait.For(20*time.Second, 20*time.Millisecond, func() bool {
		var err error
		if run, err = db.Run(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		return run.Status.Final()
	}) {
		t.Fatalf("run %s still %s after 20 s", id, run.Status)
	}
	return run
}

// TestOversizedBodies posts a body far beyond any real request to every
// POST route, once with a Content-Length and once chunked (no length up
// front). Each is refused with a 4xx, quickly, and acts on nothing: in
// particular a form whose body could not be read must not be treated as
// an empty form (which would, say, clear a display name).
func TestOversizedBodies(t *testing.T) {
	env, victim, runID := hostileEnv(t)
	ctx := context.Background()
	learner := learnerOf(t, victim, env.HTTP.URL)
	if err := env.DB.SetDisplayName(ctx, learner, "Ann"); err != nil {
		t.Fatal(err)
	}
	waitRunFinal(t, env.DB, runID)
	before := dbCounts(t, env.DB)

	const size = 12 << 20 // beyond net/http's own 10 MB form limit
	for _, route := range postRoutes(t, env.Server.Handler()) {
		path := concrete(route, runID)
		for _, chunked := range []bool{false, true} {
			for _, ct := range []string{"application/x-www-form-urlencoded", "application/json"} {
				var body io.Reader = io.MultiReader(strings.NewReader("name="), &repeatReader{b: 'x', n: size})
				if ct == "application/json" {
					body = io.MultiReader(strings.NewReader(`{"answer":"`), &repeatReader{b: 'x', n: size}, strings.NewReader(`"}`))
				}
				req, _ := http.NewRequest("POST", env.HTTP.URL+path, body)
				req.Header.Set("Content-Type", ct)
				if chunked {
					req.ContentLength = -1 // Transfer-Encoding: chunked
				} else {
					req.ContentLength = int64(size + 16)
				}
				start := time.Now()
				res, err := victim.Do(req)
				took := time.Since(start)
				if err != nil {
					// The server may close the connection after answering
					// while we still send: that is a refusal too.
					continue
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode < 400 || res.StatusCode >= 500 {
					t.Errorf("POST %s (%s, chunked=%v, %d MiB): %d, want a 4xx", path, ct, chunked, size>>20, res.StatusCode)
				}
				if !chunked && res.StatusCode != http.StatusRequestEntityTooLarge {
					t.Errorf("POST %s with Content-Length %d: %d, want 413", path, size, res.StatusCode)
				}
				if took > 10*time.Second {
					t.Errorf("POST %s: took %v", path, took)
				}
			}
		}
	}
	if name, _ := env.DB.DisplayName(ctx, learner); name != "Ann" {
		t.Errorf("display name after oversized posts: %q, want Ann", name)
	}
	if after := dbCounts(t, env.DB); after != before {
		t.Errorf("oversized POSTs changed the database: %v → %v", before, after)
	}
}

// repeatReader yields n copies of b.
type repeatReader struct {
	b byte
	n int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.n)
	for i := range n {
		p[i] = r.b
	}
	r.n -= n
	return n, nil
}

// TestRunRateLimit: one learner firing run requests is refused with 429,
// Retry-After and a message in the learner's language once the burst is
// spent, on both submit routes; another learner is not affected.
func TestRunRateLimit(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	hammer := env.client()
	env.get(hammer, "/?lang=en").Body.Close()
	codes := map[int]int{}
	var last *http.Response
	var lastBody []byte
	for range DefaultLimits.RunBurst + 5 {
		// An unknown experiment costs the runner nothing: only the limiter counts.
		req, _ := http.NewRequest("POST", env.HTTP.URL+"/api/runs", strings.NewReader(`{"experiment":"nope"}`))
		req.Header.Set("Content-Type", "application/json")
		res, err := hammer.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		lastBody, _ = io.ReadAll(res.Body)
		res.Body.Close()
		codes[res.StatusCode]++
		last = res
	}
	if codes[http.StatusBadRequest] != DefaultLimits.RunBurst || codes[http.StatusTooManyRequests] != 5 {
		t.Fatalf("statuses %v, want %d×400 then 5×429", codes, DefaultLimits.RunBurst)
	}
	var e page.ErrorBody
	if err := json.Unmarshal(lastBody, &e); err != nil || e.Error.Code != page.CodeRateLimited ||
		!strings.Contains(e.Error.Message, "too often") {
		t.Errorf("429 body: %s", lastBody)
	}
	if ra := last.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After %q", ra)
	}
	// The form route shares the bucket and answers with a page.
	res, err := hammer.PostForm(env.HTTP.URL+"/runs", url.Values{"experiment": {"ticks"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(b), "too often") {
		t.Errorf("form route: %d", res.StatusCode)
	}
	// Someone else still runs.
	other := env.client()
	id := env.submit(other, "ticks", map[string]any{"n": 1})
	waitRunFinal(t, env.DB, id)
}

func TestKeyedLimiterRefills(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newKeyedLimiter(2, time.Second)
	l.now = func() time.Time { return now }
	for i, want := range []bool{true, true, false} {
		if ok, _ := l.allow("a"); ok != want {
			t.Fatalf("take %d: %v", i, ok)
		}
	}
	if _, wait := l.allow("a"); wait != time.Second {
		t.Errorf("wait %v, want 1s", wait)
	}
	now = now.Add(1500 * time.Millisecond)
	if ok, _ := l.allow("a"); !ok {
		t.Error("no token after refill")
	}
	if ok, _ := l.allow("a"); ok {
		t.Error("refill gave more than earned")
	}
	if ok, _ := l.allow("b"); !ok {
		t.Error("another key shares a's bucket")
	}
	// A refused request takes no token: after exactly one refill period
	// the next one passes.
	now = now.Add(time.Second)
	if ok, _ := l.allow("a"); !ok {
		t.Error("refused requests used up tokens")
	}
	var off *keyedLimiter
	if ok, _ := off.allow("x"); !ok {
		t.Error("a nil limiter refuses")
	}
}

// TestForgedLearnerCookies: a cookie that is not an id the server issued
// gets a fresh learner, who sees none of anyone's data.
func TestForgedLearnerCookies(t *testing.T) {
	env, victim, runID := hostileEnv(t)
	ctx := context.Background()
	waitRunFinal(t, env.DB, runID)
	learner := learnerOf(t, victim, env.HTTP.URL)
	if err := env.DB.MarkCompleted(ctx, learner, "01-one"); err != nil {
		t.Fatal(err)
	}
	for _, forged := range []string{
		"", "admin", "1", "../../etc/passwd", "' OR '1'='1", "%00", strings.Repeat("a", 4096),
		strings.ToUpper(learner), learner[:31], learner + "0", learner + ".", " " + learner,
		"\u00e9" + learner[2:],
	} {
		req, _ := http.NewRequest("GET", env.HTTP.URL+"/runs", nil)
		req.Header.Set("Cookie", learnerCookie+"="+forged)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("cookie %q: %d", forged, res.StatusCode)
			continue
		}
		fresh := ""
		for _, c := range res.Cookies() {
			if c.Name == learnerCookie {
				fresh = c.Value
			}
		}
		if fresh == "" || fresh == forged || strings.Contains(fresh, learner) {
			t.Errorf("cookie %q: not replaced by a fresh learner (got %q)", clip(forged), fresh)
		}
		if strings.Contains(string(b), runID) {
			t.Errorf("cookie %q: sees the victim's run", clip(forged))
		}
	}
	if n := dbCounts(t, env.DB).learners; n != 1 {
		t.Errorf("%d learner rows after forged reads, want only the victim", n)
	}
}
