package web

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/runs/runner"
)

// chartCheckJS measures every chart of the widget: the contrast of its axis
// ink against the page background (WCAG), whether the y-axis title fits the
// plot's height (else the canvas clips it), and the legend's labels.
const chartCheckJS = `(function(){
  function rgb(c){ var m = /rgba?\(([^)]+)\)/.exec(c); if (!m) { var d = document.createElement("div"); d.style.color = c; document.body.appendChild(d); c = getComputedStyle(d).color; d.remove(); m = /rgba?\(([^)]+)\)/.exec(c); } return m[1].split(",").slice(0,3).map(Number); }
  function lum(c){ return c.map(function(v){ v/=255; return v <= 0.03928 ? v/12.92 : Math.pow((v+0.055)/1.055, 2.4); }).reduce(function(a,v,i){ return a + v*[0.2126,0.7152,0.0722][i]; }, 0); }
  function contrast(a,b){ var x = lum(rgb(a)), y = lum(rgb(b)); return (Math.max(x,y)+0.05)/(Math.min(x,y)+0.05); }
  var bg = getComputedStyle(document.querySelector(".experiment")).backgroundColor;
  var out = [];
  document.querySelectorAll(".exp-chart").forEach(function(box){
    var u = box._plot; if (!u) return;
    var ax = u.axes[1], ink = typeof ax.stroke === "function" ? ax.stroke(u, 1) : ax.stroke;
    var cv = document.createElement("canvas").getContext("2d");
    cv.font = (ax.labelFont && ax.labelFont[0]) || "bold 12px system-ui";
    var title = ax.label || "";
    out.push({unit: box.dataset.unit, contrast: contrast(ink, bg), title: title, titleW: cv.measureText(title).width,
      plotH: u.bbox.height / (window.devicePixelRatio || 1),
      legend: Array.prototype.map.call(box.querySelectorAll(".u-legend .u-series .u-label"), function(l){ return l.textContent; }).join("|")});
  });
  return JSON.stringify(out); })()`

