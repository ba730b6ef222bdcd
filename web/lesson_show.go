package web

import (
	"html/template"
	"net/http"
	"strings"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// lessonShow is GET /lessons/{slug}. The body was rendered when the content
// was loaded; this handler only records the visit and assembles the page.
func (s *Server) lessonShow(w http.ResponseWriter, r *http.Request) {
	s.serveLesson(w, r, lessonState{Slug: chi.URLParam(r, "slug"), Status: http.StatusOK, Quiz: s.quizQuery(r)})
}

// lessonState is what a request adds to a lesson page. Handlers that
// re-render the page after a form post (quiz answers) fill in their part.
type lessonState struct {
	Slug   string
	Status int
	// QuizResults are graded answers from a form post, by question id, shown
	// in place of the empty question forms.
	QuizResults map[string]*quiz.Result
	// Quiz is the quiz feature's per-request state (quiz_view.go): a graded
	// attempt or a rejected submission to show, the learner's records.
	Quiz *quizPage
}

// lessonRequest is everything a segment renderer may need.
type lessonRequest struct {
	r       *http.Request
	Lang    string
	T       views.Tr
	Learner string
	Course  *lessons.Course
	Lesson  *lessons.Lesson
	Page    *lessons.Page
	State   lessonState
	// Draft: the page is an instructor's preview of a draft (draft_preview.go):
	// nothing on it reads or records a learner's progress.
	Draft bool

	tasks map[string]store.TaskProgress // the learner's :::task records, loaded on first use (task_check.go)
	// Graded: the lesson is graded work for the learner (graded.go), with
	// their record in it; nil in practice mode.
	Graded *gradedLesson
}

// serveLesson renders the lesson page for st.Slug, or the 404 page.
//
// Everything that is the same for every learner (layout, head, objectives,
// TOC, pre-rendered body HTML, references, pager) comes from the page's
// skeleton, built once per content load; per request only the holes are
// rendered. A plain view uses the static skeleton (lesson_static.go), whose
// holes are only the learner's records; a view showing a quiz answer or
// answering a widget's form renders every directive segment (quiz forms,
// experiment widgets) and the learner's completion box.
func (s *Server) serveLesson(w http.ResponseWriter, r *http.Request, st lessonState) {
	s.serveLessonFrom(w, r, st, plainRequest(r, st) && !s.answeredHere(r, st.Slug))
}

// answeredHere reports whether the learner has answered (or asked the
// answer of) a question on the lesson's page: the page then shows their
// latest answers (shownAt), which the static skeleton cannot. From the
// store's cached summary, so a first visit costs no query.
func (s *Server) answeredHere(r *http.Request, slug string) bool {
	l := s.course().Lesson(slug)
	if l == nil {
		return false
	}
	p := l.Page(page.LangOf(r))
	if p == nil {
		return false
	}
	sum, err := s.cfg.Store.LearnerQuizSummary(r.Context(), learnerID(r))
	if err != nil {
		return true // the per-request path reports the error
	}
	for _, id := range p.QuestionIDs {
		if st := sum[id]; st.Attempts > 0 || st.Revealed {
			return true
		}
	}
	return false
}

// serveLessonFrom is serveLesson from the static skeleton or the one with
// every directive segment per request (tests compare the two).
func (s *Server) serveLessonFrom(w http.ResponseWriter, r *http.Request, st lessonState, static bool) {
	c := s.course()
	l := c.Lesson(st.Slug)
	if l == nil {
		if to := c.AliasTarget(st.Slug); to != "" { // a renamed lesson's old slug (lessons/aliases.go)
			u := page.LessonHref(to)
			if r.URL.RawQuery != "" {
				u += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, u, http.StatusMovedPermanently)
			return
		}
		s.NotFound(w, r)
		return
	}
	lang := page.LangOf(r)
	pg := l.Page(lang)
	if pg == nil {
		s.NotFound(w, r)
		return
	}
	learner := learnerID(r)
	db := s.cfg.Store
	if !s.mayCreateLearner(r, learner) {
		// Recording "opened" would create this learner's row: past the
		// address's new-learner limit the page is still served, unrecorded.
	} else if err := db.MarkOpened(r.Context(), learner, l.Slug); err != nil {
		// Bookkeeping only: a locked or full database must not stop
		// anyone from reading (the fault tests check it).
		s.log.Warn("mark lesson opened", "lesson", l.Slug, "err", err)
	}
	progress, err := db.LearnerProgress(r.Context(), learner)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	graded, err := s.learnerGraded(r.Context(), learner, l)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	// A graded lesson's questions and completion box depend on the
	// learner's class and the time: the per-request path renders them.
	static = static && graded == nil
	sk, err := s.skeletons.get(c, l, lang, static, s.buildSkeleton)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	lr := &lessonRequest{r: r, Lang: lang, T: tr(lang), Learner: learner, Course: c, Lesson: l, Page: pg, State: st, Graded: graded}
	holes := make([]templ.Component, len(sk.holes))
	for i, h := range sk.holes {
		holes[i] = s.fillHole(lr, h, progress[l.Slug].Completed())
	}
	status := st.Status
	if status == 0 {
		status = http.StatusOK
	}
	s.renderSkeleton(w, r, status, sk, holes)
}

// lessonView is the learner-independent view of a lesson page. Per-request
// parts are left to holes: body segments that are not plain HTML, and the
// completion box. Add only what is the same for every learner here.
func (s *Server) lessonView(c *lessons.Course, l *lessons.Lesson, lang string, hole func(segment int) templ.Component) views.Lesson {
	pg := l.Page(lang)
	v := views.Lesson{
		Chrome: s.ChromeFor(lang, page.LessonHref(l.Slug), pg.Title),
		Slug:   l.Slug,
		Page:   pg,
	}
	v.Use(lessonAssets(c, l, pg, lang)...) // lesson_head.go
	v.Use(s.interactiveAssets(pg)...)      // stepthrough.go
	for _, slug := range pg.Prerequisites {
		v.Prereqs = append(v.Prereqs, lessonLink(c, slug, lang))
	}
	prev, next := c.Neighbours(l.Slug)
	if prev != nil {
		link := lessonLink(c, prev.Slug, lang)
		v.Prev = &link
	}
	if next != nil {
		link := lessonLink(c, next.Slug, lang)
		v.Next = &link
	}
	v.References = refsNotInBody(pg)
	v.Body = make([]templ.Component, len(pg.Body))
	for i, seg := range pg.Body {
		switch seg.Kind {
		case lessons.SegHTML:
			v.Body[i] = templ.Raw(seg.HTML) // trusted: rendered by lessons from the course's own files
		case lessons.SegDiagram:
			v.Body[i] = s.diagramSkeleton(lang, seg, func() templ.Component { return hole(i) }) // lesson_visuals.go
		default:
			v.Body[i] = hole(i)
		}
	}
	v.Complete = hole(-1)
	return v
}

// lessonLink links to the lesson with slug, titled in lang. An unknown slug
// (check reports it) shows the bare slug without a link.
func lessonLink(c *lessons.Course, slug, lang string) views.Link {
	l := c.Lesson(slug)
	if l == nil {
		return views.Link{Title: slug}
	}
	p := l.Page(lang)
	if p == nil {
		return views.Link{Title: slug}
	}
	return views.Link{Href: page.LessonHref(slug), Title: p.Title}
}

// refsNotInBody are the front-matter references the page's text does not
// already link (an author's own "Further reading" section): the references
// box lists only those, so no reference is listed twice.
func refsNotInBody(p *lessons.Page) []lessons.Reference {
	var body strings.Builder
	for _, seg := range p.Body {
		if seg.Kind == lessons.SegHTML {
			body.WriteString(string(seg.HTML))
		}
	}
	html := body.String()
	var out []lessons.Reference
	for _, r := range p.References {
		if r.URL != "" && (strings.Contains(html, `href="`+template.HTMLEscapeString(r.URL)+`"`) || strings.Contains(html, `href="`+r.URL+`"`)) {
			continue
		}
		out = append(out, r)
	}
	return out
}
