package web

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/a-h/templ"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// The static lesson skeleton: what a returning learner's plain page view
// (no quiz answer to show, no widget form in the query) gets. Quiz forms,
// experiment widgets and the worth-it helper are rendered once per content
// load and language, by the same code as per request, for no learner and
// no query; holes are left only where the learner's own records go: each
// question's status line, the checkpoint's score, the completion box, and
// the CPU budget calculator when the learner has a measured figure. A
// request fills them from the store's per-learner caches, so a plain view
// costs no SQL query and no form building.
//
// A segment that comes to depend on the request or the learner in another
// way must get a hole here (or make plainRequest false), or the static
// skeleton would show every learner the same.

// staticSegments returns lessonView's hole function for the static
// skeleton of l in lang: segment i rendered for no learner, with mark
// placing the learner's holes (-1: the completion box).
func (s *Server) staticSegments(c *lessons.Course, l *lessons.Lesson, lang string,
	mark func(skeletonHole) templ.Component) func(int) templ.Component {
	pg := l.Page(lang)
	lr := &lessonRequest{
		// No query, no learner: the widgets as a first visit shows them.
		r:    &http.Request{Method: http.MethodGet, URL: &url.URL{Path: page.LessonHref(l.Slug)}},
		Lang: lang, T: tr(lang), Course: c, Lesson: l, Page: pg,
		State: lessonState{Quiz: &quizPage{loaded: true, placedAt: map[string]int{}, hole: mark}},
	}
	return func(i int) templ.Component {
		if i < 0 {
			return mark(skeletonHole{kind: holeComplete})
		}
		seg := pg.Body[i]
		if seg.Kind == lessons.SegTask {
			// The learner's done mark and check count.
			return mark(skeletonHole{kind: holeTask, segment: i, memo: &renderMemo{}})
		}
		if seg.Kind == lessons.SegDiagram && seg.ID == "cpu-budget" {
			var plain bytes.Buffer
			if err := s.segment(lr, seg).Render(context.Background(), &plain); err != nil {
				return failing(err)
			}
			return mark(skeletonHole{kind: holeCPUBudget, segment: i, plain: plain.String()})
		}
		if seg.Kind == lessons.SegTerminal {
			// Its "n of max in use" line changes all the time.
			return mark(skeletonHole{kind: holeTerminal, segment: i, memo: &renderMemo{}})
		}
		// Built now, in page order: quiz DOM ids follow the order of
		// placements.
		return s.segment(lr, seg)
	}
}

// plainRequest reports whether the static skeleton shows the request's
// page: no graded answer or rejected submission to show, and no query
// parameter but the language and the attempt to show (widget forms answer
// in the query; an unknown parameter takes the per-request path, to be safe).
func plainRequest(r *http.Request, st lessonState) bool {
	if st.Quiz != nil && st.Quiz.Shown != nil {
		return false
	}
	if r.URL.RawQuery == "" {
		return true
	}
	for k := range r.URL.Query() {
		switch k {
		case "lang", "attempt", "at", "reveal":
		default:
			return false
		}
	}
	return true
}

// fillHole is the content of hole h for the request.
func (s *Server) fillHole(lr *lessonRequest, h skeletonHole, completed bool) templ.Component {
	switch h.kind {
	case holeComplete:
		if lr.Graded != nil {
			return s.gradedBox(lr)
		}
		return views.CompleteBox(lr.T, completed, page.LessonHref(lr.Lesson.Slug)+"/complete")
	case holeQuizStatus:
		qp, err := s.quizState(lr)
		if err != nil {
			return failing(err)
		}
		return statusLine(lr.Lang, summaryStatus(qp.status[h.id]))
	case holeQuizScore:
		qp, err := s.quizState(lr)
		if err != nil {
			return failing(err)
		}
		n := 0
		for _, id := range h.ids {
			if qp.status[id].EverCorrect {
				n++
			}
		}
		return templ.Raw(strconv.Itoa(n))
	case holeQuizOptions:
		q := lr.Course.Questions[h.id]
		if q == nil {
			return templ.NopComponent
		}
		return orderedOptions(q, q.OptionOrder(lr.Learner), h.items)
	case holeTask:
		// The widget depends on the learner only through the record,
		// which takes few values: rendered once per value.
		seg := lr.Page.Body[h.segment]
		recs, err := s.learnerTasks(lr)
		if err != nil {
			return failing(err)
		}
		rec := recs[seg.ID]
		if rec.Checks > maxMemoAttempts {
			return s.segment(lr, seg)
		}
		return h.memo.get(strconv.FormatBool(rec.Done())+"/"+strconv.Itoa(rec.Checks), func() templ.Component { return s.segment(lr, seg) })
	case holeTerminal:
		key := ""
		if s.cfg.Terminals != nil {
			key = s.terminalsInUse(lr.Lang)
		}
		return h.memo.get(key, func() templ.Component { return s.segment(lr, lr.Page.Body[h.segment]) })
	case holeCPUBudget:
		if _, ok, err := s.latestTCPCost(lr.r.Context(), lr.Learner); err == nil && !ok {
			return templ.Raw(h.plain) // trusted: rendered by our own templates when the skeleton was built
		}
		// The learner's figure (or a store error, which the widget
		// logs and shows the rule of thumb for).
		return s.segment(lr, lr.Page.Body[h.segment])
	}
	return s.segment(lr, lr.Page.Body[h.segment])
}

