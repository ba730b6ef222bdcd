package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/rdmalab/rdmalab/internal/labproc"
)

// Timeouts are generous because two cores are shared by several builds and
// a QEMU guest; they only stop a hung test, they never judge speed.
const (
	browserStartTimeout = 2 * time.Minute
	stepTimeout         = 60 * time.Second
)

// browser is one headless Chromium with a fresh profile (so a fresh learner
// cookie and empty localStorage), one tab, and the lab it talks to.
type browser struct {
	t    *testing.T
	ctx  context.Context // the tab; no deadline (a deadline would end the browser)
	lab  *labproc.Server
	name string

	mu       sync.Mutex
	problems []string // uncaught exceptions: any fails the test
	console  []string // console.error/warn lines, shown on failure
}

// chromium is the one browser process of the package run: starting
// Chromium costs seconds on a loaded machine, so tests share the process
// and each gets its own browser context (own cookies, localStorage and
// cache: a new learner), which is as fresh as a new profile.
var chromium struct {
	once   sync.Once
	ctx    context.Context // the browser's root context
	cancel context.CancelFunc
	err    error
}

// startChromium launches the shared headless Chromium with a fresh profile
// directory under dir.
func startChromium(dir string) (context.Context, error) {
	chromium.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(chromiumPath),
			chromedp.Headless,
			chromedp.NoSandbox, // tests run as root
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("accept-lang", "en-US,en"),
			chromedp.UserDataDir(dir),
			chromedp.WindowSize(1280, 900),
		)
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelBrowser := chromedp.NewContext(allocCtx)
		chromium.cancel = func() { cancelBrowser(); cancelAlloc() }
		// The first Do starts the browser; it must not carry a deadline (that
		// would end the browser), so a watchdog bounds it instead.
		watchdog := time.AfterFunc(browserStartTimeout, cancelAlloc)
		err := chromedp.Do(ctx)
		watchdog.Stop()
		if err != nil {
			chromium.err = fmt.Errorf("start Chromium (%s): %w", chromiumPath, err)
			return
		}
		chromium.ctx = ctx
	})
	return chromium.ctx, chromium.err
}

// stopChromium ends the shared browser, if it was started.
func stopChromium() {
	if chromium.cancel != nil {
		chromium.cancel()
	}
}

// newBrowser opens a tab in a new browser context for t, against l. On
// failure it saves a screenshot, the page's HTML and the server log tail
// (see saveArtifacts).
func newBrowser(t *testing.T, l *labproc.Server) *browser {
	t.Helper()
	need(t)
	root, err := startChromium(profileDir)
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{t: t, lab: l, name: t.Name()}
	ctx, cancel := chromedp.NewContext(root, chromedp.WithNewBrowserContext(), chromedp.WithListener(b.listen))
	t.Cleanup(cancel)
	// As with the browser, the first Do binds the tab to its context: no
	// deadline on it, a watchdog instead.
	watchdog := time.AfterFunc(stepTimeout, cancel)
	err = chromedp.Do(ctx)
	watchdog.Stop()
	if err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	b.ctx = ctx
	// The log domain reports Content-Security-Policy violations (source
	// "security"): every page must satisfy the lab's CSP, so each one fails
	// the test like an uncaught exception.
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("enable the browser log: %v", err)
	}
	// Registered after the tab's cleanup, so it runs first (LIFO).
	t.Cleanup(b.finish)
	return b
}

// listen runs in the tab's event loop: record, never block.
func (b *browser) listen(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg = d.Exception.Description
		}
		b.mu.Lock()
		b.problems = append(b.problems, fmt.Sprintf("%s:%d: %s", d.URL, d.LineNumber+1, msg))
		b.mu.Unlock()
	case *cdplog.EventEntryAdded:
		if e := ev.Entry; e != nil && (e.Source == cdplog.EntrySourceSecurity || strings.Contains(e.Text, "Content Security Policy")) {
			b.mu.Lock()
			b.problems = append(b.problems, "CSP: "+e.URL+": "+e.Text)
			b.mu.Unlock()
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeWarning {
			return
		}
		var parts []string
		for _, a := range ev.Args {
			if a.Value != nil {
				parts = append(parts, string(a.Value))
			} else {
				parts = append(parts, a.Description)
			}
		}
		b.mu.Lock()
		b.console = append(b.console, string(ev.Type)+": "+strings.Join(parts, " "))
		b.mu.Unlock()
	}
}

