package web

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/store"
)

// The lesson page handler is measured against the cheapest possible way to
// serve the same response: http.ServeContent of the exact bytes the handler
// produced, as this server serves its files (serveFile). `make bench`
// prints the throughput ratios; the goal (≥ 0.7) is the row served over a
// loopback connection, BenchmarkLessonPageVsServeContentHTTP, as a browser
// asks for a page.
//
// The in-process pairs run against a discarding ResponseWriter that copies
// like net/http's own (one kept buffer), so their figure is handler cost,
// not network cost. Requests carry a returning learner's cookie (the common
// case). The page side passes the full production middleware stack
// (request id, slog logging, recovery, gzip middleware, learner, language);
// the bare baseline passes none, the SameServer one the chain every
// response passes (Server.everyResponse). Requests send no
// Accept-Encoding, so neither side compresses. The Gzip pair compresses on
// both sides.

const benchSlug = "01-why-rdma"

type benchSetup struct {
	srv     *Server
	handler http.Handler
	cookie  *http.Cookie
}

func newBench(b *testing.B) benchSetup {
	b.Helper()
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		b.Fatal(err)
	}
	db, err := store.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	srv, err := New(Config{
		Course: func() *lessons.Course { return course },
		Store:  db,
		// Real formatting work, like production; only the sink differs.
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	return benchSetup{srv: srv, handler: srv.Handler(), cookie: &http.Cookie{Name: learnerCookie, Value: store.NewLearnerID()}}
}

func (s benchSetup) request(gzip bool) *http.Request {
	r := httptest.NewRequest("GET", "/lessons/"+benchSlug, nil)
	r.AddCookie(s.cookie)
	r.Header.Set("Accept-Language", "zh-CN,zh;q=0.9,en;q=0.8")
	if gzip {
		r.Header.Set("Accept-Encoding", "gzip")
	}
	return r
}

// discardWriter is a ResponseWriter that keeps only what the benchmark checks.
type discardWriter struct {
	h      http.Header
	status int
	n      int
	buf    []byte // ReadFrom's copy buffer, made once
}

// ReadFrom copies r through one buffer kept across requests, as net/http's
// response does (a pooled 32 KiB buffer, or sendfile). Without it
// http.ServeContent's io.Copy allocated 32 KiB per request: garbage a real
// server does not make, whose collection the pair benchmark billed partly
// to the lesson handler beside it.
func (w *discardWriter) ReadFrom(r io.Reader) (int64, error) {
	if w.buf == nil {
		w.buf = make([]byte, 32<<10)
	}
	return io.CopyBuffer(struct{ io.Writer }{w}, r, w.buf)
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(s int)   { w.status = s }
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	w.n += len(p)
	return len(p), nil
}
func (w *discardWriter) reset() {
	clear(w.h)
	w.status, w.n = 0, 0
}

// body runs the handler once (which also records the first visit) and
// returns the identity body it produced.
func (s benchSetup) body(b *testing.B) []byte {
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, s.request(false))
	rec = httptest.NewRecorder()
	s.handler.ServeHTTP(rec, s.request(false))
	if rec.Code != 200 || rec.Body.Len() < 10_000 {
		b.Fatalf("lesson page: %d, %d bytes", rec.Code, rec.Body.Len())
	}
	return rec.Body.Bytes()
}

func benchHandler(b *testing.B, gzip bool) {
	s := newBench(b)
	want := len(s.body(b))
	w := &discardWriter{h: http.Header{}}
	r := s.request(gzip)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w.reset()
		s.handler.ServeHTTP(w, r)
	}
	b.StopTimer()
	if w.status != 200 || (!gzip && w.n != want) || (gzip && w.h.Get("Content-Encoding") != "gzip") {
		b.Fatalf("last response: %d, %d bytes (want %d), encoding %q", w.status, w.n, want, w.h.Get("Content-Encoding"))
	}
	b.SetBytes(int64(want))
}

// serveContentOf is the baseline: http.ServeContent of body as a page,
// the way this server serves its files (serveFile).
func serveContentOf(body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		serveFile(w, r, "", time.Time{}, bytes.NewReader(body))
	})
}

func benchServeContent(b *testing.B, gzip bool) {
	s := newBench(b)
	body := s.body(b)
	h := serveContentOf(body)
	if gzip {
		h = middleware.Compress(5, "text/html")(h)
	}
	w := &discardWriter{h: http.Header{}}
	r := s.request(gzip)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w.reset()
		h.ServeHTTP(w, r)
	}
	b.StopTimer()
	if w.status != 200 || (!gzip && w.n != len(body)) || (gzip && w.h.Get("Content-Encoding") != "gzip") {
		b.Fatalf("last response: %d, %d bytes (want %d)", w.status, w.n, len(body))
	}
	b.SetBytes(int64(len(body)))
}

func BenchmarkLessonPage(b *testing.B)                { benchHandler(b, false) }
func BenchmarkServeContentSameBytes(b *testing.B)     { benchServeContent(b, false) }
func BenchmarkLessonPageGzip(b *testing.B)            { benchHandler(b, true) }
func BenchmarkServeContentSameBytesGzip(b *testing.B) { benchServeContent(b, true) }

// BenchmarkLessonPageVsServeContent alternates the two sides request by
// request, so load from other processes hits both alike, and reports
// their throughput ratio (handler ÷ ServeContent) as the "ratio" metric.
// `make bench` prints it.
func BenchmarkLessonPageVsServeContent(b *testing.B) { benchPair(b, newBench(b), pairOpts{}) }

