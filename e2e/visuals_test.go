package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

const lesson01EN = "/lessons/" + lesson01 + "?lang=en"

// TestDiagramStepThrough: the TCP vs RDMA drawing steps through a
// message's trip with buttons and keys, shows the cost of each step RDMA
// removes, switches path, and plays.
func TestDiagramStepThrough(t *testing.T) {
	flow(t)
	b := newBrowser(t, shared)
	b.open(lesson01EN)
	b.waitFor("diagram controls", `document.querySelector("[data-testid=diagram-controls]")`, stepTimeout)

	now := func() string {
		return eval[string](b, `document.querySelector("[data-testid=diagram-now]").dataset.step`)
	}
	current := func() []string {
		return eval[[]string](b, `Array.from(document.querySelectorAll("figure[data-diagram=tcp-vs-rdma] g.step.is-current")).map(g => g.dataset.step)`)
	}
	if s := now(); s != "tcp-app" {
		t.Fatalf("the trip starts at %q, want tcp-app", s)
	}
	if !eval[bool](b, `document.querySelector(".rd-controls .rd-prev").disabled`) {
		t.Error("Previous is enabled on the first step")
	}

	// Next: the copy, a step RDMA removes, highlighted with its cost.
	b.click(".rd-controls .rd-next")
	if s := now(); s != "tcp-copy" {
		t.Fatalf("after Next the step is %q, want tcp-copy", s)
	}
	if c := current(); len(c) != 1 || c[0] != "tcp-copy" {
		t.Errorf("highlighted in the drawing: %v, want [tcp-copy]", c)
	}
	cost := b.text("[data-testid=diagram-cost]")
	if !strings.Contains(cost, "12.5 GB") {
		t.Errorf("the copy step's cost reads %q, want the lesson's 12.5 GB/s figure", cost)
	}
	if !eval[bool](b, `document.querySelector("[data-testid=diagram-now]").classList.contains("is-removed")`) {
		t.Error("a removed step is not marked as removed")
	}

	// Keyboard: → steps, End jumps to the last step and its summary, Home back.
	b.do("focus Next", chromedp.Focus(chromedp.CSS(".rd-controls .rd-next")))
	b.do("press →", chromedp.KeyEvent(kb.ArrowRight))
	if s := now(); s != "tcp-stack" {
		t.Errorf("after → the step is %q, want tcp-stack", s)
	}
	b.do("press End", chromedp.KeyEvent(kb.End))
	if s := now(); s != "tcp-wakeup" {
		t.Errorf("after End the step is %q, want tcp-wakeup", s)
	}
	if sum := b.text("[data-testid=diagram-now] .rd-summary"); !strings.Contains(sum, "RDMA removes 5 of these 7 steps") {
		t.Errorf("the last TCP step's summary reads %q", sum)
	}
	// Next became disabled under the focus: the focus must stay in the controls.
	if !eval[bool](b, `document.activeElement && document.activeElement.closest(".rd-controls") !== null`) {
		t.Errorf("focus left the controls at the last step (now on %s)", eval[string](b, `document.activeElement.outerHTML.slice(0, 80)`))
	}
	b.do("press Home", chromedp.KeyEvent(kb.Home))
	if s := now(); s != "tcp-app" {
		t.Errorf("after Home the step is %q, want tcp-app", s)
	}
	// Space on a focused button is a click: the keyboard reaches the path switch.
	b.do("focus RDMA path", chromedp.Focus(chromedp.CSS(`.rd-controls .rd-path[data-path=rdma]`)))
	b.do("press Space", chromedp.KeyEvent(" "))
	if s := now(); s != "rdma-post" {
		t.Errorf("after choosing the RDMA path the step is %q, want rdma-post", s)
	}
	if !eval[bool](b, `document.querySelector("figure[data-diagram=tcp-vs-rdma] svg[data-path=tcp]").classList.contains("is-inactive")`) {
		t.Error("the TCP drawing is not marked inactive on the RDMA path")
	}
	if p := eval[string](b, `document.querySelector(".rd-path[data-path=rdma]").getAttribute("aria-pressed")`); p != "true" {
		t.Errorf("RDMA path button aria-pressed = %q", p)
	}
	if n := b.count("[data-testid=diagram-cost]"); n != 0 {
		t.Error("an RDMA step shows a cost of a removed step")
	}

	// Play advances by itself; pressing it again pauses.
	b.click(".rd-controls .rd-play")
	b.waitFor("Play to advance", `document.querySelector("[data-testid=diagram-now]").dataset.step !== "rdma-post"`, 30*time.Second)
	// Pause, unless a stalled machine let Play reach the end (it stops there).
	if eval[string](b, `document.querySelector(".rd-play").getAttribute("aria-pressed")`) == "true" {
		b.click(".rd-controls .rd-play")
	}
	if p := eval[string](b, `document.querySelector(".rd-play").getAttribute("aria-pressed")`); p != "false" {
		t.Errorf("after pausing, Play aria-pressed = %q", p)
	}
	if s := now(); s == "rdma-kernel" {
		t.Error("the trip stopped on the bypassed setup step, which is off the data path")
	}
}

