package web

import (
	"context"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/sandbox"
)

func TestWorthIt(t *testing.T) {
	for _, tc := range []struct {
		lib, net, lossless string
		verdict            string
		reasons            int
	}{
		{"", "", "", "incomplete", 0},
		{"yes", "", "", "incomplete", 1},
		{"yes", "yes", "", "incomplete", 2},
		{"yes", "yes", "yes", "go-roce", 3},
		{"yes", "yes", "ib", "go-ib", 3},
		{"yes", "yes", "no", "lossless-first", 3},
		{"no", "yes", "yes", "port-first", 3},
		{"unsure", "yes", "ib", "check-lib", 3},
		// Without a measured network bottleneck nothing else matters.
		{"yes", "no", "yes", "not-network", 3},
		{"", "no", "", "not-network", 1},
		{"yes", "unmeasured", "ib", "measure", 3},
		{"no", "unmeasured", "", "measure", 2},
	} {
		v, reasons := worthIt(tc.lib, tc.net, tc.lossless)
		if v != tc.verdict || len(reasons) != tc.reasons {
			t.Errorf("worthIt(%q, %q, %q) = %s with %d reasons, want %s with %d", tc.lib, tc.net, tc.lossless, v, len(reasons), tc.verdict, tc.reasons)
		}
		for _, k := range reasons {
			if tr("en")(k) == k || tr("zh")(k) == k {
				t.Errorf("reason %s has no text", k)
			}
		}
		if k := "vis.worth.verdict." + v; tr("en")(k) == k || tr("zh")(k) == k {
			t.Errorf("verdict %s has no text", v)
		}
	}
}

func TestFmtNum(t *testing.T) {
	for x, want := range map[float64]string{
		100: "100", 33.333333: "33.3", 0.5342: "0.534", 2.5: "2.5", 10000: "10000",
		0.001: "0.001", 1: "1", 12.5: "12.5", 133.33: "133", 0: "0", 0.1: "0.1",
	} {
		if got := fmtNum(x); got != want {
			t.Errorf("fmtNum(%v) = %q, want %q", x, got, want)
		}
	}
}

// visualsCourse is one lesson with the three visuals.
func visualsCourse() *lessons.Course {
	page := func(lang string) *lessons.Page {
		var svg string
		for _, s := range lessons.DiagramSteps("tcp-vs-rdma", lang) {
			svg += `<g class="step" data-step="` + s.ID + `"></g>`
		}
		return &lessons.Page{Lang: lang, Title: "Visuals", Order: 1, Body: []lessons.Segment{
			{Kind: lessons.SegDiagram, ID: "tcp-vs-rdma", HTML: template.HTML(`<figure class="rd-diagram"><svg>` + svg + `</svg></figure>`)},
			{Kind: lessons.SegDiagram, ID: "cpu-budget", HTML: `<div data-widget="cpu-budget"></div>`},
			{Kind: lessons.SegDiagram, ID: "worth-it", HTML: `<div data-widget="worth-it"></div>`},
		}}
	}
	return &lessons.Course{Lessons: []*lessons.Lesson{{Slug: "01-vis", Order: 1,
		Pages: map[string]*lessons.Page{"zh": page("zh"), "en": page("en")}}}}
}

