package web

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/runs/runner"
)

// TestExperimentWidgetInBrowser drives headless Chromium through
// experiment.js: a preset fills the form, Run streams the run live (status,
// phases, a uPlot chart, a table, the verdict), and the replay page shows
// the same run again from the store.
func TestExperimentWidgetInBrowser(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	course := fixtureCourse()
	for _, l := range course.Lessons {
		for _, p := range l.Pages {
			for i, seg := range p.Body {
				if seg.Kind == lessons.SegExperiment {
					p.Body[i] = lessons.Segment{Kind: lessons.SegExperiment, ID: "ticks", Params: map[string]string{"n": "4"}}
				}
			}
		}
	}
	env.Course.Store(course)

	page := newBrowserPage(t)
	ctx := page.ctx
	do, text, eval := page.do, page.text, page.eval

	w := `.experiment[data-experiment=ticks]`
	do(
		chromedp.Navigate(env.HTTP.URL+"/lessons/01-one?lang=en"),
		chromedp.WaitVisible(chromedp.CSS(w+` [data-action=run]`)),
		chromedp.Click(chromedp.CSS(w+` [data-testid=preset]`)), // "many": n=20, filled without a page load
	)
	if n := eval(`Number(document.querySelector('` + w + ` input[name=n]').value)`); n != 20 {
		t.Fatalf("preset filled n=%d, want 20", n)
	}
	do(
		chromedp.Click(chromedp.CSS(w+` [data-action=run]`)),
		chromedp.WaitVisible(chromedp.CSS(w+` [data-testid=run-verdict]`)),
		chromedp.WaitVisible(chromedp.CSS(w+` .exp-status.status-done`)),
		// The chart is drawn on the next animation frame, late on a loaded machine.
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('`+w+` .exp-chart canvas').length > 0`),
	)
	if got := text(w + ` [data-testid=run-verdict]`); !strings.Contains(got, "ticked") {
		t.Errorf("verdict %q", got)
	}
	if got := text(w + ` [data-testid=run-backend]`); !strings.Contains(got, "host") {
		t.Errorf("backend %q", got)
	}
	if n := eval(`document.querySelectorAll('` + w + ` .exp-chart canvas').length`); n < 1 {
		t.Error("no uPlot chart drawn")
	}
	if n := eval(`document.querySelectorAll('` + w + ` [data-testid=run-table] td').length`); n != 2 {
		t.Errorf("table cells %d", n)
	}
	// every event arrived: 2 status + phase + 20 metrics + table + result + final status
	if n := eval(`Number(document.querySelector('` + w + ` .exp-out').dataset.lastSeq)`); n != 26 {
		t.Errorf("last seq seen %d, want 26", n)
	}
	href, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(w+` [data-testid=replay]`), "href"))
	if err != nil || !href.Exists {
		t.Fatal("no replay link", err)
	}

	// The replay page draws the same run from the stored events.
	do(
		chromedp.Navigate(env.HTTP.URL+href.Value+"?lang=zh"),
		chromedp.WaitVisible(chromedp.CSS(`.experiment .exp-status.status-done`)),
		chromedp.WaitVisible(chromedp.CSS(`.experiment .exp-chart canvas`)),
	)
	if got := text(`.experiment [data-testid=run-verdict]`); !strings.Contains(got, "滴答完毕") {
		t.Errorf("replayed verdict %q", got)
	}
}
