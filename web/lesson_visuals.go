package web

import (
	"context"
	"errors"
	"math"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// The interactive visuals of lesson pages: the TCP vs RDMA step-through,
// the CPU budget calculator and the "is RDMA worth it for us?" helper. Each
// works without JavaScript (a step list; GET forms the server answers in the
// page), and static/js/{diagram,calculator,worthit}.js enhance them.

// diagramSkeleton places a ::diagram in the learner-independent page
// skeleton (lesson_show.go): drawings are the same for every learner, so
// they render once per content load; the widgets answer the request (its
// query, the learner's runs), so they become holes filled by
// diagramSegment.
func (s *Server) diagramSkeleton(lang string, seg lessons.Segment, hole func() templ.Component) templ.Component {
	if slices.Contains(lessons.WidgetIDs, seg.ID) {
		return hole()
	}
	return drawing(lang, seg)
}

// diagramSegment renders a ::diagram segment for this request.
func (s *Server) diagramSegment(lr *lessonRequest, seg lessons.Segment) templ.Component {
	switch seg.ID {
	case "cpu-budget":
		return views.CPUBudget(s.cpuBudget(lr))
	case "worth-it":
		return views.WorthIt(worthItView(lr))
	}
	return drawing(lr.Lang, seg)
}

// drawing is a diagram that depends only on the language: the TCP vs RDMA
// paths get their step-through, others are the SVG as lessons drew it.
func drawing(lang string, seg lessons.Segment) templ.Component {
	if steps := lessons.DiagramSteps(seg.ID, lang); steps != nil {
		return views.PathDiagram(views.PathDiagramView{T: tr(lang), ID: seg.ID, HTML: seg.HTML, Steps: steps})
	}
	// Trusted: rendered by lessons from the course's own SVG.
	return templ.Raw(seg.HTML)
}

// Query parameters of the two forms. Each form carries the other's values
// as hidden fields, so answering one keeps the other's result on the page.
var (
	cpuBudgetParams = []string{"cb_gbps", "cb_ghz", "cb_core"}
	worthItParams   = []string{"wi_lib", "wi_net", "wi_lossless"}
)

// The calculator's defaults are the lesson's own figures: a 100 Gbps link,
// the rule of thumb of ~1 GHz of CPU per Gbps, and 3 GHz cores ("more than
// thirty 3 GHz cores").
const (
	ruleGHzPerGbps = rdmalab.RuleGHzPerGbps
	defaultGbps    = 100.0
	defaultCoreGHz = 3.0
)

// calcField is one calculator input: its bounds keep the arithmetic
// meaningful (a link, a cost per Gbps and a clock of this world).
type calcField struct {
	name     string
	min, max float64
}

var calcFields = [3]calcField{
	{"cb_gbps", 0.1, 10000},
	{"cb_ghz", 0.001, 100},
	{"cb_core", 0.1, 10},
}

// measuredTCPCost is the figure the learner's latest tcp-cost run found.
type measuredTCPCost struct {
	RunID      string
	GHzPerGbps float64
	CoreGHz    float64
	MsgSize    float64
}

// latestTCPCost reads the learner's newest done tcp-cost run (ok false when
// there is none, or it could not state GHz per Gbps: no CPU clock).
func (s *Server) latestTCPCost(ctx context.Context, learner string) (measuredTCPCost, bool, error) {
	if learner == "" {
		return measuredTCPCost{}, false, nil // the static page skeleton (lesson_static.go): nobody's runs
	}
	r, err := s.cfg.Store.LatestResult(ctx, learner, rdmalab.TCPCostID)
	if errors.Is(err, store.ErrRunNotFound) {
		return measuredTCPCost{}, false, nil
	}
	if err != nil {
		return measuredTCPCost{}, false, err
	}
	f := r.Result.Figures
	if f[rdmalab.TCPCostGHzPerGbps] <= 0 || f[rdmalab.TCPCostCPUGHz] <= 0 {
		return measuredTCPCost{}, false, nil
	}
	return measuredTCPCost{RunID: r.ID, GHzPerGbps: f[rdmalab.TCPCostGHzPerGbps], CoreGHz: f[rdmalab.TCPCostCPUGHz], MsgSize: f[rdmalab.TCPCostMsgSize]}, true, nil
}

// cpuBudget builds the calculator: values from the query when the learner
// submitted the form, else the measured figure when there is one, else the
// rule of thumb; the result is computed here so the page needs no script.
func (s *Server) cpuBudget(lr *lessonRequest) views.CPUBudgetView {
	q := lr.r.URL.Query()
	v := views.CPUBudgetView{
		T:      lr.T,
		Action: page.LessonHref(lr.Lesson.Slug) + "#cpu-budget",
		Keep:   keepParams(q, worthItParams),
		Rule: views.CalcPreset{
			GHz: fmtNum(ruleGHzPerGbps), Core: fmtNum(defaultCoreGHz),
			Href: presetHref(lr.Lesson.Slug, q, ruleGHzPerGbps, defaultCoreGHz),
		},
		Cores: runtime.NumCPU(),
	}
	ghz, core := ruleGHzPerGbps, defaultCoreGHz
	m, ok, err := s.latestTCPCost(lr.r.Context(), lr.Learner)
	if err != nil {
		// The calculator still works with the rule of thumb.
		s.log.Warn("cpu budget: latest tcp-cost run", "err", err)
	}
	if ok {
		v.Measured = &views.CalcPreset{
			GHz: fmtNum(m.GHzPerGbps), Core: fmtNum(m.CoreGHz),
			Href:    presetHref(lr.Lesson.Slug, q, m.GHzPerGbps, m.CoreGHz),
			RunHref: "/runs/" + url.PathEscape(m.RunID),
			MsgSize: msgSize(m.MsgSize),
		}
		// Calculate with the figures as shown (three digits), as
		// calculator.js does with the input values: both print the same.
		ghz, _ = strconv.ParseFloat(fmtNum(m.GHzPerGbps), 64)
		core, _ = strconv.ParseFloat(fmtNum(m.CoreGHz), 64)
		v.Source = "measured"
	} else {
		v.Source = "rule"
	}
	for i, f := range calcFields {
		v.Min[i], v.Max[i] = fmtNum(f.min), fmtNum(f.max)
	}
	vals := [3]float64{defaultGbps, ghz, core}
	v.Values = [3]string{fmtNum(vals[0]), fmtNum(vals[1]), fmtNum(vals[2])}
	if q.Has("cb_gbps") || q.Has("cb_ghz") || q.Has("cb_core") {
		v.Source = "query"
		for i, f := range calcFields {
			raw := strings.TrimSpace(q.Get(f.name))
			v.Values[i] = raw
			x, err := strconv.ParseFloat(raw, 64)
			if err != nil || math.IsNaN(x) || x < f.min || x > f.max {
				v.Errors[i] = trf(lr.Lang, "vis.calc.range", fmtNum(f.min), fmtNum(f.max))
				continue
			}
			vals[i] = x
		}
	}
	if v.Errors == [3]string{} {
		total := vals[0] * vals[1]
		cores := total / vals[2]
		v.Result = &views.CalcResult{
			Gbps: fmtNum(vals[0]), GHz: fmtNum(vals[1]), Core: fmtNum(vals[2]),
			Total: fmtNum(total), Cores: fmtNum(cores), CoresValue: cores,
			Machines: fmtNum(cores / float64(max(v.Cores, 1))),
		}
	}
	return v
}

// presetHref is the no-JavaScript link that fills the calculator with a
// preset (keeping the link speed the learner typed and the other form).
func presetHref(slug string, q url.Values, ghz, core float64) string {
	p := url.Values{}
	for _, k := range worthItParams {
		if q.Has(k) {
			p.Set(k, q.Get(k))
		}
	}
	gbps := q.Get("cb_gbps")
	if gbps == "" {
		gbps = fmtNum(defaultGbps)
	}
	p.Set("cb_gbps", gbps)
	p.Set("cb_ghz", fmtNum(ghz))
	p.Set("cb_core", fmtNum(core))
	return page.LessonHref(slug) + "?" + p.Encode() + "#cpu-budget"
}

// keepParams returns the values of names present in q, as hidden fields.
func keepParams(q url.Values, names []string) []views.Hidden {
	var out []views.Hidden
	for _, k := range names {
		if q.Has(k) {
			out = append(out, views.Hidden{Name: k, Value: q.Get(k)})
		}
	}
	return out
}

// fmtNum prints x with three significant digits and no exponent or
// trailing zeros (33.3, 100, 0.534). static/js/calculator.js has the same
// rule, so the page reads the same with and without JavaScript.
func fmtNum(x float64) string {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return "0"
	}
	dec := 2 - int(math.Floor(math.Log10(math.Abs(x))))
	dec = min(max(dec, 0), 4)
	s := strconv.FormatFloat(x, 'f', dec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// msgSize prints a message size the way the experiment names it (its
// parameter's own format: "64 KiB"); nothing when the run did not say.
func msgSize(n float64) string {
	if n < 1 {
		return ""
	}
	return sandbox.FormatBytes(int64(n))
}

// The worth-it helper's answers, one set per question (form values).
var worthItAnswers = map[string][]string{
	"wi_lib":      {"yes", "no", "unsure"},
	"wi_net":      {"yes", "no", "unmeasured"},
	"wi_lossless": {"yes", "ib", "no"},
}

// worthIt turns the lesson's three questions into a recommendation: a
// verdict id and the reasons, as string keys "vis.worth.verdict.<id>" and
// "vis.worth.why.<question>.<answer>". The order of the checks is the
// lesson's argument: without a measured network bottleneck nothing else
// matters; then the application must speak RDMA; then the network must be
// lossless (or InfiniBand).
func worthIt(lib, net, lossless string) (verdict string, reasons []string) {
	for _, qa := range [][2]string{{"lib", lib}, {"net", net}, {"lossless", lossless}} {
		if qa[1] != "" {
			reasons = append(reasons, "vis.worth.why."+qa[0]+"."+qa[1])
		}
	}
	switch {
	case net == "no":
		return "not-network", reasons
	case net == "unmeasured":
		return "measure", reasons
	case lib == "no":
		return "port-first", reasons
	case lib == "unsure":
		return "check-lib", reasons
	case lib == "" || net == "" || lossless == "":
		return "incomplete", reasons
	case lossless == "yes":
		return "go-roce", reasons
	case lossless == "ib":
		return "go-ib", reasons
	default:
		return "lossless-first", reasons
	}
}

// verdictTone is how the verdict is shown: go, wait, no, or none.
func verdictTone(verdict string) string {
	switch verdict {
	case "go-roce", "go-ib":
		return "go"
	case "not-network":
		return "no"
	case "incomplete":
		return "none"
	}
	return "wait"
}

// worthItView reads the helper's answers from the query (unknown values
// count as unanswered) and decides.
func worthItView(lr *lessonRequest) views.WorthItView {
	q := lr.r.URL.Query()
	v := views.WorthItView{
		T:      lr.T,
		Action: page.LessonHref(lr.Lesson.Slug) + "#worth-it",
		Keep:   keepParams(q, cpuBudgetParams),
	}
	answers := map[string]string{}
	for _, name := range worthItParams {
		qv := views.WorthQuestion{Name: name, Legend: lr.T("vis.worth.q." + strings.TrimPrefix(name, "wi_"))}
		for _, a := range worthItAnswers[name] {
			checked := q.Get(name) == a
			if checked {
				answers[name] = a
			}
			qv.Options = append(qv.Options, views.WorthOption{
				Value: a, Label: lr.T("vis.worth.a." + strings.TrimPrefix(name, "wi_") + "." + a), Checked: checked,
			})
		}
		v.Questions = append(v.Questions, qv)
	}
	verdict, reasons := worthIt(answers["wi_lib"], answers["wi_net"], answers["wi_lossless"])
	v.Verdict, v.Tone = verdict, verdictTone(verdict)
	v.VerdictText = lr.T("vis.worth.verdict." + verdict)
	for _, k := range reasons {
		v.Reasons = append(v.Reasons, lr.T(k))
	}
	return v
}
