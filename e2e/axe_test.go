package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/rdmalab/rdmalab/lessons"
)

// axeTags are the rule sets the lab promises: WCAG 2.0, 2.1 and 2.2, levels
// A and AA (axe-core's tags; 2.2 added only AA rules axe can test).
var axeTags = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"}

// axeSource is testdata/axe/axe.min.js (axe-core, vendored for the tests
// only: see its README), read once.
var axeSource = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile("testdata/axe/axe.min.js")
	return string(b), err
})

// axeViolation is one failed axe rule on a page, with the nodes it failed on.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

// axeState is one way a page is looked at: a colour scheme the system asks
// for and a window width.
type axeState struct {
	dark  bool
	width int64
}

func (s axeState) String() string {
	th := "light"
	if s.dark {
		th = "dark"
	}
	return fmt.Sprintf("%s %dpx", th, s.width)
}

// axeStates: light and dark at a laptop's width, then a phone's, dark and
// light (the order flips one thing at a time).
var axeStates = []axeState{{false, 1280}, {true, 1280}, {true, 375}, {false, 375}}

// setState emulates the colour scheme and the window width; the page
// follows both without a reload (theme.js and the CSS read the media query).
func (b *browser) setState(s axeState) {
	b.t.Helper()
	scheme := "light"
	if s.dark {
		scheme = "dark"
	}
	if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}, {Name: "prefers-reduced-motion", Value: "reduce"}},
	}); err != nil {
		b.t.Fatalf("emulate %s: %v", scheme, err)
	}
	h := int64(900)
	var opts []chromedp.EmulateViewportOption
	if s.width < 600 {
		h = 812
		opts = append(opts, chromedp.EmulateMobile)
	}
	b.do("viewport "+s.String(), chromedp.EmulateViewport(s.width, h, opts...))
	b.waitFor(s.String()+" applied", fmt.Sprintf(`matchMedia("(prefers-color-scheme: %s)").matches && document.documentElement.clientWidth <= %d`, scheme, s.width), stepTimeout)
}

// settledJS is true once the page's scripts have built what they build on
// load (editors, charts' tables), so axe sees the page a learner sees.
const settledJS = `document.readyState === "complete" && document.fonts.status === "loaded" &&
	document.querySelectorAll(".program").length === document.querySelectorAll(".program .cm-editor").length`

// axe runs axe-core on the current document and returns its violations.
func (b *browser) axe() []axeViolation {
	b.t.Helper()
	src, err := axeSource()
	if err != nil {
		b.t.Fatalf("axe-core: %v", err)
	}
	b.waitFor("page settled", settledJS, stepTimeout)
	if !eval[bool](b, `typeof window.axe === "object"`) {
		b.do("inject axe-core", evalVoid(src))
	}
	// Two frames: a theme or width change has been laid out and painted.
	tags, _ := jsonString(axeTags)
	return evalAsync[[]axeViolation](b, `new Promise(function(r){ requestAnimationFrame(function(){ requestAnimationFrame(r); }); }).then(function(){
		return axe.run(document, {runOnly: {type: "tag", values: `+tags+`}, resultTypes: ["violations"]});
	}).then(function(res){ return res.violations.map(function(v){
		return {id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(function(n){ return {target: n.target, failureSummary: n.failureSummary}; })};
	}); })`)
}

// idsJS lists what axe-core leaves to manual review ("incomplete") but a
// page of ours must never have: an id used twice, a field with several
// labels (a widget repeated on a page used to repeat its field ids).
const idsJS = `(function(){ var seen = {}, out = [];
	document.querySelectorAll('[id]').forEach(function(e){ if (seen[e.id] === 1) out.push('duplicate id ' + e.id); seen[e.id] = (seen[e.id] || 0) + 1; });
	document.querySelectorAll('input, select, textarea').forEach(function(e){
		if (e.labels && e.labels.length > 1) out.push((e.id || e.name) + ' has ' + e.labels.length + ' labels'); });
	return out; })()`

