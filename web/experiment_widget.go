package web

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/a-h/templ"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/web/views"
)

// experimentSegment renders a lesson's `::experiment ID key=value…`
// directive as the experiment widget, its form preset with the directive's
// values.
func (s *Server) experimentSegment(lr *lessonRequest, seg lessons.Segment) templ.Component {
	if exp := s.interactive(seg.ID); exp != nil { // stepthrough.go
		return s.stepThroughSegment(lr.Lang, exp)
	}
	w := s.experimentWidget(lr.Lang, seg.ID, seg.Params)
	// The same experiment again further down the page (lesson 05 has
	// wire-capture nine times): its fields get ids of their own, or every
	// label would name the first form's field (duplicate ids, a field with
	// nine labels). Counted from the page, so cached renders agree.
	if n := earlierSame(lr.Page, seg); n > 0 {
		w.Key = seg.ID + "-" + strconv.Itoa(n+1)
	}
	return views.Experiment(w)
}

// earlierSame counts the experiment segments with seg's id above it.
func earlierSame(p *lessons.Page, seg lessons.Segment) int {
	if p == nil {
		return 0
	}
	n := 0
	for _, o := range p.Body {
		if o.Kind == lessons.SegExperiment && o.ID == seg.ID && o.Line < seg.Line {
			n++
		}
	}
	return n
}

// experimentWidget builds the widget of experiment id in lang, with values
// (strings, as in a directive) overriding the defaults.
func (s *Server) experimentWidget(lang, id string, values map[string]string) views.ExperimentWidget {
	t := tr(lang)
	w := views.ExperimentWidget{T: t, Lang: lang, ID: id, Title: id, Action: "/runs", Strings: clientStrings(lang)}
	if s.cfg.Experiments == nil || !s.sandboxOn() {
		w.Unavailable = t("run.off")
		return w
	}
	exp := s.cfg.Experiments.Get(id)
	if exp == nil {
		w.Unavailable = trf(lang, "run.unavailable", id)
		return w
	}
	w.Title, w.Summary = exp.Title.Get(lang), exp.Summary.Get(lang)
	w.NeedsRDMA = exp.Needs == sandbox.NeedRDMA
	raw := map[string]any{}
	for k, v := range values {
		raw[k] = v
	}
	current, err := exp.Validate(raw)
	if err != nil { // `labserver check` reports bad directives; show the defaults
		current = exp.Defaults()
	}
	for _, p := range exp.Params {
		w.Fields = append(w.Fields, paramField(p, current[p.Name], lang))
	}
	for _, pr := range exp.Presets {
		b, _ := json.Marshal(pr.Values)
		w.Presets = append(w.Presets, views.PresetButton{ID: pr.ID, Label: pr.Title.Get(lang), Values: string(b)})
	}
	return w
}

func paramField(p sandbox.Param, v any, lang string) views.ParamField {
	f := views.ParamField{Name: p.Name, Label: p.Title.Get(lang), Help: p.Help.Get(lang), Kind: string(p.Kind), Unit: p.Unit}
	if f.Label == "" {
		f.Label = p.Name
	}
	switch p.Kind {
	case sandbox.ParamInt, sandbox.ParamBytes:
		f.Value = fmt.Sprint(v)
		f.Min, f.Max = strconv.FormatInt(p.Min, 10), strconv.FormatInt(p.Max, 10)
		if p.Kind == sandbox.ParamBytes {
			f.Unit = "B"
			f.Bounds = sandbox.FormatBytes(p.Min) + " – " + sandbox.FormatBytes(p.Max)
		} else {
			f.Bounds = fmt.Sprintf("%d – %d", p.Min, p.Max)
			if p.Unit != "" {
				f.Bounds += " " + p.Unit
			}
		}
	case sandbox.ParamEnum:
		for _, c := range p.Choices {
			label := c.Title.Get(lang)
			if label == "" {
				label = c.Value
			}
			f.Options = append(f.Options, views.Option{Value: c.Value, Label: label, Selected: c.Value == v})
		}
	case sandbox.ParamBool:
		b, _ := v.(bool)
		t := tr(lang)
		f.Options = []views.Option{{Value: "true", Label: t("run.yes"), Selected: b}, {Value: "false", Label: t("run.no"), Selected: !b}}
	}
	return f
}

// clientKeys are the UI strings experiment.js needs.
var clientKeys = []string{
	"run.run", "run.cancel", "run.phases", "run.log", "run.log.count", "run.charts", "run.chart.data", "run.chart.named", "run.verdict", "run.error", "run.error.expected",
	"run.backend", "run.backend.host", "run.backend.vm", "run.backend.none", "run.backend.name.host", "run.backend.name.vm", "run.position", "run.replay",
	"run.status.queued", "run.status.running", "run.status.done", "run.status.failed", "run.status.cancelled",
	"run.status.timed-out", "run.status.interrupted", "run.connection",
	"run.lab.booting", "run.lab.ready", "run.lab.failed", "run.lab.none", "run.lab.unknown",
	"run.live.other", "run.live.open", "run.preset.cue", "run.tables", "run.lab.details",
}

// clientStrings is the JSON of clientKeys in lang, for data-strings.
func clientStrings(lang string) string {
	t := tr(lang)
	m := make(map[string]string, len(clientKeys))
	for _, k := range clientKeys {
		m[k] = t(k)
	}
	b, _ := json.Marshal(m)
	return string(b)
}