// Charts read in both themes and both languages: axis text contrast at
// least 4.5:1 on the widget's background, the y-axis title short enough
// to fit, series labelled in the learner's language (not raw ids).
func TestChartsReadInBothThemes(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	widgetCourse(env, lessons.Segment{Kind: lessons.SegExperiment, ID: "units"})
	page := newBrowserPage(t)
	w := `.experiment[data-experiment=units]`
	for _, lang := range []string{"en", "zh"} {
		for _, theme := range []string{"light", "dark"} {
			page.do(
				chromedp.Navigate(env.HTTP.URL+"/lessons/01-one?lang="+lang),
				chromedp.WaitVisible(chromedp.CSS(w+` [data-action=run]`)),
				chromedp.Evaluate[chromedp.Void](`localStorage.setItem("lab-theme", "`+theme+`")`),
				chromedp.Reload(),
				chromedp.WaitVisible(chromedp.CSS(w+` [data-action=run]`)),
			)
			if page.eval(`document.querySelector(".exp-out:not([hidden]) .exp-chart canvas") ? 1 : 0`) == 0 {
				page.do(chromedp.Click(chromedp.CSS(w+` [data-action=run]`)), chromedp.WaitVisible(chromedp.CSS(w+` .exp-status.status-done`)))
			}
			page.do(chromedp.Poll[chromedp.Void](`document.querySelectorAll("` + w + ` .exp-chart canvas").length === 2`))
			js, err := chromedp.Run(page.ctx, chromedp.Evaluate[string](chartCheckJS))
			if err != nil {
				t.Fatal(err)
			}
			var charts []struct {
				Unit, Title, Legend string
				Contrast, TitleW    float64
				PlotH               float64
			}
			if err := jsonUnmarshal(js, &charts); err != nil || len(charts) != 2 {
				t.Fatalf("%s %s: charts %s (%v)", lang, theme, js, err)
			}
			for _, c := range charts {
				where := fmt.Sprintf("%s, %s theme, %s chart", lang, theme, c.Unit)
				if c.Contrast < 4.5 {
					t.Errorf("%s: axis text contrast %.2f:1, want ≥ 4.5:1", where, c.Contrast)
				}
				if c.TitleW > c.PlotH {
					t.Errorf("%s: y-axis title %q is %.0f px, the plot %.0f px high: clipped", where, c.Title, c.TitleW, c.PlotH)
				}
				if containsAny(c.Legend, "rtt_us_64", "receiver_cpu_ms") {
					t.Errorf("%s: legend shows raw series ids: %q", where, c.Legend)
				}
			}
		}
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// chartAxesJS reads each chart's axis titles, x tick labels, scale ranges,
// shaded bands and legend labels.
const chartAxesJS = `(function(){
  var out = [];
  document.querySelectorAll(".exp-chart").forEach(function(box){
    var u = box._plot; if (!u) return;
    out.push({unit: box.dataset.unit, y: u.axes[1].label || "", x: u.axes[0].label || "",
      ticks: (u.axes[0]._values || []).join("|"), xMax: u.scales.x.max, yMax: u.scales.y.max, bands: (u.bands || []).length,
      legend: Array.prototype.map.call(box.querySelectorAll(".u-legend .u-series .u-label"), function(l){ return l.textContent; }).join("|")});
  });
  return JSON.stringify(out); })()`

// Charts say what they plot and on which scale (issue 30, items 4, 8 and
// 11): perf-mr-cost's y axis is the time of a call on a linear scale (not
// "round trip (µs, log)"), its sizes read 16 MiB (not "16,777,21"); the
// loss sweep's first step — one x value — keeps a narrow loss axis and a
// goodput axis near 100 %, shades each series' spread, and its Chinese
// legend carries no English unit ("(% resent)").
func TestChartsSayWhatTheyPlot(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	widgetCourse(env, lessons.Segment{Kind: lessons.SegExperiment, ID: "perf-mr-cost"}, lessons.Segment{Kind: lessons.SegExperiment, ID: "loss-sweep"})
	page := newBrowserPage(t)
	type chart struct {
		Unit, Y, X, Ticks, Legend string
		XMax, YMax                float64
		Bands                     int
	}
	for _, lang := range []string{"en", "zh"} {
		read := func(id string, n int) []chart {
			w := `.experiment[data-experiment=` + id + `]`
			page.do(
				chromedp.Navigate(env.HTTP.URL+"/lessons/01-one?lang="+lang),
				chromedp.WaitVisible(chromedp.CSS(w+` [data-action=run]`)),
				chromedp.Click(chromedp.CSS(w+` [data-action=run]`)),
				chromedp.WaitVisible(chromedp.CSS(w+` .exp-status.status-done`)),
				chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelectorAll("%s .exp-chart canvas").length === %d`, w, n)),
			)
			js, err := chromedp.Run(page.ctx, chromedp.Evaluate[string](strings.Replace(chartAxesJS, `document.querySelectorAll(".exp-chart")`, `document.querySelectorAll("`+w+` .exp-chart")`, 1)))
			if err != nil {
				t.Fatal(err)
			}
			var cs []chart
			if err := jsonUnmarshal(js, &cs); err != nil || len(cs) != n {
				t.Fatalf("%s %s: charts %s (%v)", lang, id, js, err)
			}
			return cs
		}
		mr := read("perf-mr-cost", 1)[0]
		// the status line beside the charts: one language, its punctuation
		// ("运行位置: vm." read as English in zh)
		if b := page.text(`.experiment[data-experiment=perf-mr-cost] [data-testid=run-backend] strong`); lang == "zh" && (strings.Contains(b, ": ") || strings.HasSuffix(strings.TrimSpace(b), ".")) {
			t.Errorf("zh backend line %q: want zh punctuation", b)
		}
		t.Logf("%s perf-mr-cost: y %q, x ticks %q", lang, mr.Y, mr.Ticks)
		if strings.Contains(mr.Y, "round trip") || strings.Contains(mr.Y, "往返") || strings.Contains(mr.Y, "log") || strings.Contains(mr.Y, "对数") {
			t.Errorf("%s: perf-mr-cost's linear chart of call times titled %q", lang, mr.Y)
		}
		if !strings.Contains(mr.Ticks, "MiB") || strings.Contains(mr.Ticks, "16,777") || strings.Contains(mr.Ticks, "16777") {
			t.Errorf("%s: perf-mr-cost's size ticks %q, want readable units (… 16 MiB)", lang, mr.Ticks)
		}
		for _, c := range read("loss-sweep", 2) {
			t.Logf("%s loss-sweep %s: x max %v, y max %v, bands %d, legend %q", lang, c.Unit, c.XMax, c.YMax, c.Bands, c.Legend)
			if c.XMax > 5 {
				t.Errorf("%s: one loss step at 0 %% drawn on a loss axis to %v %%", lang, c.XMax)
			}
			if c.Unit == "% of 0%" && c.YMax > 150 {
				t.Errorf("%s: goodput of 100 %% (range 90–110) drawn on an axis to %v", lang, c.YMax)
			}
			if c.Bands != 2 {
				t.Errorf("%s %s: %d shaded spreads, want 2 (RDMA and TCP, lowest to highest round)", lang, c.Unit, c.Bands)
			}
			series := c.Legend[strings.Index(c.Legend, "|")+1:] // the first label names the x axis
			if strings.Contains(series, "(%") || strings.Contains(c.Legend, "% resent") || strings.Contains(c.Legend, "of 0%") {
				t.Errorf("%s: legend carries the raw unit: %q", lang, series)
			}
		}
	}
}

// legendLayoutJS reads each legend entry of the charts at the current
// width: whether its value cell fell onto a line of its own (the orphaned
// "--" of issue 30 item 11), whether it reaches past its chart (clipped:
// .exp-chart hides what overflows), and the separator drawn after a label.
const legendLayoutJS = `(function(){
  var out = [];
  document.querySelectorAll(".exp-chart").forEach(function(box){
    var right = box.getBoundingClientRect().right;
    box.querySelectorAll(".u-legend tr.u-series").forEach(function(tr){
      var th = tr.querySelector("th"), td = tr.querySelector("td"), a = th.getBoundingClientRect();
      var shown = td && getComputedStyle(td).display !== "none" && td.getBoundingClientRect().width > 0;
      var b = shown ? td.getBoundingClientRect() : null;
      out.push({label: th.textContent, orphan: !!b && b.top >= a.bottom - 1,
        clipped: Math.max(a.right, b ? b.right : 0) > right + 1,
        sep: getComputedStyle(th, "::after").content});
    });
  });
  return JSON.stringify(out); })()`

// Legends stay readable on a phone (issue 30 item 11): at 375 px no legend
// entry's value falls alone onto the next line, none runs past its chart,
// and a Chinese legend separates label and value with "：", not ":".
func TestLegendsOnAPhone(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	widgetCourse(env, lessons.Segment{Kind: lessons.SegExperiment, ID: "loss-sweep"})
	page := newBrowserPage(t)
	w := `.experiment[data-experiment=loss-sweep]`
	for _, vp := range []struct{ w, h int64 }{{375, 812}, {1280, 900}} {
		for _, lang := range []string{"en", "zh"} {
			where := fmt.Sprintf("%d px, %s", vp.w, lang)
			page.openWidget(env.HTTP.URL+"/lessons/01-one?lang="+lang, w, vp.w, vp.h)
			page.do(
				chromedp.Click(chromedp.CSS(w+` [data-action=run]`)),
				chromedp.WaitVisible(chromedp.CSS(w+` .exp-status.status-done`)),
				chromedp.Poll[chromedp.Void](`document.querySelectorAll("`+w+` .exp-chart .u-legend tr.u-series").length >= 14`),
			)
			js, err := chromedp.Run(page.ctx, chromedp.Evaluate[string](legendLayoutJS))
			if err != nil {
				t.Fatal(err)
			}
			var entries []struct {
				Label, Sep      string
				Orphan, Clipped bool
			}
			if err := jsonUnmarshal(js, &entries); err != nil || len(entries) < 14 {
				t.Fatalf("%s: legend entries %s (%v)", where, js, err)
			}
			for _, e := range entries {
				if e.Orphan {
					t.Errorf("%s: the value of legend entry %q fell onto a line of its own", where, e.Label)
				}
				if e.Clipped {
					t.Errorf("%s: legend entry %q runs past its chart (clipped)", where, e.Label)
				}
				if lang == "zh" && strings.Contains(e.Sep, ":") && !strings.Contains(e.Sep, "：") {
					t.Errorf("%s: legend entry %q separated by %s", where, e.Label, e.Sep)
				}
			}
		}
	}
}
