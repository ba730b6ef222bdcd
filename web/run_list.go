package web

import (
	"github.com/rdmalab/rdmalab/internal/textclip"
	"net/http"

	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// maxHistory is how many runs the history page lists.
const maxHistory = 100

// runList is GET /runs: the learner's runs, newest first, each linking to
// its replay page.
func (s *Server) runList(w http.ResponseWriter, r *http.Request) {
	runs, err := s.cfg.Store.LearnerRuns(r.Context(), learnerID(r), maxHistory)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	lang := page.LangOf(r)
	t := tr(lang)
	v := views.RunList{Chrome: s.Chrome(r, t("run.history"))}
	v.Use(views.TableAssets)
	for _, run := range runs {
		title := run.Experiment
		if s.cfg.Experiments != nil {
			if e := s.cfg.Experiments.Get(run.Experiment); e != nil {
				title = e.Title.Get(lang)
			}
		}
		row := views.RunRow{
			Href: runHref(run.ID), When: run.CreatedAt.Local().Format("2006-01-02 15:04"), Experiment: title,
			Status: string(run.Status), StatusLabel: t("run.status." + string(run.Status)), Backend: run.Backend,
			Params: s.paramsView(run.Experiment, run.Params, lang),
		}
		if run.Result != nil {
			row.Verdict = textclip.Runes(localized(*run.Result, lang), 160)
		} else if run.Error != "" {
			row.Verdict = textclip.Runes(run.Error, 160)
		}
		v.Rows = append(v.Rows, row)
	}
	s.Render(w, r, http.StatusOK, views.RunListView(v))
}
