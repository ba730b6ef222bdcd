package web

import (
	"context"
	"net/http"
	"time"
)

// healthz answers 200 "ok" when the database answers a query, 503 otherwise,
// so a supervisor restarts a lab whose database went away.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.cfg.Store.Ping(ctx); err != nil {
		s.log.Error("healthz: database does not answer", "err", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("database unavailable\n"))
		return
	}
	w.Write([]byte("ok\n"))
}