// TestCalculatorAndWorthIt drives both widgets with JavaScript: live
// results without a page load, the same text the server renders for the
// same values, presets, and the worth-it recommendation swapped in place.
func TestCalculatorAndWorthIt(t *testing.T) {
	flow(t)
	b := newBrowser(t, shared)
	b.open(lesson01EN)
	b.waitFor("calculator ready", `document.querySelector("section.calc[data-ready]")`, stepTimeout)
	if src := eval[string](b, `document.querySelector("[data-testid=cpu-budget]").dataset.source`); src != "rule" {
		t.Errorf("a new learner's calculator source = %q, want rule", src)
	}
	sentence := `document.querySelector("[data-testid=cpu-budget-result] .calc-sentence").textContent`
	if s := eval[string](b, sentence); s != "100 Gbps × 1 GHz per Gbps = 100 GHz of CPU ≈ 33.3 cores of 3 GHz" {
		t.Errorf("rule-of-thumb result %q", s)
	}

	// Type 400 Gbps: the result follows without a page load.
	b.do("mark page", chromedp.Evaluate[chromedp.Void](`window.__e2eStay = true`))
	b.do("type 400 Gbps",
		chromedp.SetValue(chromedp.CSS("#cb-gbps"), ""),
		chromedp.SendKeys(chromedp.CSS("#cb-gbps"), "400"),
	)
	want := "400 Gbps × 1 GHz per Gbps = 400 GHz of CPU ≈ 133 cores of 3 GHz"
	b.waitFor("live result", sentence+` === "`+want+`"`, stepTimeout)
	if !eval[bool](b, `window.__e2eStay === true`) {
		t.Fatal("typing reloaded the page")
	}
	if n := b.count("[data-testid=cpu-budget-result] .cores-bar .core"); n != 134 {
		t.Errorf("cores bar has %d squares for 133.3 cores, want 133 and a part", n)
	}
	// An impossible value: flagged, no invented result.
	b.do("type a bad clock", chromedp.SetValue(chromedp.CSS("#cb-core"), ""), chromedp.SendKeys(chromedp.CSS("#cb-core"), "99"))
	b.waitFor("invalid flagged", `document.querySelector("#cb-core").getAttribute("aria-invalid") === "true" && !document.querySelector("[data-testid=cpu-budget-result] .calc-sentence")`, stepTimeout)
	b.click(`[data-testid=cpu-budget] a[data-preset=rule]`)
	b.waitFor("rule preset", sentence+` === "`+want+`"`, stepTimeout)

	// The URL remembers the values; the server renders the same sentence.
	b.do("blur", chromedp.Blur(chromedp.CSS("#cb-gbps")))
	b.waitFor("URL keeps the values", `location.search.includes("cb_gbps=400")`, stepTimeout)
	b.do("reload", chromedp.Reload())
	b.waitLoaded("reload")
	if s := eval[string](b, sentence); s != want {
		t.Errorf("after reload (server-rendered) the result is %q, want the live %q", s, want)
	}

	// Worth it: three answers → InfiniBand, with a reason per answer, in place.
	b.do("mark page", chromedp.Evaluate[chromedp.Void](`window.__e2eStay = true`))
	for _, sel := range []string{`input[name=wi_lib][value=yes]`, `input[name=wi_net][value=yes]`, `input[name=wi_lossless][value=ib]`} {
		b.click(sel)
	}
	res := `document.querySelector("[data-testid=worth-it-result]")`
	b.waitFor("recommendation go-ib", res+`.dataset.verdict === "go-ib"`, stepTimeout)
	if n := b.count("[data-testid=worth-it-result] .reasons li"); n != 3 {
		t.Errorf("recommendation has %d reasons, want one per question", n)
	}
	// Change one answer by keyboard (arrow keys move within a radio group).
	b.do("focus the network answer", chromedp.Focus(chromedp.CSS(`input[name=wi_net][value=yes]`)))
	b.do("arrow to 'no'", chromedp.KeyEvent(kb.ArrowDown))
	b.waitFor("recommendation not-network", res+`.dataset.verdict === "not-network"`, stepTimeout)
	if !eval[bool](b, `window.__e2eStay === true`) {
		t.Error("answering reloaded the page")
	}
	if !eval[bool](b, `location.search.includes("wi_net=no") && location.search.includes("cb_gbps=400")`) {
		t.Errorf("URL %q does not keep both widgets' values", eval[string](b, `location.search`))
	}
}

