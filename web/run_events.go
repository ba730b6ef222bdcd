package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// runEvents is GET /api/runs/{id}/events: the run's events as Server-Sent
// Events — the stored ones after Last-Event-ID first, then live ones as the
// runner emits them — ending with `event: end` after the final status.
// A finished run replays and ends at once. The streaming is the hub's
// (runhub.Hub.Stream); a run it is not streaming is looked up here first
// (404 for none).
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	hub := s.cfg.Runs
	if hub == nil {
		s.WriteError(w, r, errSandboxOff)
		return
	}
	err := hub.Stream(w, r, chi.URLParam(r, "id"), func() error {
		_, err := s.loadRun(r)
		return err
	})
	if err != nil {
		s.WriteError(w, r, err)
	}
}