// TestLessonVisualsWithoutJS: the three visuals work as plain HTML — the
// step list with costs, the calculator answered from the GET query (and
// prefilled from the learner's own tcp-cost run), the worth-it helper.
func TestLessonVisualsWithoutJS(t *testing.T) {
	env := newEnv(t, visualsCourse())
	c := env.client()
	base := "/lessons/01-vis?lang=en"

	d := env.doc(c, base, http.StatusOK)
	if n := d.Find(`[data-testid=diagram-steps] li[data-step]`).Length(); n != len(lessons.DiagramSteps("tcp-vs-rdma", "en")) {
		t.Errorf("step list has %d steps", n)
	}
	d.Find(`[data-testid=diagram-steps] li.removed`).Each(func(_ int, li *goquery.Selection) {
		if strings.TrimSpace(li.Find(".cost").Text()) == "" {
			t.Errorf("removed step %s shows no cost", li.AttrOr("data-step", "?"))
		}
	})
	if n := d.Find(`script[src*="js/diagram.js"]`).Length(); n != 1 {
		t.Errorf("diagram.js included %d times", n)
	}
	for _, js := range []string{"diagram", "calculator", "worthit"} {
		if n := d.Find(`script[src*="js/` + js + `.js"]`).Length(); n != 1 {
			t.Errorf("%s.js included %d times, want once", js, n)
		}
	}
	if n := d.Find(`link[href*="css/visuals.css"]`).Length(); n < 1 {
		t.Error("visuals.css is not linked")
	}

	// Calculator, rule of thumb: 100 Gbps × 1 GHz/Gbps on 3 GHz cores.
	calc := d.Find(`[data-testid=cpu-budget]`)
	if src := calc.AttrOr("data-source", ""); src != "rule" {
		t.Errorf("calculator source = %q before any run, want rule", src)
	}
	if got := visText(calc.Find(".calc-sentence")); got != "100 Gbps × 1 GHz per Gbps = 100 GHz of CPU ≈ 33.3 cores of 3 GHz" {
		t.Errorf("default result %q", got)
	}
	if calc.Find(`[data-testid=cpu-budget-notyet]`).Length() != 1 || calc.Find(`[data-preset=measured]`).Length() != 0 {
		t.Error("before a tcp-cost run the calculator should invite one and offer no measured preset")
	}
	for _, id := range []string{"cb-gbps", "cb-ghz", "cb-core"} {
		if d.Find(`label[for=`+id+`]`).Length() != 1 || d.Find(`input#`+id).Length() != 1 {
			t.Errorf("input %s has no label", id)
		}
	}

	// Submitted values (the no-JS form): 400 Gbps × 0.5 on 2.5 GHz cores.
	d = env.doc(c, base+"&cb_gbps=400&cb_ghz=0.5&cb_core=2.5", http.StatusOK)
	calc = d.Find(`[data-testid=cpu-budget]`)
	if got := visText(calc.Find(".calc-sentence")); got != "400 Gbps × 0.5 GHz per Gbps = 200 GHz of CPU ≈ 80 cores of 2.5 GHz" {
		t.Errorf("submitted result %q", got)
	}
	if n := calc.Find(".cores-bar .core").Length(); n != 80 {
		t.Errorf("cores bar draws %d squares for 80 cores", n)
	}
	// Out of range: the field says why, no result is invented.
	d = env.doc(c, base+"&cb_gbps=-5&cb_ghz=1&cb_core=3", http.StatusOK)
	calc = d.Find(`[data-testid=cpu-budget]`)
	if calc.Find(`#cb-gbps[aria-invalid=true]`).Length() != 1 || !strings.Contains(visText(calc.Find("#cb-gbps-err")), "0.1") {
		t.Errorf("bad link speed not flagged: %q", visText(calc.Find("#cb-gbps-err")))
	}
	if calc.Find(".calc-sentence").Length() != 0 {
		t.Error("a result was shown for invalid input")
	}

	// The learner runs tcp-cost: the calculator now starts from that figure.
	u, _ := url.Parse(env.HTTP.URL)
	var learner string
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "lab_learner" {
			learner = env.Server.cookieLearner(ck.Value) // the id, signed or not
		}
	}
	if learner == "" {
		t.Fatal("no learner cookie")
	}
	addTCPCostRun(t, env, learner, map[string]float64{"ghz_per_gbps": 0.42, "cpu_ghz": 2.8, "msg_size": 65536})
	d = env.doc(c, base, http.StatusOK)
	calc = d.Find(`[data-testid=cpu-budget]`)
	if src := calc.AttrOr("data-source", ""); src != "measured" {
		t.Errorf("calculator source = %q after a tcp-cost run, want measured", src)
	}
	if v := calc.Find("#cb-ghz").AttrOr("value", ""); v != "0.42" {
		t.Errorf("GHz per Gbps prefilled with %q, want the measured 0.42", v)
	}
	m := calc.Find(`[data-preset=measured]`)
	if m.AttrOr("data-ghz", "") != "0.42" || m.AttrOr("data-core", "") != "2.8" || !strings.Contains(visText(m), "64 KiB") {
		t.Errorf("measured preset %q ghz=%s core=%s", visText(m), m.AttrOr("data-ghz", ""), m.AttrOr("data-core", ""))
	}
	if calc.Find(`a[href="/runs/run-visuals-1"]`).Length() != 1 {
		t.Error("the measured preset does not link its run")
	}
	if got := visText(calc.Find(".calc-sentence")); got != "100 Gbps × 0.42 GHz per Gbps = 42 GHz of CPU ≈ 15 cores of 2.8 GHz" {
		t.Errorf("measured result %q", got)
	}

	// Worth it: answers from the query, the other form's values kept.
	d = env.doc(c, base+"&cb_gbps=200&wi_lib=yes&wi_net=yes&wi_lossless=ib", http.StatusOK)
	res := d.Find(`[data-testid=worth-it-result]`)
	if v := res.AttrOr("data-verdict", ""); v != "go-ib" || res.Find(".reasons li").Length() != 3 {
		t.Errorf("verdict %q with %d reasons", v, res.Find(".reasons li").Length())
	}
	if d.Find(`[data-testid=worth-it-form] input[type=hidden][name=cb_gbps][value="200"]`).Length() != 1 {
		t.Error("the worth-it form drops the calculator's values")
	}
	if d.Find(`[data-testid=cpu-budget-form] input[type=hidden][name=wi_net][value=yes]`).Length() != 1 {
		t.Error("the calculator form drops the worth-it answers")
	}
	if d.Find(`input[name=wi_lossless][value=ib][checked]`).Length() != 1 {
		t.Error("the chosen answer is not checked")
	}
	d = env.doc(c, base+"&wi_lib=bogus&wi_net=yes", http.StatusOK)
	if v := d.Find(`[data-testid=worth-it-result]`).AttrOr("data-verdict", ""); v != "incomplete" {
		t.Errorf("unknown answer: verdict %q, want incomplete", v)
	}

	// Chinese page: the same widgets in Chinese.
	d = env.doc(c, "/lessons/01-vis?lang=zh", http.StatusOK)
	if got := visText(d.Find(`[data-testid=cpu-budget] h3`)); got != "CPU 预算计算器" {
		t.Errorf("zh calculator title %q", got)
	}
}

func visText(s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") }

// addTCPCostRun stores a finished tcp-cost run with a result for learner.
func addTCPCostRun(t *testing.T, env *testEnv, learner string, figs map[string]float64) {
	t.Helper()
	ctx := context.Background()
	id := "run-visuals-1"
	if err := env.DB.CreateRun(ctx, sandbox.RunInfo{ID: id, Learner: learner, Experiment: "tcp-cost",
		Params: sandbox.Params{}, Status: sandbox.StatusQueued, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ok := true
	for i, ev := range []sandbox.Event{
		{Type: sandbox.EvStatus, Status: sandbox.StatusRunning, Backend: "host"},
		{Type: sandbox.EvResult, OK: &ok, Figures: figs},
		{Type: sandbox.EvStatus, Status: sandbox.StatusDone},
	} {
		ev.Seq, ev.Time = int64(i+1), time.Now()
		if err := env.DB.AppendRunEvent(ctx, id, ev); err != nil {
			t.Fatal(err)
		}
	}
}