// finish fails the test on uncaught page exceptions and, on failure,
// saves what the learner would have seen.
func (b *browser) finish() {
	b.mu.Lock()
	problems := append([]string(nil), b.problems...)
	b.mu.Unlock()
	if len(problems) > 0 {
		b.t.Errorf("uncaught JavaScript exceptions or CSP violations:\n  %s", strings.Join(problems, "\n  "))
	}
	if b.t.Failed() {
		b.saveArtifacts()
	}
}

// saveArtifacts writes screenshot.png, page.html, console.txt and
// server.log for a failed test: under the test's artifact directory with
// `go test -artifacts`, else under a directory in os.TempDir() (printed).
func (b *browser) saveArtifacts() {
	dir := artifactDir(b.t)
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "screenshot.png"), png, 0o644)
	} else {
		b.t.Logf("artifacts: no screenshot: %v", err)
	}
	if html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.documentElement.outerHTML`)); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "page.html"), []byte(html), 0o644)
	} else {
		b.t.Logf("artifacts: no page HTML: %v", err)
	}
	b.mu.Lock()
	console := strings.Join(append(append([]string(nil), b.problems...), b.console...), "\n")
	b.mu.Unlock()
	_ = os.WriteFile(filepath.Join(dir, "console.txt"), []byte(console+"\n"), 0o644)
	if b.lab != nil {
		_ = os.WriteFile(filepath.Join(dir, "server.log"), []byte(b.lab.Tail(400)), 0o644)
	}
	b.t.Logf("artifacts of the failure (screenshot, page HTML, console, server log): %s", dir)
}

// artifactDir is t.ArtifactDir() when `go test -artifacts` keeps it, else
// a fresh directory under os.TempDir() that outlives the test.
func artifactDir(t *testing.T) string {
	if f := flag.Lookup("test.artifacts"); f != nil && f.Value.String() == "true" {
		return t.ArtifactDir()
	}
	name := regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name(), "_")
	dir, err := os.MkdirTemp("", "rdmalab-e2e-"+name+"-")
	if err != nil {
		t.Logf("artifacts: %v", err)
		return ""
	}
	return dir
}

// do runs steps with a step timeout; what names them in a failure.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// run runs one action that returns a value.
func run[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// eval evaluates a JavaScript expression and decodes its value as T.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	return run(b, "evaluate "+short(expr), chromedp.Evaluate[T](expr))
}

// evalAsync evaluates a JavaScript expression that yields a promise (a
// fetch) and decodes what it resolves to.
func evalAsync[T any](b *browser, expr string) T {
	b.t.Helper()
	return run(b, "evaluate "+short(expr), chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// waitFor polls a JavaScript condition until it is truthy (what names it).
// Evaluation errors count as "not yet": during a navigation the old
// document's context disappears under the poll. Events arriving live (SSE)
// can take a while on a loaded machine; the limit only ends a hung test.
func (b *browser) waitFor(what, cond string, timeout time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+cond+")"))
		cancel()
		if err == nil && ok {
			return
		}
		if err != nil {
			last = err
		}
		if b.ctx.Err() != nil || time.Now().After(deadline) {
			if last == nil {
				last = fmt.Errorf("still false after %s", timeout)
			}
			b.t.Fatalf("waiting for %s (%s): %v", what, short(cond), last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// open loads path on the lab and waits for the document to be ready.
func (b *browser) open(path string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.lab.URL+path))
	b.waitLoaded("page " + path)
}

// waitLoaded waits until the current document finished loading.
func (b *browser) waitLoaded(what string) {
	b.t.Helper()
	b.waitFor(what+" loaded", `document.readyState === "complete" && !window.__e2eOld`, stepTimeout)
}

// navigates runs steps that make the page navigate (a link, a form submit)
// and waits for the new document: a marker on the old window must vanish.
func (b *browser) navigates(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	b.do(what+": mark page", chromedp.Evaluate[chromedp.Void](`window.__e2eOld = true`))
	b.do(what, steps...)
	b.waitLoaded(what)
}

// text is the trimmed textContent of the first match of a CSS selector.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return strings.TrimSpace(eval[string](b, fmt.Sprintf(`(function(){var e=document.querySelector(%q);return e?e.textContent:"<no element>"})()`, sel)))
}

// count is the number of matches of a CSS selector.
func (b *browser) count(sel string) int {
	b.t.Helper()
	return eval[int](b, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel))
}

// click clicks the first element matching a CSS selector (scrolled into view).
func (b *browser) click(sel string) {
	b.t.Helper()
	b.do("click "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

// flow times a test for the summary printed by TestMain; every flow needs
// the package's setup (see need).
func flow(t *testing.T) {
	t.Helper()
	need(t)
	t0 := time.Now()
	t.Cleanup(func() { timings.add(t.Name(), time.Since(t0)) })
}
