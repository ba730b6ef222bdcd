package web

import (
	"net/http"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/web/views"
)

// lessonShow is GET /lessons/{slug}. The body was rendered when the content
// was loaded; this handler only records the visit and assembles the page.
func (s *Server) lessonShow(w http.ResponseWriter, r *http.Request) {
	s.serveLesson(w, r, lessonState{Slug: chi.URLParam(r, "slug"), Status: http.StatusOK, Quiz: s.quizFromQuery(r)})
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
}

// serveLesson renders the lesson page for st.Slug, or the 404 page.
func (s *Server) serveLesson(w http.ResponseWriter, r *http.Request, st lessonState) {
	c := s.course()
	l := c.Lesson(st.Slug)
	if l == nil {
		s.notFound(w, r)
		return
	}
	lang := langOf(r)
	page := l.Page(lang)
	if page == nil {
		s.notFound(w, r)
		return
	}
	learner := learnerID(r)
	db := s.cfg.Store
	if err := db.MarkOpened(r.Context(), learner, l.Slug); err != nil {
		s.internalError(w, r, err)
		return
	}
	progress, err := db.LearnerProgress(r.Context(), learner)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	pr, opened := progress[l.Slug]

	v := views.Lesson{
		Chrome:         s.chrome(r, page.Title),
		Slug:           l.Slug,
		Page:           page,
		Opened:         opened,
		Completed:      pr.Completed(),
		CompleteAction: lessonHref(l.Slug) + "/complete",
	}
	for _, slug := range page.Prerequisites {
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
	lr := &lessonRequest{r: r, Lang: lang, T: v.T, Learner: learner, Course: c, Lesson: l, Page: page, State: st}
	v.Body = make([]templ.Component, len(page.Body))
	for i, seg := range page.Body {
		v.Body[i] = s.segment(lr, seg)
	}
	status := st.Status
	if status == 0 {
		status = http.StatusOK
	}
	s.render(w, r, status, views.LessonView(v))
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
	return views.Link{Href: lessonHref(slug), Title: p.Title}
}