// TestVisualsWithoutJavaScript: with scripts off the diagram still reads
// (the step list with costs) and both widgets answer through GET forms.
func TestVisualsWithoutJavaScript(t *testing.T) {
	flow(t)
	b := newBrowser(t, shared)
	if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatalf("disable scripts: %v", err)
	}
	b.open(lesson01EN)
	if n := b.count("[data-testid=diagram-controls]"); n != 0 {
		t.Error("step controls exist without JavaScript")
	}
	b.click("[data-testid=diagram-steps] summary")
	if n := b.count("[data-testid=diagram-steps] li.removed .cost"); n != 5 {
		t.Errorf("step list shows %d costs, want one per removed step", n)
	}
	if !eval[bool](b, `document.querySelector("[data-testid=diagram-steps] li.removed .cost").getClientRects().length > 0`) {
		t.Error("the costs in the opened step list are not visible")
	}

	// Calculator: type and press Enter; the server answers.
	b.do("type 25 Gbps", chromedp.SetValue(chromedp.CSS("#cb-gbps"), ""), chromedp.SendKeys(chromedp.CSS("#cb-gbps"), "25"))
	b.navigates("submit the calculator with Enter", chromedp.SendKeys(chromedp.CSS("#cb-gbps"), kb.Enter))
	if s := b.text("[data-testid=cpu-budget-result] .calc-sentence"); s != "25 Gbps × 1 GHz per Gbps = 25 GHz of CPU ≈ 8.33 cores of 3 GHz" {
		t.Errorf("server-rendered result %q", s)
	}
	if h := eval[string](b, `location.hash`); h != "#cpu-budget" {
		t.Errorf("after submitting, the page is at %q, want #cpu-budget", h)
	}

	// Worth it: answer and submit; the calculator's value is kept.
	for _, sel := range []string{`input[name=wi_lib][value=yes]`, `input[name=wi_net][value=unmeasured]`, `input[name=wi_lossless][value=yes]`} {
		b.click(sel)
	}
	b.navigates("submit the worth-it form", chromedpClick(`[data-testid=worth-it-form] button[type=submit]`))
	if v := eval[string](b, `document.querySelector("[data-testid=worth-it-result]").dataset.verdict`); v != "measure" {
		t.Errorf("verdict %q, want measure", v)
	}
	if v := eval[string](b, `document.querySelector("#cb-gbps").value`); v != "25" {
		t.Errorf("the calculator lost its value (%q) when the other form was submitted", v)
	}
}

