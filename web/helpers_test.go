package web

import (
	"database/sql"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rdmalab/rdmalab/internal/syncbuf"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/store"
)

// fixtureCourse is a small course built in Go: it exercises every segment
// kind, a fallback page, prerequisites and references without depending on
// the built-in content.
func fixtureCourse() *lessons.Course {
	page := func(lang, title string, fallback bool) *lessons.Page {
		return &lessons.Page{
			Lang: lang, Fallback: fallback, Title: title, Summary: title + " summary", Order: 1, Duration: "20 min",
			Objectives: []string{"objective one", "objective two"},
			References: []lessons.Reference{{Title: "Systems Performance", URL: "https://example.org/sp"}},
			TOC:        []lessons.Heading{{Level: 2, ID: "intro", Text: "Intro"}, {Level: 3, ID: "detail", Text: "Detail"}},
			Body: []lessons.Segment{
				{Kind: lessons.SegHTML, HTML: `<h2 id="intro">Intro</h2><p>hello <code>ibv_reg_mr</code></p><h3 id="detail">Detail</h3>`},
				{Kind: lessons.SegDiagram, ID: "tcp-vs-rdma", HTML: `<figure class="rd-diagram"><svg viewBox="0 0 10 10"></svg></figure>`},
				{Kind: lessons.SegExperiment, ID: "memlock", Params: map[string]string{"limit": "65536"}},
				{Kind: lessons.SegQuiz, ID: "one/q1"},
				{Kind: lessons.SegCheckpoint},
			},
		}
	}
	one := &lessons.Lesson{Slug: "01-one", Order: 1, Pages: map[string]*lessons.Page{
		"zh": page("zh", "第一课", false),
		"en": page("en", "Lesson one", false),
	}}
	// Lesson two exists only in Chinese: English readers get the fallback.
	twoZh := page("zh", "第二课", false)
	twoZh.Order = 2
	twoZh.Prerequisites = []string{"01-one"}
	twoZh.SourceLang = "zh"
	twoEn := *twoZh
	twoEn.Lang, twoEn.Fallback = "en", true
	two := &lessons.Lesson{Slug: "02-two", Order: 2, Pages: map[string]*lessons.Page{"zh": twoZh, "en": &twoEn}}
	return &lessons.Course{Lessons: []*lessons.Lesson{one, two}}
}

type testEnv struct {
	t      *testing.T
	DB     *store.DB
	Server *Server
	HTTP   *httptest.Server
	Course atomic.Pointer[lessons.Course]
	Logs   *syncbuf.Buffer // the server logs from its goroutines while tests read
}

// newEnv serves c (the fixture course when nil) from a real SQLite file in a
// temp dir through httptest.
func newEnv(t *testing.T, c *lessons.Course) *testEnv {
	t.Helper()
	if c == nil {
		c = fixtureCourse()
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "lab.db"))
	if err != nil {
		t.Fatal(err)
	}
	env := &testEnv{t: t, DB: db, Logs: new(syncbuf.Buffer)}
	env.Course.Store(c)
	srv, err := New(Config{Course: env.Course.Load, Store: db,
		Logger: slog.New(slog.NewTextHandler(env.Logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	env.Server = srv
	env.HTTP = httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		env.HTTP.Close()
		db.Close()
	})
	return env
}

// client returns a client with its own cookie jar (one learner) that does
// not follow redirects.
func (e *testEnv) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// get fetches path with the client and optional header pairs.
func (e *testEnv) get(c *http.Client, path string, header ...string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.HTTP.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
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

// doc fetches path, checks the status and parses the HTML.
func (e *testEnv) doc(c *http.Client, path string, want int, header ...string) *goquery.Document {
	e.t.Helper()
	res := e.get(c, path, header...)
	defer res.Body.Close()
	if res.StatusCode != want {
		e.t.Fatalf("GET %s: status %d, want %d", path, res.StatusCode, want)
	}
	d, err := goquery.NewDocumentFromReader(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// rawDB opens the test database's file on a connection of its own (the
// store keeps its pools to itself), for the few tests that count rows or
// set up a state no store method makes. Closed when the test ends.
func rawDB(t testing.TB, db *store.DB) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+db.Path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	t.Cleanup(func() { raw.Close() })
	return raw
}
