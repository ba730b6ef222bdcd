package web

import (
	"net/http"
	"net/url"

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
	if !sameOrigin(r) {
		s.errorPage(w, r, http.StatusForbidden)
		return
	}
	if err := s.cfg.Store.MarkCompleted(r.Context(), learnerID(r), slug); err != nil {
		s.internalError(w, r, err)
		return
	}
	http.Redirect(w, r, lessonHref(slug)+"#complete", http.StatusSeeOther)
}

// sameOrigin rejects form posts from other sites. Browsers send Origin on
// POST; a missing header (old clients, curl) is allowed because the
// SameSite=Lax cookie already keeps cross-site posts from acting as the
// learner.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}
