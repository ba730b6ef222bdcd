package web

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/a-h/templ"

	"github.com/rdmalab/rdmalab/lessons"
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
	page := l.Page(lang)
	lr := &lessonRequest{
		// No query, no learner: the widgets as a first visit shows them.
		r:    &http.Request{Method: http.MethodGet, URL: &url.URL{Path: lessonHref(l.Slug)}},
		Lang: lang, T: tr(lang), Course: c, Lesson: l, Page: page,
		State: lessonState{Quiz: &quizPage{loaded: true, placedAt: map[string]int{}, hole: mark}},
	}
	return func(i int) templ.Component {
		if i < 0 {
			return mark(skeletonHole{kind: holeComplete})
		}
		seg := page.Body[i]
		if seg.Kind == lessons.SegTask {
			return mark(skeletonHole{kind: holeSegment, segment: i}) // the learner's done mark
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
			return mark(skeletonHole{kind: holeSegment, segment: i})
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
		return views.CompleteBox(lr.T, completed, lessonHref(lr.Lesson.Slug)+"/complete")
	case holeQuizStatus:
		qp, err := s.quizState(lr)
		if err != nil {
			return failing(err)
		}
		return statusLine(lr.Lang, views.QuizStatus(qp.status[h.id]))
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
		v := questionView(lr.Lang, q, h.dom, lr.Lesson.Slug, 0, views.QuizStatus{}, nil, quizCtx{Learner: lr.Learner})
		return views.QuizOptionItems(v)
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

// statusLines memoizes status lines by language and record: a page shows
// one per question, and records take few values (rendering them was most
// of a plain page view's remaining cost).
var statusLines sync.Map // statusLineKey → templ.Component

type statusLineKey struct {
	lang string
	st   views.QuizStatus
}

// maxMemoAttempts bounds the memo: records with more attempts are rare and
// rendered each time.
const maxMemoAttempts = 100

// statusLine is the rendered status line of record st in lang.
func statusLine(lang string, st views.QuizStatus) templ.Component {
	c := views.QuizStatusLine(tr(lang), st)
	if st.Attempts > maxMemoAttempts {
		return c
	}
	key := statusLineKey{lang, st}
	if v, ok := statusLines.Load(key); ok {
		return v.(templ.Component)
	}
	var b bytes.Buffer
	if err := c.Render(context.Background(), &b); err != nil {
		return failing(err)
	}
	v, _ := statusLines.LoadOrStore(key, templ.Raw(b.String())) // trusted: our own template's output
	return v.(templ.Component)
}