// optionsHole is the hole for a choice question's options in the static
// skeleton: v is the question as a first visit shows it, whose option
// items are rendered now, once per content load; the request only puts
// them in the learner's own order (quiz.Question.OptionsFor).
func optionsHole(q *quiz.Question, dom string, v views.QuizQuestion) skeletonHole {
	h := skeletonHole{kind: holeQuizOptions, id: q.ID, dom: dom, items: make(map[string]string, len(v.Options))}
	one := v
	for _, o := range v.Options {
		one.Options = []views.QuizOption{o}
		var b strings.Builder
		if err := views.QuizOptionItems(one).Render(context.Background(), &b); err != nil {
			// Our own template over our own data: cannot fail but on a
			// bug, which the request then shows as a 500.
			h.items = nil
			return h
		}
		h.items[o.ID] = b.String()
	}
	return h
}

// orderedOptions writes the pre-rendered option items in order (indexes
// into q.Options); an item
// missing (a failed pre-render) fails the page with a clean 500.
func orderedOptions(q *quiz.Question, order []int, items map[string]string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		for _, k := range order {
			id := q.Options[k].ID
			item, ok := items[id]
			if !ok {
				return fmt.Errorf("lesson skeleton: option %q of question %s has no pre-rendered item", id, q.ID)
			}
			if _, err := io.WriteString(w, item); err != nil {
				return err
			}
		}
		return nil
	})
}

// renderMemo keeps a hole's renderings by the few values it depends on
// (a task's record, the terminals' use line). It lives in a skeleton, so
// a content reload starts it afresh; past renderMemoMax values it renders
// without keeping.
type renderMemo struct {
	m sync.Map // key → templ.Component (templ.Raw of the rendering)
	n atomic.Int32
}

const renderMemoMax = 256

// get is the kept rendering for key, rendering it with render on a miss.
func (m *renderMemo) get(key string, render func() templ.Component) templ.Component {
	if v, ok := m.m.Load(key); ok {
		return v.(templ.Component)
	}
	c := render()
	if m.n.Load() >= renderMemoMax {
		return c
	}
	var b bytes.Buffer
	if err := c.Render(context.Background(), &b); err != nil {
		return failing(err)
	}
	v, loaded := m.m.LoadOrStore(key, templ.Raw(b.String())) // trusted: our own templates' output
	if !loaded {
		m.n.Add(1)
	}
	return v.(templ.Component)
}

// statusLines memoizes status lines by language and record: a page shows
// one per question, and records take few values (rendering them was most
// of a plain page view's remaining cost).
// A map under a lock, not a sync.Map: its key, boxed as an interface for
// each lookup, was an allocation per question per page.
var (
	statusLinesMu sync.RWMutex
	statusLines   = map[statusLineKey]templ.Component{}
)

// blankStatusLines is the status line of an unanswered question, by language.
var blankStatusLines sync.Map // lang → templ.Component

func blankStatusLine(lang string) templ.Component {
	if v, ok := blankStatusLines.Load(lang); ok {
		return v.(templ.Component)
	}
	var b bytes.Buffer
	if err := views.QuizStatusLine(tr(lang), views.QuizStatus{}).Render(context.Background(), &b); err != nil {
		return nil // the general path renders it, and fails visibly
	}
	v, _ := blankStatusLines.LoadOrStore(lang, templ.Raw(b.String())) // trusted: our own template's output
	return v.(templ.Component)
}

type statusLineKey struct {
	lang string
	st   views.QuizStatus
}

// maxMemoAttempts bounds the memo: records with more attempts are rare and
// rendered each time.
const maxMemoAttempts = 100

// statusLine is the rendered status line of record st in lang.
func statusLine(lang string, st views.QuizStatus) templ.Component {
	if st.Attempts > maxMemoAttempts {
		return views.QuizStatusLine(tr(lang), st)
	}
	if st == (views.QuizStatus{}) {
		// Not answered yet: most questions of most pages, looked up
		// without hashing the record.
		if v := blankStatusLine(lang); v != nil {
			return v
		}
	}
	// Looked up before the component is made: a hit (nearly every
	// request) then costs no closure.
	key := statusLineKey{lang, st}
	statusLinesMu.RLock()
	v, ok := statusLines[key]
	statusLinesMu.RUnlock()
	if ok {
		return v
	}
	c := views.QuizStatusLine(tr(lang), st)
	var b bytes.Buffer
	if err := c.Render(context.Background(), &b); err != nil {
		return failing(err)
	}
	v = templ.Raw(b.String()) // trusted: our own template's output
	statusLinesMu.Lock()
	statusLines[key] = v
	statusLinesMu.Unlock()
	return v
}
