package web

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"

	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/web/page"
)

// runRequest is the body of POST /api/runs.
type runRequest struct {
	Experiment string         `json:"experiment"`
	Params     map[string]any `json:"params"`
}

// runCreated is the answer to POST /api/runs.
type runCreated struct {
	ID       string         `json:"id"`
	Status   sandbox.Status `json:"status"`
	Position int            `json:"position"`
}

// runCreate is POST /api/runs: validate, queue, and answer 201 with the
// run's id, status and queue position. The run goes on whether or not
// anyone watches it.
func (s *Server) runCreate(w http.ResponseWriter, r *http.Request) {
	if !s.sandboxOn() {
		s.WriteError(w, r, errSandboxOff)
		return
	}
	// As strict as the quiz API: JSON only, one object, known fields.
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		s.WriteError(w, r, page.Errorf(page.CodeBadRequest, tr(page.LangOf(r))("run.err.content_type")))
		return
	}
	var req runRequest
	dec := json.NewDecoder(r.Body) // at most page.MaxBody (body_limit.go)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.More() {
		s.WriteError(w, r, &page.Error{Code: page.CodeBadRequest, Message: tr(page.LangOf(r))("run.err.json"), Err: err})
		return
	}
	if exp := s.cfg.Experiments.Get(req.Experiment); exp != nil {
		if e := s.noRDMA(r, exp); e != nil {
			s.WriteError(w, r, e)
			return
		}
	}
	info, err := s.cfg.Runner.Submit(learnerID(r), req.Experiment, req.Params)
	if err != nil {
		if errors.Is(err, runner.ErrBusy) {
			w.Header().Set("Retry-After", "60")
		}
		s.WriteError(w, r, submitError(r, err))
		return
	}
	s.noteRun(r, info.ID)
	w.Header().Set("Location", "/api/runs/"+info.ID)
	page.WriteJSON(w, http.StatusCreated, runCreated{ID: info.ID, Status: info.Status, Position: info.Position})
}

// runCreateForm is POST /runs, the widget without JavaScript: the form's
// fields (or a preset button) become the params, and the learner lands on
// the run page, which refreshes until the run ends.
func (s *Server) runCreateForm(w http.ResponseWriter, r *http.Request) {
	if !s.sandboxOn() {
		s.Refused(w, r, errSandboxOff)
		return
	}
	if err := r.ParseForm(); err != nil {
		s.Refused(w, r, &page.Error{Code: page.CodeBadRequest, Message: "unreadable form", Err: err})
		return
	}
	id := r.PostForm.Get("experiment")
	exp := s.cfg.Experiments.Get(id)
	if exp == nil {
		s.Refused(w, r, submitError(r, sandbox.ErrUnknownExperiment))
		return
	}
	if e := s.noRDMA(r, exp); e != nil {
		s.Refused(w, r, e)
		return
	}
	raw := formParams(exp, r.PostForm)
	info, err := s.cfg.Runner.Submit(learnerID(r), exp.ID, raw)
	if err != nil {
		s.Refused(w, r, submitError(r, err))
		return
	}
	s.noteRun(r, info.ID)
	http.Redirect(w, r, runHref(info.ID), http.StatusSeeOther)
}

// formParams reads an experiment's params from a form: a pressed preset
// button wins; otherwise each param's field, when present.
func formParams(exp *sandbox.Experiment, form url.Values) map[string]any {
	if pid := form.Get("preset"); pid != "" {
		for _, p := range exp.Presets {
			if p.ID == pid {
				return p.Values
			}
		}
	}
	raw := map[string]any{}
	for _, p := range exp.Params {
		if v, ok := form[p.Name]; ok && len(v) > 0 && v[0] != "" {
			raw[p.Name] = v[0]
		}
	}
	return raw
}

// runHref is the replay page of a run.
func runHref(id string) string { return "/runs/" + url.PathEscape(id) }
