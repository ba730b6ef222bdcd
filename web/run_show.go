package web

import (
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
)

// runJSON is GET /api/runs/{id}.
type runJSON struct {
	ID         string         `json:"id"`
	Experiment string         `json:"experiment"`
	Params     any            `json:"params"`
	Status     sandbox.Status `json:"status"`
	Position   int            `json:"position,omitempty"`
	Backend    string         `json:"backend,omitempty"`
	Result     *sandbox.Event `json:"result"`
	Error      string         `json:"error,omitempty"`
	Created    time.Time      `json:"created"`
	Started    *time.Time     `json:"started,omitempty"`
	Finished   *time.Time     `json:"finished,omitempty"`
	Mine       bool           `json:"mine"`
	Page       string         `json:"page"`
	Events     string         `json:"events"`
}

// runShow is GET /api/runs/{id}: status, backend, params, result, error.
// Run ids are unguessable, so a run can be shared by its link; only its
// owner may cancel it.
func (s *Server) runShow(w http.ResponseWriter, r *http.Request) {
	run, err := s.loadRun(r)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	out := runJSON{
		ID: run.ID, Experiment: run.Experiment, Params: run.Params, Status: run.Status, Backend: run.Backend,
		Result: run.Result, Error: run.Error, Created: run.CreatedAt, Mine: run.Learner == learnerID(r),
		Page: runHref(run.ID), Events: "/api/runs/" + run.ID + "/events",
	}
	if !run.StartedAt.IsZero() {
		out.Started = &run.StartedAt
	}
	if !run.FinishedAt.IsZero() {
		out.Finished = &run.FinishedAt
	}
	if s.cfg.Runner != nil {
		if info, ok := s.cfg.Runner.Lookup(run.ID); ok {
			out.Status, out.Position = info.Status, info.Position
			// Where it runs, from the runner too: the store's writer puts
			// the running event down later, and beside stress-ng a run
			// read as running showed no backend (TestRunCreateRefusals).
			if info.Backend != "" {
				out.Backend = info.Backend
			}
			if out.Started == nil && !info.Started.IsZero() {
				out.Started = &info.Started
			}
		}
	}
	page.WriteJSON(w, http.StatusOK, out)
}

// loadRun reads the run named by the {id} URL param.
func (s *Server) loadRun(r *http.Request) (store.Run, error) {
	id := chi.URLParam(r, "id")
	run, err := s.cfg.Store.Run(r.Context(), id)
	if errors.Is(err, store.ErrRunNotFound) {
		return store.Run{}, page.Errorf(page.CodeNotFound, "no run with id "+id)
	}
	return run, err
}
