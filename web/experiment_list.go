package web

import (
	"net/http"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/web/page"
)

// experimentJSON is one experiment as GET /api/experiments shows it.
type experimentJSON struct {
	*sandbox.Experiment
	TimeoutSeconds float64 `json:"timeout_seconds"`
}

// experimentList is GET /api/experiments: every experiment with its titles,
// params (kind, bounds, default, choices), presets and what it needs.
func (s *Server) experimentList(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Experiments == nil {
		s.WriteError(w, r, errSandboxOff)
		return
	}
	list := s.cfg.Experiments.List()
	out := make([]experimentJSON, len(list))
	for i, e := range list {
		timeout := e.Timeout
		if timeout <= 0 {
			timeout = sandbox.DefaultTimeout
		}
		out[i] = experimentJSON{Experiment: e, TimeoutSeconds: timeout.Seconds()}
	}
	page.WriteJSON(w, http.StatusOK, map[string]any{"experiments": out})
}
