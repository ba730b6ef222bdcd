package web

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/runs/runner"
)

// widgetCourse places experiments ids on lesson 01-one instead of memlock.
func widgetCourse(env *runEnv, segs ...lessons.Segment) {
	course := fixtureCourse()
	for _, l := range course.Lessons {
		for _, p := range l.Pages {
			var body []lessons.Segment
			for _, seg := range p.Body {
				if seg.Kind == lessons.SegExperiment {
					body = append(body, segs...)
					continue
				}
				body = append(body, seg)
			}
			p.Body = body
		}
	}
	env.Course.Store(course)
}

// The run widget as issue 14 found it broken: y = 0 points must reach the
// chart; while the learner has a live run Run stays disabled (after a
// reload, in a second tab, on Enter in a field) and keeps the focus; a
// refusal never wipes the live output; the form shows the live run's
// params; a preset cues the learner to press Run.
func TestRunWidgetKeepsTheLiveRun(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	widgetCourse(env,
		lessons.Segment{Kind: lessons.SegExperiment, ID: "ticks", Params: map[string]string{"n": "4"}},
		lessons.Segment{Kind: lessons.SegExperiment, ID: "hold"})
	page := newBrowserPage(t)
	do, eval := page.do, page.eval
	ticks, hold := `.experiment[data-experiment=ticks]`, `.experiment[data-experiment=hold]`
	lesson := env.HTTP.URL + "/lessons/01-one?lang=en"

	// Zero reaches the chart: ticks' first point is (0, 0).
	do(
		chromedp.Navigate(lesson),
		chromedp.WaitVisible(chromedp.CSS(ticks+` [data-action=run]`)),
		chromedp.Click(chromedp.CSS(ticks+` [data-action=run]`)),
		chromedp.WaitVisible(chromedp.CSS(ticks+` .exp-status.status-done`)),
		// The chart is drawn on the next animation frame, which may come
		// after the final status on a loaded machine.
		chromedp.Poll[chromedp.Void](`!!document.querySelector('`+ticks+` .exp-chart')._plot`),
	)
	if n := eval(`(function(){var p=document.querySelector('` + ticks + ` .exp-chart')._plot; var i=p.data[0].indexOf(0); return i<0 ? -1 : (p.data[1][i] === 0 ? 1 : 0)})()`); n != 1 {
		t.Errorf("the point (0, 0) is not on the chart (%d)", n)
	}

	// A preset fills the form and says to press Run.
	do(chromedp.Click(chromedp.CSS(ticks + ` [data-testid=preset]`)))
	if cue := page.text(ticks + ` [data-testid=run-cue]`); !strings.Contains(cue, "many") || !strings.Contains(cue, "Run") {
		t.Errorf("preset cue %q", cue)
	}

	// A live run: hold waits for its gate. Started with non-default params.
	key := time.Now().UnixNano() % (1 << 40)
	do(
		chromedp.SetValue(chromedp.CSS(hold+` input[name=key]`), fmt.Sprint(key)),
		chromedp.SetValue(chromedp.CSS(hold+` input[name=before]`), "3"),
		chromedp.Focus(chromedp.CSS(hold+` [data-action=run]`)),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(hold+` .exp-status.status-running`)),
	)
	if page.eval(`document.activeElement === document.querySelector('`+hold+` [data-action=run]') ? 1 : 0`) != 1 {
		t.Error("Enter on Run lost the keyboard focus")
	}
	checkLive := func(where string) {
		t.Helper()
		if got := page.attr(hold+` [data-action=run]`, "aria-disabled"); got != "true" {
			t.Errorf("%s: Run aria-disabled=%q during a live run", where, got)
		}
		if op := page.eval(`Math.round(100*Number(getComputedStyle(document.querySelector('` + hold + ` [data-action=run]')).opacity))`); op >= 100 {
			t.Errorf("%s: the disabled Run looks enabled (opacity %d%%)", where, op)
		}
		if got := page.attr(ticks+` [data-action=run]`, "aria-disabled"); got != "true" {
			t.Errorf("%s: another widget's Run is enabled during a live run (%q)", where, got)
		}
	}
	checkLive("first tab")
	// Enter in a field mid-run does nothing: no refusal, same output.
	seq := eval(`Number(document.querySelector('` + hold + ` .exp-out').dataset.lastSeq)`)
	do(
		chromedp.Focus(chromedp.CSS(hold+` input[name=after]`)),
		chromedp.KeyEvent(kb.Enter),
		chromedp.Sleep(300*time.Millisecond),
	)
	if n := eval(`document.querySelectorAll('` + hold + ` .exp-log li').length`); n != 3 {
		t.Errorf("after Enter mid-run the log has %d lines, want the 3 of the live run", n)
	}
	if eval(`document.querySelector('`+hold+` [data-testid=run-notice]').hidden ? 0 : 1`) != 0 {
		t.Errorf("Enter mid-run said %q", page.text(hold+` [data-testid=run-notice]`))
	}
	_ = seq

	// Reload: the widget follows the run again, with its params.
	do(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(hold+` .exp-status.status-running`)))
	checkLive("after reload")
	if v := eval(`Number(document.querySelector('` + hold + ` input[name=before]').value)`); v != 3 {
		t.Errorf("re-attached form shows before=%d, want the run's 3", v)
	}
	if n := eval(`document.querySelectorAll('` + hold + ` .exp-log li').length`); n != 3 {
		t.Errorf("re-attached log has %d lines", n)
	}

	// A second tab of the same browser (same learner).
	tab2, cancel := chromedp.NewContext(page.ctx)
	defer cancel()
	p2 := &browserPage{t: t, ctx: tab2}
	p2.do(chromedp.Navigate(lesson), chromedp.WaitVisible(chromedp.CSS(hold+` .exp-status.status-running`)))
	if got := p2.attr(hold+` [data-action=run]`, "aria-disabled"); got != "true" {
		t.Errorf("second tab: Run aria-disabled=%q", got)
	}
	// Pressing it anyway (a click on a dimmed button) changes nothing.
	p2.do(chromedp.Click(chromedp.CSS(hold+` [data-action=run]`)), chromedp.Sleep(300*time.Millisecond))
	if n := p2.eval(`document.querySelectorAll('` + hold + ` .exp-log li').length`); n != 3 {
		t.Errorf("second tab after a press: %d log lines", n)
	}

	// A tab loaded before the run started and pressed later: the refusal is
	// said above Run, the tab follows the live run, nothing is wiped.
	runs := env.Runner
	close(gate(key))
	page.do(chromedp.WaitVisible(chromedp.CSS(hold + ` .exp-status.status-done`)))
	key2 := key + 1
	p2.do(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(ticks+` [data-action=run]`)),
		chromedp.Click(chromedp.CSS(ticks+` [data-action=run]`)), chromedp.WaitVisible(chromedp.CSS(ticks+` .exp-status.status-done`)))
	// The run starts from "elsewhere": a request of the same learner that
	// no widget of tab 2 saw.
	page.eval(fmt.Sprintf(`fetch("/api/runs", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({experiment: "hold", params: {key: %d, before: 1}})}), 1`, key2))
	p2.do(chromedp.Sleep(300 * time.Millisecond))
	p2.do(chromedp.Click(chromedp.CSS(ticks+` [data-action=run]`)),
		chromedp.WaitVisible(chromedp.CSS(ticks+` [data-testid=run-notice]`)))
	if n := p2.eval(`document.querySelectorAll('` + ticks + ` [data-testid=run-table]').length`); n != 1 {
		t.Errorf("the refusal wiped the finished run's table (%d tables)", n)
	}
	if got := p2.text(ticks + ` [data-testid=run-notice]`); !strings.Contains(got, "already") && !strings.Contains(got, "Another") {
		t.Errorf("refusal notice %q", got)
	}
	p2.do(chromedp.WaitVisible(chromedp.CSS(hold + ` .exp-status.status-running`)))
	if got := p2.attr(ticks+` [data-action=run]`, "aria-disabled"); got != "true" {
		t.Errorf("after the refusal Run stays enabled (%q)", got)
	}
	close(gate(key2))
	p2.do(chromedp.WaitVisible(chromedp.CSS(hold + ` .exp-status.status-done`)))
	p2.do(chromedp.Poll[chromedp.Void](`document.querySelector('` + ticks + ` [data-action=run]').getAttribute('aria-disabled') === null`))
	_ = runs
}

