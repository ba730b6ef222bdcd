package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// lessonComplete is POST /lessons/{slug}/complete: mark the lesson complete
// and go back to it (POST/redirect/GET, so reloading does not resubmit).
func (s *Server) lessonComplete(w http.ResponseWriter, r *http.Request) {
	slug := chi.URLParam(r, "slug")
	l := s.course().Lesson(slug)
	if l == nil {
		s.NotFound(w, r)
		return
	}
	// Graded work is complete when the work says so (graded.go), not when
	// the learner does.
	if _, graded, err := s.cfg.Store.LearnerGradedLesson(r.Context(), learnerID(r), slug); err != nil {
		s.InternalError(w, r, err)
		return
	} else if graded && l.Quiz != nil {
		t := tr(page.LangOf(r))
		s.Render(w, r, http.StatusConflict, views.ErrorView(views.ErrorPage{Chrome: s.Chrome(r, t("graded.box.title")),
			Status: http.StatusConflict, Heading: t("graded.box.title"), Message: t("graded.complete.refused")}))
		return
	}
	if err := s.cfg.Store.MarkCompleted(r.Context(), learnerID(r), slug); err != nil {
		s.InternalError(w, r, err)
		return
	}
	http.Redirect(w, r, page.LessonHref(slug)+"#complete", http.StatusSeeOther)
}