// TestChartBands runs chart-bands.js in the browser on a ping-pong latency
// chart (RDMA experiments need a Soft-RoCE backend these tests do not
// boot): both hardware reference bands are drawn behind the data on a log
// scale wide enough for both bands and a Soft-RoCE-like 300 µs, the same
// figures are written under the chart, and the axes carry their units.
func TestChartBands(t *testing.T) {
	flow(t)
	b := newBrowser(t, shared)
	b.open(lesson01EN)
	b.waitFor("uPlot and chart-bands.js", `typeof window.uPlot === "function" && typeof window.rdmalabChart === "function"`, stepTimeout)
	type chart struct {
		Drawn   int      `json:"drawn"`
		Distr   int      `json:"distr"`
		XDistr  int      `json:"xdistr"`
		Min     float64  `json:"min"`
		Max     float64  `json:"max"`
		Axes    []string `json:"axes"`
		Legend  []string `json:"legend"`
		Caption string   `json:"caption"`
		Last    bool     `json:"captionLast"`
	}
	got := evalAsync[chart](b, `(function(){
		var box = document.createElement("div"); box.className = "exp-chart"; box.style.width = "600px";
		document.querySelector("main").appendChild(box);
		var opts = { width: 600, height: 220, scales: { x: { time: false } },
			axes: [{ label: "s" }, { label: "µs", size: 60 }],
			series: [{ label: "s" }, { label: "rtt_median_us (µs)", stroke: "#2f6fde" }] };
		opts = window.rdmalabChart(opts, { experiment: "pingpong", unit: "µs", series: ["rtt_median_us"], lang: "en" });
		var u = new window.uPlot(opts, [[2, 16, 128, 1024], [310, 290, 305, 300]], box);
		// uPlot draws on its next frame.
		return new Promise(function(done){ requestAnimationFrame(function(){ setTimeout(function(){ done({ drawn: u.rdmalabBandsDrawn || 0, distr: u.scales.y.distr, min: u.scales.y.min, max: u.scales.y.max,
			xdistr: u.scales.x.distr, axes: u.axes.map(a => a.label), legend: u.series.map(s => s.label),
			caption: (box.querySelector("[data-testid=chart-ref]") || {}).textContent || "",
			captionLast: box.lastElementChild && box.lastElementChild.dataset.testid === "chart-ref" }); }, 50); }); });
	})()`)
	if got.Drawn != 2 {
		t.Errorf("%d reference bands drawn, want 2", got.Drawn)
	}
	if got.Distr != 3 || got.Min > 2 || got.Max < 310 {
		t.Errorf("y scale distr=%d [%v, %v], want a log scale covering 2–310 µs", got.Distr, got.Min, got.Max)
	}
	// Latency by message size: sizes on a log x axis.
	if len(got.Axes) != 2 || got.Axes[0] != "message size (bytes, log scale)" || !strings.Contains(got.Axes[1], "µs") || got.XDistr != 3 {
		t.Errorf("axes %q, x distr %d", got.Axes, got.XDistr)
	}
	if len(got.Legend) != 2 || got.Legend[1] != "median round trip" {
		t.Errorf("legend %q", got.Legend)
	}
	for _, want := range []string{"2–6 µs", "1–3 µs one way", "20–50 µs round trip", "10–25 µs one way"} {
		if !strings.Contains(got.Caption, want) {
			t.Errorf("chart caption %q lacks %q", got.Caption, want)
		}
	}
	if !got.Last {
		t.Error("the reference caption is not under the chart")
	}
	// The same chart in Chinese: axis and legend in the page's language.
	zh := eval[[]string](b, `(function(){ var o = window.rdmalabChart({ axes: [{}, {}], series: [{}, {}] },
		{ experiment: "pingpong", unit: "µs", series: ["rtt_median_us"], lang: "zh" }); return [o.axes[0].label, o.series[1].label]; })()`)
	if len(zh) != 2 || zh[0] != "消息大小（字节，对数刻度）" || zh[1] != "往返中位数" {
		t.Errorf("zh pingpong chart: axis and legend %q", zh)
	}
	// Other charts get axis names but no bands.
	plain := eval[int](b, `(function(){ var o = window.rdmalabChart({ axes: [{}, {}], series: [{}, {}] },
		{ experiment: "tcp-cost", unit: "Gbps", series: ["throughput"], lang: "en" }); return (o.plugins || []).length; })()`)
	if plain != 0 {
		t.Errorf("tcp-cost throughput chart got %d band plugins", plain)
	}
}
