package web

import (
	"bytes"
	"context"
	"fmt"
	"github.com/rdmalab/rdmalab/web/page"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/a-h/templ"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/web/views"
)

// skeleton is a lesson page rendered once per content load and language,
// cut at its holes: the page is chunks[0] hole[0] chunks[1] … hole[n-1]
// chunks[n].
type skeleton struct {
	chunks [][]byte
	gz     [][]byte // each chunk compressed on its own (lesson_gzip.go)
	holes  []skeletonHole
	// gzAligned: the chunks compressed with the page before them as their
	// window, made once in the background (gzAligning) after a first request.
	gzAligned  atomic.Pointer[gzipAligned]
	gzAligning atomic.Bool
}

// skeletonHole says what fills a hole.
type skeletonHole struct {
	kind    holeKind
	segment int      // holeSegment, holeCPUBudget: the body segment
	id      string   // holeQuizStatus, holeQuizOptions: the question
	plain   string   // holeCPUBudget: the widget as a learner without a measured figure sees it
	dom     string   // holeQuizOptions: the question's DOM id on the page
	ids     []string // holeQuizScore: the questions the checkpoint asks
	// holeQuizOptions: each option's list item as a first visit shows it
	// (nothing checked, no result), by option id; a request only orders them.
	items map[string]string
	memo  *renderMemo // holeTask, holeTerminal: renderings by the values they depend on
}

// holeKind is what a hole holds. A page skeleton either leaves every
// directive segment to the request (holeSegment), or, in the static
// skeleton (lesson_static.go), renders them all once and leaves holes
// only where the learner's own records go.
type holeKind uint8

const (
	holeSegment     holeKind = iota // a body segment, rendered per request
	holeComplete                    // the learner's completion box
	holeQuizStatus                  // the learner's record on a question, under its form
	holeQuizScore                   // the checkpoint's count of questions answered right
	holeCPUBudget                   // the CPU budget calculator, prefilled from the learner's tcp-cost run if any
	holeQuizOptions                 // a choice question's options in the learner's own order
	holeTask                        // a :::task with the learner's done mark and check count
	holeTerminal                    // the ::terminal widget with the machines' use line
)

// holeMarker opens the marker written where hole N goes while the skeleton
// is built: "\x00hole N\x00". NUL never occurs in rendered pages (goldmark
// and templ replace it), so a marker cannot collide with content.
const holeMarker = "\x00hole "

// buildSkeleton renders the lesson with markers in its holes and cuts it.
// The static skeleton renders every segment for no learner and no query,
// with holes for the learner's records only; the other one leaves each
// directive segment to the request.
func (s *Server) buildSkeleton(c *lessons.Course, l *lessons.Lesson, lang string, static bool) (*skeleton, error) {
	var placed []skeletonHole
	mark := func(h skeletonHole) templ.Component {
		n := len(placed)
		placed = append(placed, h)
		return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
			_, err := fmt.Fprintf(w, "%s%d\x00", holeMarker, n)
			return err
		})
	}
	hole := func(segment int) templ.Component {
		if segment < 0 {
			return mark(skeletonHole{kind: holeComplete})
		}
		return mark(skeletonHole{kind: holeSegment, segment: segment})
	}
	if static {
		hole = s.staticSegments(c, l, lang, mark)
	}
	v := s.lessonView(c, l, lang, hole)
	var buf bytes.Buffer
	if err := views.LessonView(v).Render(context.Background(), &buf); err != nil {
		return nil, fmt.Errorf("render lesson %s (%s): %w", l.Slug, lang, err)
	}
	sk, err := cutSkeleton(buf.Bytes(), placed)
	if err != nil {
		return nil, fmt.Errorf("render lesson %s (%s): %w", l.Slug, lang, err)
	}
	if sk.gz, err = deflateChunks(sk.chunks); err != nil {
		return nil, fmt.Errorf("compress lesson %s (%s): %w", l.Slug, lang, err)
	}
	return sk, nil
}

// cutSkeleton splits a page rendered with hole markers. Holes come out in
// page order, whatever order the view model placed them in; each placed
// hole must appear exactly once.
func cutSkeleton(page []byte, placed []skeletonHole) (*skeleton, error) {
	sk := &skeleton{}
	seen := make([]bool, len(placed))
	for {
		i := bytes.Index(page, []byte(holeMarker))
		if i < 0 {
			break
		}
		rest := page[i+len(holeMarker):]
		j := bytes.IndexByte(rest, 0)
		if j < 0 {
			return nil, fmt.Errorf("unterminated hole marker")
		}
		n, err := strconv.Atoi(string(rest[:j]))
		if err != nil || n < 0 || n >= len(placed) || seen[n] {
			return nil, fmt.Errorf("bad or repeated hole marker %q", rest[:j])
		}
		seen[n] = true
		sk.chunks = append(sk.chunks, page[:i])
		sk.holes = append(sk.holes, placed[n])
		page = rest[j+1:]
	}
	sk.chunks = append(sk.chunks, page)
	if len(sk.holes) != len(placed) {
		return nil, fmt.Errorf("%d holes placed, %d rendered (a component dropped one)", len(placed), len(sk.holes))
	}
	return sk, nil
}

