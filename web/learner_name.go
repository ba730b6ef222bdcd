package web

import (
	"errors"
	"net/http"

	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/views"
)

// The learner's display name: optional, shown to instructors only (the
// dashboard and the CSV exports), never to other learners.

// meShow is GET /me.
func (s *Server) meShow(w http.ResponseWriter, r *http.Request) {
	name, err := s.cfg.Store.DisplayName(r.Context(), learnerID(r))
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	s.renderMe(w, r, http.StatusOK, views.DisplayNameForm{Name: name, Saved: r.URL.Query().Has("saved")})
}

// meUpdate is POST /me (form field "name"; empty clears it).
func (s *Server) meUpdate(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	name := r.PostFormValue("name")
	err := s.cfg.Store.SetDisplayName(r.Context(), learnerID(r), name)
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		s.renderMe(w, r, http.StatusUnprocessableEntity, views.DisplayNameForm{
			Name: name, Error: trf(langOf(r), "me.toolong", store.MaxDisplayName)})
		return
	}
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	http.Redirect(w, r, "/me?saved=1", http.StatusSeeOther)
}

func (s *Server) renderMe(w http.ResponseWriter, r *http.Request, status int, v views.DisplayNameForm) {
	v.Chrome = s.chrome(r, tr(langOf(r))("me.title"))
	v.Action = "/me"
	s.render(w, r, status, views.DisplayNameView(v))
}

// parseForm parses a form post and answers 400 when it is malformed: a
// body that fails to parse must not look like an empty form (which would,
// say, clear a display name).
func (s *Server) parseForm(w http.ResponseWriter, r *http.Request) bool {
	if err := r.ParseForm(); err != nil {
		s.log.Warn("malformed form", "path", r.URL.Path, "err", err)
		s.errorPage(w, r, http.StatusBadRequest)
		return false
	}
	return true
}
