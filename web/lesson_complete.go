package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// lessonComplete is POST /lessons/{slug}/complete: mark the lesson complete
// and go back to it (POST/redirect/GET, so reloading does not resubmit).
func (s *Server) lessonComplete(w http.ResponseWriter, r *http.Request) {
	slug := chi.URLParam(r, "slug")
	if s.course().Lesson(slug) == nil {
		s.notFound(w, r)
		return
	}
	if err := s.cfg.Store.MarkCompleted(r.Context(), learnerID(r), slug); err != nil {
		s.internalError(w, r, err)
		return
	}
	http.Redirect(w, r, lessonHref(slug)+"#complete", http.StatusSeeOther)
}
