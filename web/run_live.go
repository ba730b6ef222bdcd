package web

import (
	"net/http"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/web/page"
)

// liveRunJSON is the learner's queued or running run, for the widgets.
type liveRunJSON struct {
	ID         string         `json:"id"`
	Experiment string         `json:"experiment"`
	Title      string         `json:"title"`
	Params     any            `json:"params"`
	Status     sandbox.Status `json:"status"`
	Page       string         `json:"page"`
}

// runLive is GET /api/runs/live: {"run": …} with the learner's live run, or
// {"run": null}. A learner has at most one (the runner refuses a second),
// so a widget that loads while one is going follows it (same experiment) or
// keeps Run disabled until it ends — after a reload, in a second tab.
func (s *Server) runLive(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	out := struct {
		Run *liveRunJSON `json:"run"`
	}{}
	if s.sandboxOn() {
		runs, err := s.cfg.Store.LearnerRuns(r.Context(), learnerID(r), 3)
		if err != nil {
			s.WriteError(w, r, err)
			return
		}
		for _, run := range runs {
			info, ok := s.cfg.Runner.Lookup(run.ID) // the store may still say running after a crash
			if !ok || info.Status.Final() {
				continue
			}
			title := run.Experiment
			if e := s.cfg.Experiments.Get(run.Experiment); e != nil {
				title = e.Title.Get(page.LangOf(r))
			}
			out.Run = &liveRunJSON{ID: run.ID, Experiment: run.Experiment, Title: title, Params: run.Params, Status: info.Status, Page: runHref(run.ID)}
			break
		}
	}
	page.WriteJSON(w, http.StatusOK, out)
}