// skeletonCache holds the skeletons of one content load; a new load (a
// different *Course) starts it afresh, so a reload never serves old pages.
// One build per key: the requests that miss together wait for it (a class
// opening a lesson at once after a start used to build it once each).
type skeletonCache struct {
	mu     sync.Mutex
	course *lessons.Course
	m      map[skeletonKey]*skeletonBuild
}

type skeletonKey struct {
	slug, lang string
	static     bool
}

// skeletonBuild is one key's build: done closes when sk or err is set.
type skeletonBuild struct {
	done chan struct{}
	sk   *skeleton
	err  error
}

func (sc *skeletonCache) get(c *lessons.Course, l *lessons.Lesson, lang string, static bool,
	build func(*lessons.Course, *lessons.Lesson, string, bool) (*skeleton, error)) (*skeleton, error) {
	key := skeletonKey{l.Slug, lang, static}
	sc.mu.Lock()
	if sc.course != c {
		sc.course, sc.m = c, map[skeletonKey]*skeletonBuild{}
	}
	b := sc.m[key]
	if b != nil {
		sc.mu.Unlock()
		<-b.done
		return b.sk, b.err
	}
	b = &skeletonBuild{done: make(chan struct{})}
	sc.m[key] = b
	sc.mu.Unlock()
	b.sk, b.err = build(c, l, lang, static)
	close(b.done)
	if b.err != nil {
		// A failed build is not kept: the next request tries again.
		sc.mu.Lock()
		if sc.m[key] == b {
			delete(sc.m, key)
		}
		sc.mu.Unlock()
	}
	return b.sk, b.err
}

// WarmPages builds every lesson page's skeletons (each language, both
// kinds) for the current content, so the first learners after a start
// do not wait for them: under make load the first half second after a
// start had p99s of 200–300 ms while the pages were built. It returns the
// first error; a page that fails to build fails again, visibly, when
// asked for.
func (s *Server) WarmPages() error {
	c := s.course()
	var first error
	for _, l := range c.Lessons {
		for _, lang := range []string{"zh", "en"} {
			if l.Page(lang) == nil {
				continue
			}
			for _, static := range []bool{true, false} {
				if _, err := s.skeletons.get(c, l, lang, static, s.buildSkeleton); err != nil && first == nil {
					first = err
				}
			}
		}
	}
	return first
}

// renderSkeleton writes the page: the holes are rendered first (into one
// pooled buffer), so a failing component still yields a clean 500 and the
// response carries a Content-Length; the page then leaves in one write
// (writeOnce).
func (s *Server) renderSkeleton(w http.ResponseWriter, r *http.Request, status int, sk *skeleton, holes []templ.Component) {
	buf := page.Buffer()
	defer page.PutBuffer(buf)
	var ends [16]int
	end := ends[:0]
	for _, h := range holes {
		if err := h.Render(r.Context(), buf); err != nil {
			s.InternalError(w, r, err)
			return
		}
		end = append(end, buf.Len())
	}
	size := buf.Len()
	for _, c := range sk.chunks {
		size += len(c)
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "private, no-cache")
	h.Set("Vary", "Cookie, Accept-Language, Accept-Encoding")
	if !s.cfg.NoCompress && sk.gz != nil && acceptsGzip(r) &&
		writeGzipSkeleton(w, r, status, sk, buf.Bytes(), end) {
		return
	}
	h.Set("Content-Length", strconv.Itoa(size))
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	parts := make([][]byte, 0, 2*len(sk.chunks))
	filled := buf.Bytes()
	start := 0
	for i, c := range sk.chunks {
		parts = append(parts, c)
		if i < len(end) {
			parts = append(parts, filled[start:end[i]])
			start = end[i]
		}
	}
	writeOnce(w, size, parts)
}

// writeOnce writes a page's parts to w in one Write. Written part by part,
// every small hole between two large chunks cost net/http's buffers an
// extra socket write: over a loopback connection a lesson page took 230 µs
// to serve against 150 µs for ServeContent's one write of the same bytes
// (BenchmarkLessonPageVsServeContentHTTP); copying it whole costs a few µs.
func writeOnce(w io.Writer, size int, parts [][]byte) {
	out := page.Buffer()
	defer page.PutBuffer(out)
	out.Grow(size)
	for _, p := range parts {
		out.Write(p)
	}
	_, _ = w.Write(out.Bytes()) // an error is the client gone
}
