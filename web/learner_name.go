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

// meSignOut is POST /me/signout: the browser becomes a new anonymous
// learner (a shared lab PC after a student who claimed a roster seat; the
// seat and its work stay, and the codes sign in again).
func (s *Server) meSignOut(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	s.setLearnerCookie(w, r, store.NewLearnerID())
	http.Redirect(w, r, "/", http.StatusSeeOther)
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
	if errors.Is(err, store.ErrRosterName) {
		old, _ := s.cfg.Store.DisplayName(r.Context(), learnerID(r))
		s.renderMe(w, r, http.StatusConflict, views.DisplayNameForm{Name: old, Error: tr(langOf(r))("me.roster")})
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
	seats, err := s.cfg.Store.LearnerSeats(r.Context(), learnerID(r))
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	for _, st := range seats {
		v.Seats = append(v.Seats, st.StudentID+" "+st.Name+" ("+st.ClassName+")")
	}
	if len(v.Seats) > 0 {
		v.SignOutAction = "/me/signout"
	}
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
