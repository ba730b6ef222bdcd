package web

import (
	"net/http"

	"github.com/rdmalab/rdmalab/store"
)

// markStaff records the request's learner cookie as an instructor's (their
// visits, answers and runs then never count in class statistics). Called
// when an instructor session starts, and by guardWrites on every write of
// a browser that carries a live instructor session.
func (s *Server) markStaff(r *http.Request, in store.Instructor) {
	c, err := r.Cookie(learnerCookie)
	if err != nil {
		return
	}
	id := s.cookieLearner(c.Value)
	if id == "" {
		return
	}
	if err := s.cfg.Store.MarkStaff(r.Context(), id, in.ID); err != nil {
		s.log.Warn("mark instructor's learner id", "err", err)
	}
}

// markStaffWrite is markStaff for a learner write whose browser also holds
// an instructor session (the learner id may be new since the login).
func (s *Server) markStaffWrite(r *http.Request) {
	if _, err := r.Cookie(instructorCookie); err != nil {
		return
	}
	if in, _, err := s.sessionInstructor(r); err == nil {
		if id := learnerID(r); id != "" {
			if err := s.cfg.Store.MarkStaff(r.Context(), id, in.ID); err != nil {
				s.log.Warn("mark instructor's learner id", "err", err)
			}
		}
	}
}
