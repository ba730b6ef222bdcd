package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// maxPageLogs bounds the log lines rendered on a run page.
const maxPageLogs = 500

// runPage is GET /runs/{id}: the run replayed from its stored events, on
// the server, so it reads without JavaScript; experiment.js then streams it.
func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	run, err := s.loadRun(r)
	if err != nil {
		var e *page.Error
		if errors.As(err, &e) && e.Code == page.CodeNotFound {
			s.NotFound(w, r)
			return
		}
		s.InternalError(w, r, err)
		return
	}
	events, err := s.cfg.Store.RunEvents(r.Context(), run.ID, 0, 0)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	lang := page.LangOf(r)
	rv := digestRun(lang, run, events)
	rv.Params = s.paramsView(run.Experiment, run.Params, lang)
	if !rv.Final && run.Learner == learnerID(r) && s.cfg.Runner != nil {
		rv.CanCancel = true
		rv.CancelAction = runHref(run.ID) + "/cancel"
	}
	wd := s.experimentWidget(lang, run.Experiment, nil)
	wd.Unavailable = "" // a run of an experiment this build lacks still replays
	wd.Run = &rv
	v := views.RunPage{
		Chrome:      s.Chrome(r, trf(lang, "run.title", wd.Title)),
		Widget:      wd,
		HistoryHref: "/runs",
		LessonHref:  s.lessonOf(run.Experiment, lang),
	}
	v.Use(views.ExperimentAssets)
	if len(rv.Steps) > 0 {
		v.Use(views.Assets{Styles: views.StepThroughAssets.Styles}) // the step list's look, no widget script
	}
	s.Render(w, r, http.StatusOK, views.RunPageView(v))
}

// lessonOf finds the first lesson placing the experiment, to go back to.
func (s *Server) lessonOf(experiment, lang string) string {
	c := s.course()
	if c == nil {
		return ""
	}
	for _, l := range c.Lessons {
		p := l.Page(lang)
		if p == nil {
			continue
		}
		for _, seg := range p.Body {
			if seg.ID == experiment && seg.Kind == lessons.SegExperiment {
				return page.LessonHref(l.Slug)
			}
		}
	}
	return ""
}

// digestRun renders stored events into what the page shows: the same
// reading of the events as experiment.js does live.
func digestRun(lang string, run store.Run, events []sandbox.Event) views.RunView {
	t := tr(lang)
	rv := views.RunView{
		ID: run.ID, Href: runHref(run.ID), EventsURL: "/api/runs/" + run.ID + "/events",
		Status: string(run.Status), Backend: run.Backend, Created: run.CreatedAt.Local().Format("2006-01-02 15:04:05"),
	}
	type agg struct {
		views.MetricSummary
		min, max, last float64
	}
	metrics := map[string]*agg{}
	var order []string
	for _, ev := range events {
		rv.LastSeq = ev.Seq
		msg := localized(ev, lang)
		switch ev.Type {
		case sandbox.EvStatus:
			rv.Status = string(ev.Status)
			rv.PositionText = ""
			if ev.Status == sandbox.StatusQueued && ev.Position > 0 {
				rv.PositionText = msg // the hub words the wait (runhub/queue.go)
				if rv.PositionText == "" {
					rv.PositionText = trf(lang, "run.position", ev.Position-1, ev.Position)
				}
			}
			if ev.Backend != "" {
				rv.Backend = ev.Backend
			}
			if ev.Status.Final() {
				rv.FinalMessage = msg
			}
		case sandbox.EvPhase:
			title := msg
			if title == "" {
				title = ev.Name
			}
			// the current phase again is its progress: one line, updated
			// (static/js/experiment.js does the same live)
			if n := len(rv.Phases); n > 0 && rv.Phases[n-1].Name == ev.Name {
				rv.Phases[n-1].Title = title
				continue
			}
			rv.Phases = append(rv.Phases, views.PhaseItem{Name: ev.Name, Title: title})
		case sandbox.EvLog:
			if len(rv.Logs) < maxPageLogs {
				level := ev.Level
				if level == "" {
					level = "info"
				}
				rv.Logs = append(rv.Logs, views.LogItem{Level: level, Text: msg})
			}
		case sandbox.EvMetric:
			key := ev.Series + "\x00" + ev.Unit
			a := metrics[key]
			if a == nil {
				label := ev.Messages.Get(lang)
				if label == "" {
					label = ev.Series
				}
				a = &agg{MetricSummary: views.MetricSummary{Series: label, Unit: ev.Unit}, min: ev.Y, max: ev.Y}
				metrics[key] = a
				order = append(order, key)
			}
			a.Points++
			a.last = ev.Y
			a.min = min(a.min, ev.Y)
			a.max = max(a.max, ev.Y)
		case sandbox.EvTable:
			if ev.Table != nil {
				rv.Tables = append(rv.Tables, ev.Table.In(lang))
			}
		case sandbox.EvResult:
			rv.HasVerdict = true
			rv.VerdictOK = ev.OK == nil || *ev.OK
			rv.Verdict = msg
		case sandbox.EvError:
			item := views.ErrorItem{Call: ev.Call, Message: msg}
			if ev.ErrnoName != "" {
				item.Errno = ev.ErrnoName + " (" + strconv.Itoa(ev.Errno) + ")"
			}
			rv.Errors = append(rv.Errors, item)
		}
	}
	rv.Steps = stepItems(events, lang) // stepthrough.go: interactive runs
	for _, k := range order {
		a := metrics[k]
		a.Last, a.Min, a.Max = num(a.last), num(a.min), num(a.max)
		rv.Metrics = append(rv.Metrics, a.MetricSummary)
	}
	st := sandbox.Status(rv.Status)
	rv.Final = st.Final()
	rv.StatusLabel = t("run.status." + rv.Status)
	if n := len(rv.Phases); n > 0 && !rv.Final {
		rv.Phases[n-1].Current = true
	}
	switch rv.Backend {
	case "host", "vm", "none":
		rv.BackendNote = t("run.backend." + rv.Backend)
	}
	if rv.Backend != "" {
		name := rv.Backend
		if n := t("run.backend.name." + rv.Backend); n != "run.backend.name."+rv.Backend && n != "" {
			name = n
		}
		rv.BackendLine = trf(lang, "run.backend.line", t("run.backend"), name)
	}
	for i, m := range rv.Metrics {
		rv.Metrics[i].Label = trf(lang, "run.metric.label", m.Series, m.Unit)
	}
	return rv
}

