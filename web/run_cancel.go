package web

import (
	"errors"
	"net/http"

	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/web/page"
)

// runCancel is POST /api/runs/{id}/cancel. The run's final status
// (cancelled) arrives on its event stream once its processes are gone.
func (s *Server) runCancel(w http.ResponseWriter, r *http.Request) {
	id, err := s.cancel(r)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	page.WriteJSON(w, http.StatusAccepted, map[string]string{"id": id, "status": "cancelling"})
}

// runCancelForm is POST /runs/{id}/cancel from the run page without
// JavaScript; it returns to the page.
func (s *Server) runCancelForm(w http.ResponseWriter, r *http.Request) {
	id, err := s.cancel(r)
	if err != nil {
		var e *page.Error
		if errors.As(err, &e) && e.Code == page.CodeConflict {
			http.Redirect(w, r, runHref(id), http.StatusSeeOther) // already over: show how it ended
			return
		}
		s.Refused(w, r, err)
		return
	}
	http.Redirect(w, r, runHref(id), http.StatusSeeOther)
}

func (s *Server) cancel(r *http.Request) (string, error) {
	if !s.sandboxOn() {
		return "", errSandboxOff
	}
	run, err := s.loadRun(r)
	if err != nil {
		return "", err
	}
	t := tr(page.LangOf(r))
	if run.Learner != learnerID(r) {
		return run.ID, page.Errorf(page.CodeForbidden, t("run.err.notyours"))
	}
	if err := s.cfg.Runner.Cancel(run.ID); err != nil {
		if errors.Is(err, runner.ErrUnknownRun) {
			return run.ID, page.Errorf(page.CodeConflict, t("run.err.finished"))
		}
		return run.ID, err
	}
	return run.ID, nil
}
