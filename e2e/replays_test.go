package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
)

// replayRunTimeout bounds one experiment run in the TCG guest (a hung run,
// not speed: the runner's own time limit stops it earlier).
const replayRunTimeout = 10 * time.Minute

// interactiveWait is how long a run may go before the test cancels it (an
// interactive experiment waits for commands; the others end well before).
const interactiveWait = 90 * time.Second

// TestEveryExperimentReplay runs every experiment the server lists — the
// ones other lessons add too — once, for real (host experiments on this
// kernel, RDMA ones in the Soft-RoCE guest under TCG), with each whole-number
// param at its minimum to keep it short, then opens its replay page:
//   - in Chinese, nothing a learner reads is English prose (tables,
//     phases, logs, statuses, params, verdicts, errors, chart axes and
//     legends), outside code, raw tool output and an allow-list, nor
//     Western punctuation in a Chinese sentence or an English label word
//     ("bytes", "(set)", "日志 (2)", "19 (0–31) %": zhcheck.Leaks);
//   - at 375 px the page never scrolls sideways (wide tables scroll in
//     their own box).
//
// The lab page is checked in Chinese too.
func TestEveryExperimentReplay(t *testing.T) {
	need(t)
	dir := t.TempDir()
	vmdir := guestDir
	// The guest image carries the labagent beside this labserver as its agent.
	if out, err := exec.Command(labBinary, "vm", "build", "--dir", vmdir).CombinedOutput(); err != nil {
		t.Fatalf("build the guest image: %v\n%s", err, out)
	}
	lab, err := startLab(filepath.Join(dir, "lab"), []string{"LAB_BACKEND=vm", "LAB_VM_DIR=" + vmdir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Stop(labStopTimeout) })

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: time.Minute}
	getJSON := func(path string, out any) {
		t.Helper()
		res, err := c.Get(lab.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	// The guest boots under TCG: wait for the lab to be ready.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var st struct{ State, Reason string }
		getJSON("/api/lab", &st)
		if st.State == "ready" {
			break
		}
		// A failed boot (TCG on a loaded machine) is retried by the server.
		if st.State == "none" || time.Now().After(deadline) {
			t.Fatalf("the Soft-RoCE lab is %s: %s", st.State, st.Reason)
		}
		time.Sleep(2 * time.Second)
	}

	var list struct {
		Experiments []struct {
			ID     string
			Params []struct {
				Name    string
				Kind    string
				Min     int64
				Default any
			}
		}
	}
	getJSON("/api/experiments", &list)
	exps := list.Experiments
	if len(exps) < 5 {
		t.Fatalf("the server lists %d experiments", len(exps))
	}

	b := newBrowser(t, lab)
	b.do("375 px viewport", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile))
	only := map[string]bool{}
	for _, id := range strings.Split(os.Getenv("LAB_E2E_REPLAY_ONLY"), ",") {
		if id != "" {
			only[id] = true
		}
	}
	for _, e := range exps {
		if len(only) > 0 && !only[e.ID] {
			continue // a developer's quick check of a few (make test runs all)
		}
		params := map[string]any{}
		for _, p := range e.Params {
			params[p.Name] = p.Default
			if p.Kind == "int" {
				params[p.Name] = p.Min
			}
		}
		body, _ := json.Marshal(map[string]any{"experiment": e.ID, "params": params})
		var created struct{ ID string }
		var res *http.Response
		// One learner runs every experiment back to back, faster than the
		// per-learner run rate (web.DefaultLimits): as a polite client would, wait as
		// long as Retry-After says and submit again.
		for try := 0; ; try++ {
			var err error
			res, err = c.Post(lab.URL+"/api/runs", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			json.NewDecoder(res.Body).Decode(&created)
			res.Body.Close()
			if res.StatusCode != http.StatusTooManyRequests || try == 3 {
				break
			}
			wait, err := strconv.Atoi(res.Header.Get("Retry-After"))
			if err != nil || wait < 1 || wait > 60 {
				t.Fatalf("%s: 429 with Retry-After %q", e.ID, res.Header.Get("Retry-After"))
			}
			time.Sleep(time.Duration(wait) * time.Second)
		}
		if res.StatusCode != http.StatusCreated {
			t.Errorf("%s: submit answered %d", e.ID, res.StatusCode)
			continue
		}
		if walk := stepWalks[e.ID]; walk != nil {
			// the step-through's tables, mistakes and reconnects are
			// read in the replay too, not only its first step
			driveSteps(t, c, lab.URL+"/api/runs/"+created.ID, walk)
		}
		var run struct{ Status, Error string }
		ctx, cancel := context.WithTimeout(context.Background(), replayRunTimeout)
		started, cancelled := time.Now(), false
		for ctx.Err() == nil {
			getJSON("/api/runs/"+created.ID, &run)
			if run.Status != "queued" && run.Status != "running" {
				break
			}
			// An interactive run (a step-through) waits for the learner:
			// cancel it after a while; its replay is checked all the same.
			// A walked one ends by itself (its last command tears down).
			if !cancelled && stepWalks[e.ID] == nil && time.Since(started) > interactiveWait {
				cancelled = true
				if res, err := c.Post(lab.URL+"/api/runs/"+created.ID+"/cancel", "application/json", nil); err == nil {
					res.Body.Close()
				}
				t.Logf("%s: still going after %s, cancelled", e.ID, interactiveWait)
			}
			time.Sleep(250 * time.Millisecond) // GETs are not rate-limited
		}
		cancel()
		if cancelled && run.Status == "cancelled" {
			run.Status = "done" // cancelled by the test, not a failure of the experiment
		}
		if run.Status != "done" {
			msg := fmt.Sprintf("%s with %v: the run ended %s: %s", e.ID, params, run.Status, run.Error)
			if cleanZh[e.ID] {
				t.Error(msg)
			} else {
				t.Log("not failed (the experiment's owner checks its runs): " + msg)
			}
		}
		// The replay page shares the cookie-less browser: a run's link is public.
		b.open("/runs/" + created.ID + "?lang=zh")
		b.waitFor(e.ID+" replayed", `document.querySelector(".experiment[data-final=true]")`, stepTimeout)
		if cleanZh[e.ID] {
			checkChinese(t, b, "replay of "+e.ID)
		} else {
			// Reported, not failed, until its owner has moved it to
			// bilingual events and listed it in cleanZh.
			checkChinese(&logOnly{t}, b, "replay of "+e.ID)
		}
		if eval[bool](b, `!!document.querySelector("[data-testid=run-capture]")`) {
			// the capture's header fields are read too: the last packet
			// (a cut one where the snap length cut), then a NAK if any,
			// with every header group open
			b.waitFor(e.ID+" capture decoded", `document.querySelector("[data-testid=capture-list] tbody tr")`, stepTimeout)
			for _, row := range []string{`rows[rows.length-1]`, `document.querySelector("[data-testid=capture-list] tbody tr.cap-nak") || rows[0]`} {
				eval[bool](b, `(function(){ var rows = document.querySelectorAll("[data-testid=capture-list] tbody tr"); (`+row+`).click();
					document.querySelectorAll("[data-testid=capture-fields] details").forEach(function (d) { d.open = true; }); return true; })()`)
				checkChinese(t, b, "capture fields of "+e.ID)
			}
		}
		checkNoSideways(t, b, "replay of "+e.ID)
		t.Logf("%s: %s", e.ID, run.Status)
	}
	b.open("/lab?lang=zh")
	checkChinese(t, b, "lab page")
	checkNoSideways(t, b, "lab page")
	b.open("/runs?lang=zh")
	checkNoSideways(t, b, "run history")
}