// localized is an event's text in lang (Messages.Get's rule), else Message.
func localized(ev sandbox.Event, lang string) string {
	if s := ev.Messages.Get(lang); s != "" {
		return s
	}
	return ev.Message
}

func num(f float64) string {
	s := strconv.FormatFloat(f, 'f', 3, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "" || s == "-" {
		return "0"
	}
	return s
}

// paramsView is a run's params as the learner reads them: each param's
// title in lang (its name when the experiment is unknown), enum choices by
// their title, yes/no, byte counts with their unit; in the experiment's
// order, unknown names last.
func (s *Server) paramsView(experiment string, raw json.RawMessage, lang string) []views.KV {
	var params map[string]any
	if json.Unmarshal(raw, &params) != nil || len(params) == 0 {
		return nil
	}
	var exp *sandbox.Experiment
	if s.cfg.Experiments != nil {
		exp = s.cfg.Experiments.Get(experiment)
	}
	t := tr(lang)
	var out []views.KV
	seen := map[string]bool{}
	if exp != nil {
		for _, p := range exp.Params {
			v, ok := params[p.Name]
			if !ok {
				continue
			}
			seen[p.Name] = true
			label := p.Title.Get(lang)
			if label == "" {
				label = p.Name
			}
			val := fmt.Sprint(v)
			switch p.Kind {
			case sandbox.ParamBytes:
				if f, ok := v.(float64); ok {
					val = sandbox.FormatBytes(int64(f))
				}
			case sandbox.ParamInt:
				if f, ok := v.(float64); ok {
					val = strconv.FormatInt(int64(f), 10)
					if p.Unit != "" {
						val += " " + p.Unit
					}
				}
			case sandbox.ParamBool:
				if b, ok := v.(bool); ok {
					val = t("run.no")
					if b {
						val = t("run.yes")
					}
				}
			case sandbox.ParamEnum:
				for _, c := range p.Choices {
					if c.Value == val {
						if l := c.Title.Get(lang); l != "" {
							val = l
						}
					}
				}
			}
			out = append(out, views.KV{Key: label, Value: val})
		}
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, views.KV{Key: k, Value: fmt.Sprint(params[k])})
	}
	return out
}
