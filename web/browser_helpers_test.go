package web

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserPage is one headless Chromium tab (Debian's chromium, never a
// download) for a handler-level browser test, with fail-fast helpers.
type browserPage struct {
	t   *testing.T
	ctx context.Context
}

// newBrowserPage starts Chromium for t; it is closed when t ends and every
// step shares a 90 s budget (generous: two cores shared with builds).
func newBrowserPage(t *testing.T) *browserPage {
	t.Helper()
	skipBrowserIfShort(t)
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("this test drives Debian's chromium (apt-get install chromium, or make test): ", err)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox)...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return &browserPage{t: t, ctx: ctx}
}

// skipBrowserIfShort keeps Chromium out of the quick tier (go test -short).
func skipBrowserIfShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: drives Chromium, not in the quick tier")
	}
}

func (p *browserPage) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, steps...); err != nil {
		p.t.Fatal(err)
	}
}

func (p *browserPage) attr(sel, name string) string {
	p.t.Helper()
	r, err := chromedp.Run(p.ctx, chromedp.AttributeValue(chromedp.CSS(sel), name))
	if err != nil {
		p.t.Fatal(err)
	}
	return r.Value
}

func (p *browserPage) text(sel string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		p.t.Fatal(err)
	}
	return s
}

func (p *browserPage) eval(js string) int {
	p.t.Helper()
	n, err := chromedp.Run(p.ctx, chromedp.Evaluate[int](js))
	if err != nil {
		p.t.Fatal(err)
	}
	return n
}

// openWidget opens url at a vw × vh viewport and waits for the Run button
// of the experiment widget w.
func (p *browserPage) openWidget(url, w string, vw, vh int64) {
	p.t.Helper()
	p.do(
		chromedp.EmulateViewport(vw, vh),
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(w+` [data-action=run]`)),
	)
}
