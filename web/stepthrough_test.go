package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/rdmaexp"
)

// fakeSteps is the step-through as the web layer sees it — the real
// definition's id, titles and commands — with a scripted Run on the host:
// no device, the same kinds of events in the same order. The real calls
// are tested in the guest (sandbox/rdmaexp, testVerbsSteps).
func fakeSteps() *sandbox.Experiment {
	e := rdmaexp.VerbsSteps()
	e.Needs = sandbox.NeedHost
	e.Run = func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
		cmds := sandbox.CommandsFrom(ctx)
		steps := []string{"open", "pd", "mr", "cq", "qp", "init", "exchange", "rtr", "rts", "write", "poll-write", "send", "poll-send", "teardown"}
		i, wrong, broken := 0, false, false
		offers := func() []string {
			switch {
			case i >= len(steps):
				return nil
			case broken:
				return []string{"reconnect", "finish"}
			case steps[i] == "rtr":
				return []string{"next", "wrong-qpn", "finish"}
			case steps[i] == "teardown":
				return []string{"next"}
			}
			return []string{"next", "finish"}
		}
		ok := true
		emit.Emit(sandbox.Event{Type: sandbox.EvStep, Name: "start", Message: "Ready", Messages: sandbox.Text{"en": "Ready", "zh": "准备就绪"}, OK: &ok, Offers: offers()})
		for c := range cmds {
			switch c.Cmd {
			case "finish":
				i = len(steps) - 1
			case "reconnect":
				broken, wrong, i = false, false, i-1
				emit.Emit(sandbox.Event{Type: sandbox.EvStep, Name: "reconnect", Message: "Reset and reconnect", OK: &ok, Offers: offers()})
				continue
			case "wrong-qpn":
				wrong = true
			}
			name := steps[i]
			good, status := true, ""
			if name == "poll-write" && wrong {
				good, status, broken = false, "IBV_WC_RETRY_EXC_ERR", true
			}
			i++
			emit.Emit(sandbox.Event{Type: sandbox.EvStep, Name: name, Message: "step " + name, Messages: sandbox.Text{"en": "step " + name, "zh": "步骤 " + name},
				Call: "ibv_" + name, Code: "ibv_" + name + "(…);", Table: &sandbox.Table{Columns: []string{"field", "value"}, Rows: stepRows},
				Detail: sandbox.Text{"en": "what " + name + " means", "zh": name + " 的含义"}, OK: &good, ErrnoName: status, Offers: offers()})
			if name == "teardown" {
				return nil
			}
		}
		return nil
	}
	return e
}

// stepRows are what the device answers at rtr, as the real step shows
// them: long field names beside long values.
var stepRows = [][]string{{"qp->qp_num", "0x11"}, {"path_mtu", "IBV_MTU_1024 (3)"}, {"dest_qp_num", "0x10014"}, {"rq_psn", "0x5b3c21"},
	{"ah_attr.grh.dgid", "fe80:0000:0000:0000:5c8f:ffffff:fe2e:7a0b"}}

// The step-through's result box shows its value column at 1280 and 375
// px (issue 30, item 1: only the field names showed, in tall empty rows;
// the values were pushed out of the card).
func TestStepThroughResultShowsValues(t *testing.T) {
	env := stepsEnv(t)
	page := newBrowserPage(t)
	w := `.stepthrough[data-experiment=verbs-steps]`
	for _, vp := range []struct{ w, h int64 }{{1280, 900}, {375, 812}} {
		page.do(
			chromedp.EmulateViewport(vp.w, vp.h),
			chromedp.Navigate(env.HTTP.URL+"/lessons/03-verbs-lifecycle?lang=zh"),
		)
		if vp.w == 1280 { // the first pass starts the session; the second finds it live after the reload
			page.do(
				chromedp.WaitEnabled(chromedp.CSS(w+` [data-action=start]`)),
				chromedp.Evaluate[chromedp.Void](`document.querySelector('`+w+` [data-action=start]').click()`),
				chromedp.Poll[chromedp.Void](`document.querySelector('`+w+` [data-cmd=next]:not([hidden])')`, chromedp.WithPollingTimeout(30*time.Second)),
			)
			page.eval(`document.querySelector('` + w + ` [data-cmd=next]:not([hidden])').click(), 1`)
		}
		page.do(chromedp.Poll[chromedp.Void](`document.querySelector('`+w+` .st-result td')`, chromedp.WithPollingTimeout(30*time.Second)))
		js, err := chromedp.Run(page.ctx, chromedp.Evaluate[string](`(function(){
  var out = [];
  document.querySelectorAll("`+w+` .st-result").forEach(function(tb){
    var card = tb.closest(".st-step").getBoundingClientRect();
    tb.querySelectorAll("tr").forEach(function(tr){
      var th = tr.querySelector("th").getBoundingClientRect(), td = tr.querySelector("td").getBoundingClientRect();
      out.push({field: tr.querySelector("th").textContent, tdW: Math.round(td.width), tdIn: td.left >= card.left - 1 && td.right <= card.right + 1, h: Math.round(Math.max(th.height, td.height))});
    });
  });
  return JSON.stringify(out); })()`))
		if err != nil {
			t.Fatal(err)
		}
		var rows []struct {
			Field  string
			TdW, H float64
			TdIn   bool
		}
		if err := json.Unmarshal([]byte(js), &rows); err != nil || len(rows) != len(stepRows) {
			t.Fatalf("%d px: result rows %s (%v)", vp.w, js, err)
		}
		for _, r := range rows {
			if r.TdW < 60 || !r.TdIn || r.H > 80 {
				t.Errorf("%d px: %s's value cell %v px wide, inside the card %v, row %v px high", vp.w, r.Field, r.TdW, r.TdIn, r.H)
			}
		}
	}
}

