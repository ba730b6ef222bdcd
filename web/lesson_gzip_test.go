package web

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
)

// Every lesson page of the built-in course, in each language, gzip-encoded
// from its precompressed chunks, decodes (the standard library's reader
// checks the CRC-32 and the length) to exactly the page sent unencoded to
// the same learner; HEAD gives the same length as GET.
func TestLessonPageGzip(t *testing.T) {
	c, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, c)
	cl := env.client()
	for _, l := range c.Lessons {
		for _, lang := range []string{"zh", "en"} {
			path := "/lessons/" + l.Slug + "?lang=" + lang
			env.get(cl, path).Body.Close() // the first visit marks the lesson opened
			plain := readAll(t, env.get(cl, path, "Accept-Encoding", "identity"))
			// The first gzip page has standalone chunks and starts the
			// window-compressed ones; the next has those.
			first := gzipPage(t, env, cl, path, plain)
			waitAligned(t, env.Server)
			raw := gzipPage(t, env, cl, path, plain)
			var whole bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&whole, compressLevel)
			zw.Write(plain)
			zw.Close()
			t.Logf("%s: %d bytes plain; gzip: %d whole page, %d from standalone chunks, %d from windowed chunks", path, len(plain), whole.Len(), len(first), len(raw))
			if len(raw) > whole.Len()*12/10 {
				t.Errorf("%s: %d bytes gzip from chunks, %d for the whole page", path, len(raw), whole.Len())
			}
			req, _ := http.NewRequest("HEAD", env.HTTP.URL+path, nil)
			req.Header.Set("Accept-Encoding", "gzip")
			hr, err := cl.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			hr.Body.Close()
			if hr.ContentLength != int64(len(raw)) {
				t.Errorf("%s: HEAD Content-Length %d, GET sent %d", path, hr.ContentLength, len(raw))
			}
		}
	}
	// Learners who answered differently have holes of different lengths
	// (their records under the questions): past the first hole whose
	// length differs from the window's, the chunks go standalone, and the
	// page still decodes to the plain one.
	l := c.Lessons[0]
	if l.Quiz == nil || len(l.Quiz.Questions) < 2 {
		t.Fatalf("%s has no questions to answer", l.Slug)
	}
	path := "/lessons/" + l.Slug + "?lang=zh"
	all, one := env.client(), env.client()
	answer(t, env, all, l.Quiz.Questions...)
	answer(t, env, one, l.Quiz.Questions[len(l.Quiz.Questions)-1])
	plain := readAll(t, env.get(all, path, "Accept-Encoding", "identity"))
	gzipPage(t, env, all, path, plain)
	waitAligned(t, env.Server)
	gzipPage(t, env, all, path, plain)
	before := gzipRealigned.Load()
	plain = readAll(t, env.get(one, path, "Accept-Encoding", "identity"))
	gzipPage(t, env, one, path, plain)
	if gzipRealigned.Load() == before {
		t.Error("a learner with other answers had every hole as long as the first learner's: the standalone path went untested")
	}
	// The same learner's next page finds every hole's piece made: nothing
	// is compressed anew, and the page decodes the same.
	deflated := gzipHolesDeflated.Load()
	gzipPage(t, env, one, path, plain)
	if n := gzipHolesDeflated.Load() - deflated; n != 0 {
		t.Errorf("a page asked for again compressed %d holes anew, want 0 (holePieces)", n)
	}
}