// stepWalks are the commands sent to an interactive experiment so that its
// replay holds every kind of step: verbs-steps with a wrong QPN and too few
// RNR retries, each failure shown, reconnected and retried to the end.
var stepWalks = map[string][]string{
	"verbs-steps": {"next", "next", "next", "next", "next", "next", "next", "wrong-qpn", "few-rnr", "next", "next",
		"reconnect", "next", "next", "next", "next", "reconnect", "next", "next", "next"},
}

// driveSteps posts each command of walk to the run at url as a learner
// does: the next one once the run has answered the last with its step
// (the guest reads commands one at a time), waiting while it is queued.
func driveSteps(t *testing.T, c *http.Client, url string, walk []string) {
	t.Helper()
	steps := followSteps(c, url+"/events")
	defer steps.stop()
	for i, cmd := range walk {
		// the start step and one step per command so far
		if !steps.waitFor(i+1, 3*time.Minute) {
			t.Errorf("command %d (%s): the run answered only %d steps in 3 minutes", i, cmd, steps.count()-1)
			return
		}
		body, _ := json.Marshal(map[string]string{"cmd": cmd})
		for try := 0; ; try++ {
			res, err := c.Post(url+"/commands", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode == http.StatusAccepted {
				break
			}
			if try == 300 {
				t.Errorf("command %s: answered %d for 5 minutes", cmd, res.StatusCode)
				return
			}
			time.Sleep(time.Second)
		}
	}
}

// stepCounter follows a run's event stream (SSE: the backlog, then live
// frames) and counts the step events it has sent, so that a walk sends
// its next command as soon as the step is there.
type stepCounter struct {
	mu      sync.Mutex
	n       int
	changed chan struct{} // closed (and replaced) when n grows
	cancel  context.CancelFunc
	done    chan struct{}
}

// followSteps reads url's stream until stop, reconnecting when it ends
// (each connection replays the backlog first, so it counts from the
// start again and the larger count holds). The client's cookies, but not
// its whole-request timeout: a walk's stream lasts minutes.
func followSteps(c *http.Client, url string) *stepCounter {
	ctx, cancel := context.WithCancel(context.Background())
	s := &stepCounter{changed: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	sse := &http.Client{Jar: c.Jar}
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			s.read(ctx, sse, url)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return s
}

func (s *stepCounter) read(ctx context.Context, c *http.Client, url string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return
	}
	res, err := c.Do(req)
	if err != nil {
		return
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	seen := 0
	for sc.Scan() {
		k := strings.Count(sc.Text(), `"type":"step"`)
		if k == 0 {
			continue
		}
		seen += k
		s.mu.Lock()
		if seen > s.n {
			s.n = seen
			close(s.changed)
			s.changed = make(chan struct{})
		}
		s.mu.Unlock()
	}
}

func (s *stepCounter) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// waitFor waits until the run has sent n steps, at most d.
func (s *stepCounter) waitFor(n int, d time.Duration) bool {
	deadline := time.After(d)
	for {
		s.mu.Lock()
		got, changed := s.n, s.changed
		s.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}

func (s *stepCounter) stop() {
	s.cancel()
	<-s.done
}

// visibleTextJS is the page's visible text, one string per text node,
// without code, raw tool output (stderr log lines), language names in the
// language switch and what is hidden.
const visibleTextJS = `(function(){
  var out = [], skip = "code, pre, kbd, samp, script, style, noscript, .log-stderr, [hidden], [aria-hidden=true], [lang=en], .langs, .exp-id";
  var w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (var n = w.nextNode(); n; n = w.nextNode()) {
    var p = n.parentElement, s = n.textContent.trim();
    if (!s || !p || p.closest(skip)) continue;
    if (p.closest("details:not([open])") && !p.closest("summary")) { /* closed log: still read */ }
    var cs = getComputedStyle(p); if (cs.display === "none" || cs.visibility === "hidden") continue;
    out.push(s);
  }
  return out; })()`

// chartAxesJS is the axis titles and legend labels of the page's charts:
// uPlot draws the axes on a canvas, so they are read from each plot.
const chartAxesJS = `(function(){ var out = [];
  document.querySelectorAll(".exp-chart").forEach(function (box) {
    var u = box._plot; if (!u) return;
    u.axes.forEach(function (a) { if (typeof a.label === "string" && a.label) out.push(a.label); });
    u.series.forEach(function (s) { if (typeof s.label === "string" && s.label) out.push(s.label); });
  }); return out; })()`

// cleanZh are the experiments whose Chinese replay must hold no English
// prose (their tables, logs and texts are bilingual: docs/architecture.md,
// "Runs and events"). Every other listed experiment is still run and
// checked, and its English is logged as pending rather than failed, so an
// experiment can land before its translation; add its id here once clean.
// When this test was written, diagnose, wire-capture (wire04), dscp-ecn,
// loss-sweep, retry-budget (net02), pingpong (l01), the perf-* (perf05)
// and the verbs03 experiments still printed English.
var cleanZh = map[string]bool{
	"tcp-cost": true, "memlock": true, "reg-mr": true, "write-silent": true, "rkey": true,
	"qp-states": true, "perftest": true, "rdma-resource": true, "syscalls": true,
	"pingpong": true, "verbs-steps": true, "ud-vs-rc": true, "rdma-cm": true,
	"loss-sweep": true, "retry-budget": true, "dscp-ecn": true, "wire-capture": true, "diagnose": true,
	"perf-sweep": true, "perf-inline": true, "perf-mtu": true, "perf-signal": true, "perf-postlist": true, "perf-wait": true,
	"perf-mr-cost": true, "perf-depth": true,
	// lesson 07
	"atomics": true, "write-imm": true, "srq": true, "mem-window": true, "async-events": true,
	"multicast": true, "rxe-limits": true,
	// lesson 08
	"nvmeof": true,
	// lesson 08's libraries
	"ucx-perf": true, "fabric-pingpong": true, "mpi-transport": true,
}

// reporter is what checkChinese needs of a *testing.T.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// logOnly turns errors into log lines.
type logOnly struct{ t *testing.T }

func (l *logOnly) Helper() { l.t.Helper() }
func (l *logOnly) Errorf(format string, args ...any) {
	l.t.Helper()
	l.t.Logf("pending translation: "+format, args...)
}

func checkChinese(t reporter, b *browser, where string) {
	t.Helper()
	var bad []string
	var punct []string
	for _, s := range append(eval[[]string](b, visibleTextJS), eval[[]string](b, chartAxesJS)...) {
		if strings.HasPrefix(s, "$ ") {
			continue // a command line the experiment ran, shown as is
		}
		if p := zhcheck.Prose(s); len(p) > 0 {
			bad = append(bad, fmt.Sprintf("%q in %q", p[0], short(s)))
		}
		punct = append(punct, zhcheck.Leaks(s)...)
	}
	if len(bad) > 0 {
		t.Errorf("%s in zh shows English prose:\n  %s", where, strings.Join(limit(uniq(bad), 20), "\n  "))
	}
	if len(punct) > 0 {
		t.Errorf("%s in zh shows Western punctuation or English labels:\n  %s", where, strings.Join(limit(uniq(punct), 20), "\n  "))
	}
}

func checkNoSideways(t *testing.T, b *browser, where string) {
	t.Helper()
	w := eval[map[string]float64](b, `({scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth})`)
	if w["scroll"] > w["client"]+1 {
		wide := eval[[]string](b, `(function(){ var cw = document.documentElement.clientWidth, out = [];
			document.querySelectorAll('body *').forEach(function(e){
				var r = e.getBoundingClientRect(); if (r.right <= cw + 1 || r.width === 0) return;
				for (var p = e.parentElement; p; p = p.parentElement) { var o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') return; }
				out.push(e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).split(' ').join('.') : '') + ' right=' + Math.round(r.right));
			}); return out; })()`)
		t.Errorf("%s at 375 px scrolls sideways (%v px wide):\n  %s", where, w["scroll"], strings.Join(limit(wide, 10), "\n  "))
	}
}