func stepsEnv(t *testing.T) *runEnv {
	env := newRunEnv(t, runner.Config{})
	env.Server.cfg.Lab = sandbox.InProcess{} // the lab is "ready"
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env.Course.Store(course)
	return env
}

// stepEvents waits for n step events of run id in the store.
func stepEvents(t *testing.T, env *runEnv, id string, n int) []sandbox.Event {
	t.Helper()
	for start := time.Now(); ; {
		evs, err := env.DB.RunEvents(context.Background(), id, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var steps []sandbox.Event
		for _, e := range evs {
			if e.Type == sandbox.EvStep {
				steps = append(steps, e)
			}
		}
		if len(steps) >= n {
			return steps
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("run %s: %d step events, want %d", id, len(steps), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRunCommandAPI: commands reach only the learner's own interactive
// run, only from the experiment's set, and each is stored before its answer.
func TestRunCommandAPI(t *testing.T) {
	env := stepsEnv(t)
	ann, bob := env.client(), env.client()
	id := env.submit(ann, "verbs-steps", nil)
	stepEvents(t, env, id, 1)
	post := func(c *http.Client, run, body string) (int, string) {
		var out struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		res := env.postJSON(c, "/api/runs/"+run+"/commands", body, &out)
		return res.StatusCode, out.Error.Message
	}
	for _, c := range []struct {
		who  *http.Client
		body string
		want int
	}{
		{bob, `{"cmd":"next"}`, http.StatusForbidden},
		{ann, `{"cmd":"rm -rf /"}`, http.StatusUnprocessableEntity},
		{ann, `{"cmd":"next","args":"x"}`, http.StatusBadRequest},
		{ann, `next`, http.StatusBadRequest},
	} {
		if got, msg := post(c.who, id, c.body); got != c.want {
			t.Errorf("%s: %d %q, want %d", c.body, got, msg, c.want)
		}
	}
	if got, msg := post(ann, id, `{"cmd":"next"}`); got != http.StatusAccepted {
		t.Fatalf("next: %d %s", got, msg)
	}
	steps := stepEvents(t, env, id, 2)
	if steps[1].Name != "open" {
		t.Errorf("second step %q", steps[1].Name)
	}
	evs, _ := env.DB.RunEvents(context.Background(), id, 0, 1000)
	var order []string
	for _, e := range evs {
		if e.Type == sandbox.EvCommand || e.Type == sandbox.EvStep {
			order = append(order, string(e.Type)+":"+e.Name)
		}
	}
	if got := strings.Join(order, " "); got != "step:start command:next step:open" {
		t.Errorf("stored order %q", got)
	}
	if got, _ := post(ann, id, `{"cmd":"finish"}`); got != http.StatusAccepted {
		t.Fatalf("finish: %d", got)
	}
	stepEvents(t, env, id, 3)
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		if _, active := env.Runner.Lookup(id); !active {
			break
		}
		if time.Since(start) > time.Minute {
			t.Fatal("the run did not end after teardown")
		}
	}
	if got, _ := post(ann, id, `{"cmd":"next"}`); got != http.StatusConflict {
		t.Errorf("a command after the end: %d, want 409", got)
	}
	// a run that takes no commands
	other := env.submit(ann, "ticks", map[string]any{"n": 1})
	if got, _ := post(ann, other, `{"cmd":"next"}`); got != http.StatusUnprocessableEntity && got != http.StatusConflict {
		t.Errorf("a command to ticks: %d", got)
	}
}

// TestLesson03StepThroughByKeyboard opens lesson 03 of the built-in course
// and walks the step-through with the keyboard only: Enter on the focused
// button, Tab to a mistake, the failure shown with its status, teardown;
// then the replay page shows every step with the command that asked for it.
func TestLesson03StepThroughByKeyboard(t *testing.T) {
	env := stepsEnv(t)
	page := newBrowserPage(t)
	do, text, eval := page.do, page.text, page.eval
	w := `.stepthrough[data-experiment=verbs-steps]`

	do(chromedp.Navigate(env.HTTP.URL + "/lessons/03-verbs-lifecycle?lang=zh"))
	if got := text("h1"); !strings.Contains(got, "Verbs 全流程") {
		t.Errorf("zh title %q", got)
	}
	if n := eval(`document.querySelectorAll('.experiment[data-experiment=rdma-cm], .experiment[data-experiment=ud-vs-rc]').length`); n != 2 {
		t.Errorf("lesson 03 shows %d of the rdma-cm and ud-vs-rc widgets, want 2", n)
	}
	do(chromedp.Navigate(env.HTTP.URL + "/lessons/03-verbs-lifecycle?lang=en"))
	if got := text("h1"); !strings.Contains(got, "verbs lifecycle") {
		t.Errorf("en title %q", got)
	}

	steps := func(n int) {
		t.Helper()
		do(chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelectorAll('%s .st-step').length >= %d`, w, n), chromedp.WithPollingTimeout(30*time.Second)))
	}
	focused := func() string {
		s, err := chromedp.Run(page.ctx, chromedp.Evaluate[string](`(document.activeElement && document.activeElement.dataset.cmd) || ""`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	do(
		chromedp.WaitEnabled(chromedp.CSS(w+` [data-action=start]`)),
		chromedp.Focus(chromedp.CSS(w+` [data-action=start]`)),
		chromedp.KeyEvent(kb.Enter),
	)
	steps(1)
	for i := 0; i < 7; i++ { // open … exchange, Enter on the focused Next each time
		if f := focused(); f != "next" {
			t.Fatalf("before step %d the focus is on %q, want next", i+2, f)
		}
		do(chromedp.KeyEvent(kb.Enter))
		steps(i + 2)
	}
	do(chromedp.KeyEvent(kb.Tab)) // from Next to the first mistake on offer
	if f := focused(); f != "wrong-qpn" {
		t.Fatalf("Tab from Next reached %q, want wrong-qpn", f)
	}
	do(chromedp.KeyEvent(kb.Enter))
	steps(9)
	for n := 10; n <= 12; n++ { // rts, write, poll-write
		do(chromedp.KeyEvent(kb.Enter))
		steps(n)
	}
	if got := text(w + ` .st-step:last-child [data-testid=st-errno]`); got != "IBV_WC_RETRY_EXC_ERR" {
		t.Errorf("the failed WRITE shows %q", got)
	}
	if f := focused(); f != "reconnect" {
		t.Errorf("after the failure the focus is on %q, want reconnect", f)
	}
	do(chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Enter)) // finish
	do(chromedp.Poll[chromedp.Void](`document.querySelector('`+w+`').dataset.final === "true"`, chromedp.WithPollingTimeout(30*time.Second)))
	if st := page.attr(w, "data-status"); st != "done" {
		t.Errorf("final status %q", st)
	}
	if got := text(w + ` .st-step:last-child h4`); !strings.Contains(got, "teardown") {
		t.Errorf("last step %q", got)
	}
	if n := eval(`document.querySelectorAll('` + w + ` [data-cmd]:not([hidden])').length`); n != 0 {
		t.Errorf("%d command buttons still shown after the end", n)
	}
	href := page.attr(w+` [data-testid=st-replay]`, "href")
	do(chromedp.Navigate(env.HTTP.URL + href + "?lang=en"))
	if n := eval(`document.querySelectorAll('[data-testid=st-step]').length`); n != 13 {
		t.Errorf("the replay shows %d steps, want 13", n)
	}
	if got := text(`[data-testid=st-step][data-step=rtr] .st-cmd code`); got != "wrong-qpn" {
		t.Errorf("the replay's rtr step says the command was %q", got)
	}
}