// checkAxe fails t with every violation axe finds on the page in state s.
func checkAxe(t *testing.T, b *browser, where string) {
	t.Helper()
	if bad := eval[[]string](b, idsJS); len(bad) > 0 {
		t.Errorf("%s: %d ids or labels repeated:\n  %s", where, len(bad), strings.Join(limit(bad, 10), "\n  "))
	}
	vs := b.axe()
	if len(vs) == 0 {
		return
	}
	sort.Slice(vs, func(i, j int) bool { return len(vs[i].Nodes) > len(vs[j].Nodes) })
	var lines []string
	n := 0
	for _, v := range vs {
		n += len(v.Nodes)
		lines = append(lines, fmt.Sprintf("%s (%s, %d nodes): %s", v.ID, v.Impact, len(v.Nodes), v.Help))
		for i, nd := range v.Nodes {
			if i == 4 {
				lines = append(lines, fmt.Sprintf("    … and %d more", len(v.Nodes)-4))
				break
			}
			lines = append(lines, fmt.Sprintf("    %v: %s", nd.Target, strings.ReplaceAll(strings.TrimSpace(nd.Summary), "\n", " / ")))
		}
	}
	t.Errorf("%s: axe-core finds %d violations on %d nodes:\n  %s", where, len(vs), n, strings.Join(lines, "\n  "))
}

// axePages are the learner's pages, each in both languages.
func axeLearnerPages() []string {
	// The leaderboard here is a learner's in no class (TestLeaderboard
	// checks a class's board, and a hidden one).
	p := []string{"/", "/me", "/join", "/lab", "/runs", "/no-such-page", "/lessons/06-performance/programs/write-rate/leaderboard"}
	for _, l := range courseLessons {
		p = append(p, "/lessons/"+l)
	}
	return p
}

// TestAxe runs axe-core (WCAG 2.0/2.1/2.2 A and AA) on every page of the
// lab, in both languages, light and dark, 1280 and 375 px wide: any
// violation fails. Subtests are named by page, so one page can be run
// alone: go test -run 'TestAxe/lessons_04' ./e2e/.
func TestAxe(t *testing.T) {
	flow(t)
	for _, p := range axeLearnerPages() {
		t.Run(strings.Trim(strings.ReplaceAll(p, "/", "_"), "_"), func(t *testing.T) {
			b := newBrowser(t, shared)
			for _, lang := range []string{"en", "zh"} {
				b.open(p + "?lang=" + lang)
				for _, s := range axeStates {
					b.setState(s)
					checkAxe(t, b, fmt.Sprintf("%s %s %s", p, lang, s))
				}
			}
		})
	}
	t.Run("instructor", func(t *testing.T) {
		b := newBrowser(t, shared)
		for _, lang := range []string{"en", "zh"} {
			b.open("/instructor/login?lang=" + lang)
			for _, s := range axeStates[:2] {
				b.setState(s)
				checkAxe(t, b, "/instructor/login "+lang+" "+s.String())
			}
		}
		instructorLogin(b)
		for _, p := range []string{"/instructor", "/instructor/account", "/instructor/classes", "/instructor/gradebook",
			"/instructor/answers", "/instructor/invitations", "/instructor/drafts", "/instructor/lti"} {
			for _, lang := range []string{"en", "zh"} {
				b.open(p + "?lang=" + lang)
				for _, s := range axeStates {
					b.setState(s)
					checkAxe(t, b, fmt.Sprintf("%s %s %s", p, lang, s))
				}
			}
		}
	})
}

// courseLessons are the built-in course's lessons, in order.
var courseLessons = []string{"01-why-rdma", "02-lossless-roce", "03-verbs-lifecycle", "04-first-program",
	"05-see-the-wire", "06-performance", "07-beyond-send-write", "08-upper-layers", "09-ring-allreduce"}