// TestHolePiecesBounded: past its bound the hole cache starts over, and a
// hole's piece from the cache is the one compressed anew.
func TestHolePiecesBounded(t *testing.T) {
	c := pieceCache{max: 4 << 10}
	var fresh bytes.Buffer
	for i := range 200 {
		hole := []byte(fmt.Sprintf(`<p class="status">%d answered, %d to go</p>`, i, 200-i))
		var a, b bytes.Buffer
		if err := c.deflate(&a, hole); err != nil {
			t.Fatal(err)
		}
		if err := c.deflate(&b, hole); err != nil {
			t.Fatal(err)
		}
		fresh.Reset()
		if err := deflatePiece(&fresh, hole); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), fresh.Bytes()) || !bytes.Equal(b.Bytes(), fresh.Bytes()) {
			t.Fatalf("hole %d: pieces differ: first %x, cached %x, fresh %x", i, a.Bytes(), b.Bytes(), fresh.Bytes())
		}
		if c.bytes > c.max {
			t.Fatalf("after hole %d the cache holds %d bytes, over its %d", i, c.bytes, c.max)
		}
	}
	long := bytes.Repeat([]byte("x"), pieceCacheHoleMax+1)
	var out bytes.Buffer
	if err := c.deflate(&out, long); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.m[string(long)]; ok {
		t.Errorf("a hole of %d bytes was kept (the longest kept is %d)", len(long), pieceCacheHoleMax)
	}
}

// answer posts a well-formed answer to each question as c's learner.
func answer(t *testing.T, env *testEnv, c *http.Client, qs ...*quiz.Question) {
	t.Helper()
	for _, q := range qs {
		ans, _ := json.Marshal(map[string]any{"answer": firstAnswer(q)})
		req, _ := http.NewRequest("POST", env.HTTP.URL+"/api/quiz/"+q.ID+"/attempts", bytes.NewReader(ans))
		req.Header.Set("Content-Type", "application/json")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("answer %s: %d", q.ID, res.StatusCode)
		}
	}
}

// firstAnswer is a well-formed answer to q (right or wrong).
func firstAnswer(q *quiz.Question) any {
	switch q.Type {
	case quiz.Single:
		return q.Options[0].ID
	case quiz.Multi:
		return []string{q.Options[0].ID}
	case quiz.Order:
		ids := make([]string, len(q.Options))
		for i, o := range q.Options {
			ids[i] = o.ID
		}
		return ids
	default:
		return q.Value
	}
}

// gzipPage gets path gzip-encoded and checks it decodes to plain.
func gzipPage(t *testing.T, env *testEnv, cl *http.Client, path string, plain []byte) []byte {
	t.Helper()
	res := env.get(cl, path, "Accept-Encoding", "br;q=1.0, gzip;q=0.8")
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("%s: Content-Encoding %q", path, res.Header.Get("Content-Encoding"))
	}
	raw := readAll(t, res)
	if res.ContentLength != int64(len(raw)) {
		t.Errorf("%s: Content-Length %d, body %d bytes", path, res.ContentLength, len(raw))
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	zr.Multistream(false)
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: decoding the gzip page: %v", path, err)
	}
	if !bytes.Equal(got, plain) {
		t.Fatalf("%s: the gzip page (%d bytes decoded) differs from the plain one (%d bytes)", path, len(got), len(plain))
	}
	return raw
}

// waitAligned waits until every skeleton that started its windowed chunks has them.
func waitAligned(t *testing.T, s *Server) {
	t.Helper()
	for range 500 {
		done := true
		s.skeletons.mu.Lock()
		for _, b := range s.skeletons.m {
			if b.sk != nil && b.sk.gzAligning.Load() && b.sk.gzAligned.Load() == nil {
				done = false
			}
		}
		s.skeletons.mu.Unlock()
		if done {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the windowed chunks were not made in 5 s")
}

func readAll(t *testing.T, res *http.Response) []byte {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAcceptsGzip(t *testing.T) {
	for v, want := range map[string]bool{
		"": false, "gzip": true, "GZip": true, "deflate, gzip;q=0.5": true, "gzip;q=0": false,
		"gzip; q=0.0": false, "*": true, "br": false, "identity": false, "x-gzip": true,
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		if v != "" {
			r.Header.Set("Accept-Encoding", v)
		}
		if got := acceptsGzip(r); got != want {
			t.Errorf("Accept-Encoding %q: %v, want %v", v, got, want)
		}
	}
}