// BenchmarkLessonPageVsServeContentSameServer is the pair with the
// baseline behind the middleware every response of the lab passes
// (Server.everyResponse: request id, security headers, the request's log
// line, recovery, body limits, compression): the page against the same
// bytes served as a static file by this server.
func BenchmarkLessonPageVsServeContentSameServer(b *testing.B) {
	benchPair(b, newBench(b), pairOpts{sameServer: true})
}

// BenchmarkLessonPageGzipVsServeContent is the pair as browsers ask
// (Accept-Encoding: gzip): the page from its pre-compressed parts
// (lesson_gzip.go) against ServeContent of the same bytes behind the
// middleware every response passes, whose compressor gzips the whole
// page per request, as pages were sent before.
func BenchmarkLessonPageGzipVsServeContent(b *testing.B) {
	benchPair(b, newBench(b), pairOpts{sameServer: true, gzip: true})
}

// BenchmarkLessonPageStaticVsServeContent is the same pair for the lesson
// with only its Markdown segments (no quiz forms, experiment widgets or
// interactive diagrams): the cost of the page machinery itself, apart from
// the features' per-request components.
func BenchmarkLessonPageStaticVsServeContent(b *testing.B) {
	b.Helper()
	s := newBench(b)
	course, _ := lessons.Load(lessons.Builtin, lessons.Options{})
	static := *course
	static.Lessons = nil
	for _, l := range course.Lessons {
		lc := *l
		lc.Pages = map[string]*lessons.Page{}
		for lang, p := range l.Pages {
			pc := *p
			pc.Body = nil
			for _, seg := range p.Body {
				if seg.Kind == lessons.SegHTML {
					pc.Body = append(pc.Body, seg)
				}
			}
			lc.Pages[lang] = &pc
		}
		static.Lessons = append(static.Lessons, &lc)
	}
	db, err := store.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	srv, err := New(Config{Course: func() *lessons.Course { return &static }, Store: db,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	s.handler = srv.Handler()
	benchPair(b, s, pairOpts{})
}

// pairOpts: the baseline behind Server.everyResponse, and requests that
// accept gzip.
type pairOpts struct{ sameServer, gzip bool }

func benchPair(b *testing.B, s benchSetup, o pairOpts) {
	body := s.body(b)
	base := serveContentOf(body)
	if o.sameServer {
		base = chi.Chain(s.srv.everyResponse()...).Handler(base)
	}
	w := &discardWriter{h: http.Header{}}
	r := s.request(o.gzip)
	check := func(side string) {
		if o.gzip && w.h.Get("Content-Encoding") != "gzip" {
			b.Fatalf("%s: not gzip (%q)", side, w.h.Get("Content-Encoding"))
		}
		if !o.gzip && w.n != len(body) {
			b.Fatalf("%s wrote %d bytes, want %d", side, w.n, len(body))
		}
	}
	var handlerTime, baseTime time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w.reset()
		t0 := time.Now()
		s.handler.ServeHTTP(w, r)
		t1 := time.Now()
		check("the page")
		w.reset()
		t2 := time.Now()
		base.ServeHTTP(w, r)
		t3 := time.Now()
		check("the baseline")
		handlerTime += t1.Sub(t0)
		baseTime += t3.Sub(t2)
	}
	b.StopTimer()
	b.ReportMetric(float64(baseTime)/float64(handlerTime), "ratio")
	b.ReportMetric(float64(handlerTime.Nanoseconds())/float64(b.N), "handler-ns/op")
	b.ReportMetric(float64(baseTime.Nanoseconds())/float64(b.N), "servecontent-ns/op")
	b.SetBytes(int64(len(body)))
}

// BenchmarkLessonPageVsServeContentHTTP is the pair served by a real
// net/http server on loopback, each request on one kept-alive connection,
// the two sides alternating: what a page costs the server with the
// connection's own work (HTTP parsing, the socket) counted, as a browser's
// request does. Its ratio is the page's goal (≥ 0.7); the baseline passes
// no middleware. The in-process pairs above are the handler alone.
func BenchmarkLessonPageVsServeContentHTTP(b *testing.B) {
	s := newBench(b)
	body := s.body(b)
	base := serveContentOf(body)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Bench-Base") != "" {
			base.ServeHTTP(w, r)
			return
		}
		s.handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 1, DisableCompression: true,
		DialContext: (&net.Dialer{}).DialContext,
	}}
	get := func(isBase bool) time.Duration {
		r := s.request(false)
		r.RequestURI = ""
		r.URL.Scheme, r.URL.Host = "http", srv.Listener.Addr().String()
		if isBase {
			r.Header.Set("X-Bench-Base", "1")
		}
		t0 := time.Now()
		resp, err := client.Do(r)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if err != nil || resp.StatusCode != 200 || n != int64(len(body)) {
			b.Fatalf("base %v: %d, %d bytes (want %d), %v", isBase, resp.StatusCode, n, len(body), err)
		}
		return d
	}
	var handlerTime, baseTime time.Duration
	b.ResetTimer()
	for b.Loop() {
		handlerTime += get(false)
		baseTime += get(true)
	}
	b.StopTimer()
	b.ReportMetric(float64(baseTime)/float64(handlerTime), "ratio")
	b.ReportMetric(float64(handlerTime.Nanoseconds())/float64(b.N), "handler-ns/op")
	b.ReportMetric(float64(baseTime.Nanoseconds())/float64(b.N), "servecontent-ns/op")
	b.SetBytes(int64(len(body)))
}