// jsonString is v as a JavaScript literal.
func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// instructorLogin logs b in as the lab's admin instructor.
func instructorLogin(b *browser) {
	b.t.Helper()
	b.open("/instructor/login")
	b.do("fill the login form",
		chromedp.SendKeys(chromedp.CSS(`[data-testid=instructor-login] input[name=username]`), "admin"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=instructor-login] input[name=password]`), instructorPassword),
	)
	b.navigates("log in", chromedpClick(`[data-testid=instructor-login] button[type=submit]`))
	if n := b.count("[data-testid=dashboard]"); n != 1 {
		b.t.Fatalf("after logging in: no dashboard (at %s)", eval[string](b, `location.pathname`))
	}
}

// TestAxeAfterRun runs axe-core on lesson 01 after its host experiments
// ran (tcp-cost draws live charts and a table, memlock shows its intended
// error), in both languages, light and dark, 1280 and 375 px: what a run
// adds to the page must pass too.
func TestAxeAfterRun(t *testing.T) {
	flow(t)
	b := newBrowser(t, shared)
	for _, lang := range []string{"en", "zh"} {
		b.open("/lessons/" + lesson01 + "?lang=" + lang)
		b.setState(axeStates[0])
		for _, exp := range []string{"memlock", "tcp-cost"} {
			w := widget(exp)
			if exp == "tcp-cost" {
				b.do("set the duration", chromedp.SetValue(chromedp.CSS(w+` [name=seconds]`), "1"))
			}
			b.click(w + ` [data-testid=run]`)
			runID(b, exp)
			waitStatus(b, w, "done")
		}
		// Each chart: a named figure described by its data table (filled
		// when opened: the toggle event comes after the click's task).
		cs := widget("tcp-cost") + ` .exp-chart-data`
		b.do("open the charts' data", evalVoid(`document.querySelectorAll('`+cs+`').forEach(function(d){ d.open = true; })`))
		b.waitFor("the data tables", `document.querySelectorAll('`+cs+`').length > 0 && Array.from(document.querySelectorAll('`+cs+`')).every(d => d.querySelector('table'))`, stepTimeout)
		charts := eval[[]map[string]any](b, `Array.from(document.querySelectorAll('`+widget("tcp-cost")+` .exp-chart')).map(function(c){
			var d = document.getElementById(c.getAttribute('aria-describedby') || '');
			var box = d && d.closest('details');
			var t = box && box.querySelector('table');
			return {role: c.getAttribute('role') || '', name: c.getAttribute('aria-label') || '', described: !!d,
				cols: t ? t.querySelectorAll('thead th').length : 0, rows: t ? t.querySelectorAll('tbody tr').length : 0,
				series: c._plot ? c._plot.series.length - 1 : -1};
		})`)
		if len(charts) == 0 {
			t.Errorf("%s: tcp-cost drew no chart", lang)
		}
		// The y axis's title is a line above the chart, whole at any width
		// (issue 44 item 6: rotated along the axis, a phone cut it off).
		titles := eval[[]map[string]any](b, `Array.from(document.querySelectorAll('`+widget("tcp-cost")+` .exp-chart')).map(function(c){
			var p = c.previousElementSibling, r = p && p.getBoundingClientRect(), cr = c.getBoundingClientRect();
			return {text: p && p.classList.contains('exp-chart-ytitle') ? p.textContent : '', fits: !!r && r.width > 0 && p.scrollWidth <= p.clientWidth + 1 && r.right <= cr.right + 1,
				axis: c._plot && c._plot.axes[1].label ? String(c._plot.axes[1].label) : ''};
		})`)
		for i, yt := range titles {
			if yt["text"] == "" || yt["fits"] != true || yt["axis"] != "" {
				t.Errorf("%s: chart %d's y title %v: want a whole line of text above the chart, none along the axis", lang, i, yt)
			}
		}
		for i, c := range charts {
			if c["role"] != "figure" || c["name"] == "" || c["described"] != true {
				t.Errorf("%s: chart %d is not a named figure described by its data: %v", lang, i, c)
			}
			if name, _ := c["name"].(string); lang == "zh" && (strings.Contains(name, ", ") || !eval[bool](b, hasCJK+`(`+jsString(name)+`)`)) {
				t.Errorf("zh: chart %d's name %q is not Chinese with Chinese punctuation", i, name)
			}
			if c["rows"].(float64) < 1 || c["cols"].(float64) != c["series"].(float64)+1 {
				t.Errorf("%s: chart %d's data table has %v rows and %v columns for %v series", lang, i, c["rows"], c["cols"], c["series"])
			}
		}
		if st := eval[map[string]string](b, `(function(){ var s = document.querySelector('`+widget("tcp-cost")+` [data-testid=run-status]'); return {role: s.getAttribute('role') || '', live: s.getAttribute('aria-live') || ''}; })()`); st["role"] != "status" {
			t.Errorf("%s: the run's status line is not a live region: %v", lang, st)
		}
		for _, s := range axeStates {
			b.setState(s)
			checkAxe(t, b, fmt.Sprintf("lesson 01 after runs, %s %s", lang, s))
		}
	}
}

// TestAxeAfterProgramRun boots a learner guest (QEMU; LAB_VM_DIR shares
// the built image) and runs axe-core on lesson 04 after program runs: a
// compile error (diagnostics listed and marked in the editor), then the
// solution (output, the peer's view, the verdict), in both languages,
// light and dark, 1280 and 375 px.
func TestAxeAfterProgramRun(t *testing.T) {
	flow(t)
	lab, err := startLab(filepath.Join(t.TempDir(), "lab"), []string{"LAB_BACKEND=vm", "LAB_VM_DIR=" + guestDir, "LAB_TERMINALS=1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := lab.Stop(labStopTimeout); err != nil {
			t.Errorf("stopping the vm labserver: %v", err)
		}
	})
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := course.Lesson("04-first-program").Program("open-device")
	const sel = `[data-program=open-device]`
	b := newBrowser(t, lab)
	b.open("/lessons/04-first-program?lang=en")
	b.waitFor("the editors", settledJS+` && document.querySelectorAll('.program .cm-editor').length === 4`, guestTimeout)

	setProgram(b, "open-device", "#include <stdio.h>\nint main(void)\n{\n\tint n = 0\n\treturn n;\n}\n")
	runProgram(b, "open-device")
	b.waitFor("the lint mark", `document.querySelectorAll('`+sel+` .cm-lintRange-error').length > 0`, guestTimeout)
	for _, s := range axeStates[:2] {
		b.setState(s)
		checkAxe(t, b, "lesson 04 after a compile error, en "+s.String())
	}
	setProgram(b, "open-device", string(p.Solution))
	runProgram(b, "open-device")
	for _, lang := range []string{"en", "zh"} {
		if lang == "zh" {
			// A reload in zh: the record and the saved code; then a run.
			b.open("/lessons/04-first-program?lang=zh")
			b.waitFor("the editors", settledJS, guestTimeout)
			runProgram(b, "open-device")
			// A program with the lab's peer: its report in Chinese.
			w := course.Lesson("04-first-program").Program("rdma-write")
			setProgram(b, "rdma-write", string(w.Solution))
			runProgram(b, "rdma-write")
			out := b.text(`[data-program=rdma-write] [data-testid=program-output]`)
			if !strings.Contains(out, "rxe1 上的对端") || strings.Contains(out, "peer on rxe1") {
				t.Errorf("zh: the peer's report is not Chinese: %q", out)
			}
		}
		for _, s := range axeStates {
			b.setState(s)
			checkAxe(t, b, fmt.Sprintf("lesson 04 after a passing run, %s %s", lang, s))
		}
	}
}
