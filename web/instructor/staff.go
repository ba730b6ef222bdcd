package instructor

import (
	"net/http"

	"github.com/rdmalab/rdmalab/store"
)

// markStaff records the request's learner cookie as an instructor's (their
// visits, answers and runs then never count in class statistics). Called
// when an instructor session starts, and (MarkStaffWrite) by the learner
// side's guardWrites on every write of
// a browser that carries a live instructor session.
func (s *Area) markStaff(r *http.Request, in store.Instructor) {
	id := s.cfg.Learners.CookieLearner(r)
	if id == "" {
		return
	}
	if err := s.cfg.Store.MarkStaff(r.Context(), id, in.ID); err != nil {
		s.log.Warn("mark instructor's learner id", "err", err)
	}
}

// MarkStaffWrite is markStaff for a learner write whose browser also holds
// an instructor session (the learner id may be new since the login): the
// learner side's write guard calls it.
func (s *Area) MarkStaffWrite(r *http.Request) {
	if _, err := r.Cookie(SessionCookie); err != nil {
		return
	}
	if in, _, err := s.sessionInstructor(r); err == nil {
		if id := s.cfg.Learners.LearnerID(r); id != "" {
			if err := s.cfg.Store.MarkStaff(r.Context(), id, in.ID); err != nil {
				s.log.Warn("mark instructor's learner id", "err", err)
			}
		}
	}
}