// Cancel by keyboard keeps the focus in the widget (issue 30, item 10: it
// fell to <body>): on Cancel while the run stops, then on Run.
func TestCancelKeepsFocus(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	widgetCourse(env, lessons.Segment{Kind: lessons.SegExperiment, ID: "hold", Params: map[string]string{"key": "991"}})
	page := newBrowserPage(t)
	w := `.experiment[data-experiment=hold]`
	page.do(
		chromedp.Navigate(env.HTTP.URL+"/lessons/01-one?lang=en"),
		chromedp.WaitVisible(chromedp.CSS(w+` [data-action=run]`)),
		chromedp.Click(chromedp.CSS(w+` [data-action=run]`)),
		chromedp.WaitVisible(chromedp.CSS(w+` [data-action=cancel]`)),
		chromedp.Focus(chromedp.CSS(w+` [data-action=cancel]`)),
		chromedp.KeyEvent(kb.Enter),
	)
	// (the run may end at once, so the focus may already be on Run here)
	if n := page.eval(`document.activeElement === document.body ? 1 : 0`); n != 0 {
		t.Error("right after Enter on Cancel the focus fell to <body>")
	}
	page.do(chromedp.WaitVisible(chromedp.CSS(w + ` .exp-status.status-cancelled`)))
	if n := page.eval(`document.activeElement && document.activeElement.dataset.action === "run" ? 1 : 0`); n != 1 {
		t.Errorf("after the cancelled run ended the focus is not on Run (on body: %d)", page.eval(`document.activeElement === document.body ? 1 : 0`))
	}
}

// An error the experiment provokes on purpose (perf-inline's post above
// the threshold) shows as the intended outcome, not a red failure of the
// successful run (issue 30, item 10).
func TestExpectedErrorShownAsIntended(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	widgetCourse(env, lessons.Segment{Kind: lessons.SegExperiment, ID: "provoke"})
	page := newBrowserPage(t)
	w := `.experiment[data-experiment=provoke]`
	for _, lang := range []string{"en", "zh"} {
		page.do(
			chromedp.Navigate(env.HTTP.URL+"/lessons/01-one?lang="+lang),
			chromedp.WaitVisible(chromedp.CSS(w+` [data-action=run]`)),
			chromedp.Click(chromedp.CSS(w+` [data-action=run]`)),
			chromedp.WaitVisible(chromedp.CSS(w+` [data-testid=run-error]`)),
		)
		if n := page.eval(`document.querySelectorAll('` + w + ` [data-testid=run-error].expected:not([role=alert])').length`); n != 1 {
			t.Errorf("%s: the provoked EINVAL is not shown as expected (%d boxes marked)", lang, n)
		}
		label := page.text(w + ` [data-testid=run-error] strong`)
		if want := map[string]string{"en": "Expected error", "zh": "预期中的错误"}[lang]; !strings.Contains(label, want) {
			t.Errorf("%s: error box labelled %q, want %q", lang, label, want)
		}
	}
}
