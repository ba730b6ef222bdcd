package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/zhcheck"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
)

// TestProgramCodeSaved: the built-in lesson's exercises render as editors
// without their solutions in the page; a learner's code is saved and
// comes back, another learner starts from the starter; the solution is
// given on request and recorded.
func TestProgramCodeSaved(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env.Course.Store(course)
	l := course.Lesson("04-first-program")
	p := l.Programs[0]
	ann, bob := env.client(), env.client()
	for _, lang := range []string{"zh", "en"} {
		doc := env.doc(ann, "/lessons/04-first-program?lang="+lang, 200)
		if n := doc.Find(`[data-testid="program"]`).Length(); n != len(l.Programs) {
			t.Errorf("%s: %d program widgets, want %d", lang, n, len(l.Programs))
		}
		html, _ := doc.Html()
		if strings.Contains(html, "ibv_query_gid(ctx, 1, 1, &amp;gid)) {") {
			t.Errorf("%s: the page carries a solution", lang)
		}
	}
	env.get(bob, "/lessons/04-first-program").Body.Close()
	base := "/api/lessons/04-first-program/programs/" + p.ID
	call := func(c *http.Client, method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, env.HTTP.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return res.StatusCode, out
	}
	code, st := call(ann, "GET", base, "")
	if code != 200 || st["source"] != string(p.Starter) || st["saved"] != false {
		t.Fatalf("first load: %d saved %v", code, st["saved"])
	}
	mine := "int main(void) { return 42; }\n"
	body, _ := json.Marshal(map[string]string{"source": mine})
	if code, _ := call(ann, "PUT", base+"/code", string(body)); code != 200 {
		t.Fatalf("save: %d", code)
	}
	if _, st := call(ann, "GET", base, ""); st["source"] != mine {
		t.Errorf("reload: %q, want the saved code", st["source"])
	}
	if _, st := call(bob, "GET", base, ""); st["source"] != string(p.Starter) {
		t.Errorf("another learner sees %q, want the starter", st["source"])
	}
	big, _ := json.Marshal(map[string]string{"source": strings.Repeat("x", maxProgramSource+1)})
	if code, _ := call(ann, "PUT", base+"/code", string(big)); code != 400 && code != 413 {
		t.Errorf("an oversized save: %d, want 400 or 413", code)
	}
	if code, out := call(ann, "POST", base+"/solution", ""); code != 200 || out["solution"] != string(p.Solution) {
		t.Errorf("solution: %d", code)
	}
	if _, st := call(ann, "GET", base, ""); st["solution_seen"] != true {
		t.Errorf("the solution's showing was not recorded")
	}
	if code, _ := call(ann, "GET", "/api/lessons/04-first-program/programs/nope", ""); code != 404 {
		t.Errorf("unknown program: %d", code)
	}

	// Hints: none revealed at first; each POST reveals the next, in the
	// request's language, never past the last; the record keeps them.
	n := len(p.Config.Hints)
	if n < 2 {
		t.Fatalf("%s has %d hints", p.ID, n)
	}
	if _, st := call(ann, "GET", base+"?lang=zh", ""); st["hints_total"] != float64(n) || len(st["hints"].([]any)) != 0 {
		t.Errorf("before any hint: total %v, hints %v", st["hints_total"], st["hints"])
	}
	for i := 1; i <= n+1; i++ {
		code, out := call(ann, "POST", base+"/hint?lang=zh", "")
		hints, _ := out["hints"].([]any)
		if code != 200 || len(hints) != min(i, n) || hints[0] != p.Config.Hints[0]["zh"] {
			t.Errorf("reveal %d: %d %v", i, code, out)
		}
	}
	if _, st := call(ann, "GET", base+"?lang=en", ""); len(st["hints"].([]any)) != n || st["hints"].([]any)[n-1] != p.Config.Hints[n-1]["en"] {
		t.Errorf("after a reload: %v", st["hints"])
	}
	if _, st := call(bob, "GET", base, ""); len(st["hints"].([]any)) != 0 {
		t.Errorf("another learner sees hints %v", st["hints"])
	}

	// Reset: the starter, and the code it replaced kept for a restore.
	if code, out := call(ann, "POST", base+"/reset", ""); code != 200 || out["source"] != string(p.Starter) || out["before_reset"] != mine {
		t.Errorf("reset: %d %v", code, out)
	}
	if _, st := call(ann, "GET", base, ""); st["source"] != string(p.Starter) || st["before_reset"] != mine {
		t.Errorf("after a reset: source %q, before_reset %q", st["source"], st["before_reset"])
	}
	if code, _ := call(ann, "PUT", base+"/code", string(body)); code != 200 {
		t.Fatalf("restore: %d", code)
	}
	if _, st := call(ann, "GET", base, ""); st["before_reset"] != nil {
		t.Errorf("the restored code is still offered as before the reset: %v", st["before_reset"])
	}
}

// TestProgramDiagnostics: tcc's and gcc's lines become errors at their
// lines; other output does not.
func TestProgramDiagnostics(t *testing.T) {
	out := "main.c:3: error: identifier expected\nmain.c:7:12: warning: unused variable 'x'\ntcc: error: undefined symbol 'foo'\n"
	evs := programDiagnostics(out)
	if len(evs) != 2 {
		t.Fatalf("%d diagnostics, want 2: %+v", len(evs), evs)
	}
	if evs[0].Figures["line"] != 3 || evs[0].Name != "error" || evs[0].Message != "identifier expected" {
		t.Errorf("first: %+v", evs[0])
	}
	if evs[1].Figures["line"] != 7 || evs[1].Figures["column"] != 12 || evs[1].Name != "warning" {
		t.Errorf("second: %+v", evs[1])
	}
}

// failingPrograms is a ProgramRunner whose every run fails with err.
type failingPrograms struct{ err error }

func (f failingPrograms) RunProgram(context.Context, string, rdmalab.Program, string, func(sandbox.Event)) (rdmalab.ProgramEnd, error) {
	return rdmalab.ProgramEnd{}, f.err
}

// TestProgramFailureInChinese (issue 23 item 5): why a program could not
// run reaches a zh reader without English, in the stored run as a replay
// shows it: an error nobody wrote in Chinese (the guest's connection), a
// Reason written in both languages where its cause was known (its Chinese
// is what the reader gets), and the time limit. Before, the zh message was
// "程序没能运行：" followed by the English error.
func TestProgramFailureInChinese(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	p := firstProgram(t)
	learner := store.NewLearnerID()
	reason := sandbox.Because("no-vm", "programs need the vm backend on the lab server", "程序要在实验服务器自己的虚拟机里运行，这里没有")
	for i, c := range []struct {
		err    error
		wantZh string
	}{
		{errors.New("the guest closed the agent port"), "实验室这边出了问题"},
		{fmt.Errorf("run program: %w", reason), "这里没有"},
		{fmt.Errorf("wait for the guest: %w", context.DeadlineExceeded), "时间上限"},
	} {
		id := fmt.Sprintf("prog-fail-%d", i)
		evs := programRun(t, env, failingPrograms{c.err}, id, learner, p, rdmalab.Program{}, "zh")
		var seen int
		for _, ev := range evs {
			if ev.Type != sandbox.EvError && !(ev.Type == sandbox.EvStatus && ev.Status.Final()) {
				continue
			}
			seen++
			zh := ev.Messages.Get("zh")
			if p := zhcheck.Prose(zh); len(p) > 0 {
				t.Errorf("%v: %s event's Chinese %q holds English %q", c.err, ev.Type, zh, p)
			}
			if l := zhcheck.Leaks(zh); len(l) > 0 {
				t.Errorf("%v: %s event's Chinese %q leaks %q", c.err, ev.Type, zh, l)
			}
			if !strings.Contains(zh, c.wantZh) || ev.Messages.Get("en") == "" {
				t.Errorf("%v: %s event says %q, want %q in Chinese and an English text", c.err, ev.Type, ev.Messages, c.wantZh)
			}
		}
		if seen != 2 {
			t.Errorf("%v: %d error and final events, want one of each: %+v", c.err, seen, evs)
		}
	}
}

// hintPrograms is a ProgramRunner whose every run reaches the check and
// fails it with hint (what a check script prints, in LAB_LANG).
type hintPrograms struct{ hint string }

func (h hintPrograms) RunProgram(context.Context, string, rdmalab.Program, string, func(sandbox.Event)) (rdmalab.ProgramEnd, error) {
	return rdmalab.ProgramEnd{Stage: "check", Check: []byte(h.hint)}, nil
}

// TestProgramHintOneLanguage (issue 44 item 8): the check's hint, written
// in the learner's language, is filed under that language only; before,
// a zh hint was also detail.en.
func TestProgramHintOneLanguage(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	p := firstProgram(t)
	learner := store.NewLearnerID()
	for _, c := range []struct{ lang, hint string }{{"zh", "程序只调用了一次 ibv_reg_mr。"}, {"en", "The program called ibv_reg_mr once."}} {
		id := "prog-hint-" + c.lang
		evs := programRun(t, env, hintPrograms{c.hint}, id, learner, p, rdmalab.Program{}, c.lang)
		found := false
		for _, ev := range evs {
			if ev.Type != sandbox.EvResult {
				continue
			}
			found = true
			other := map[string]string{"zh": "en", "en": "zh"}[c.lang]
			if ev.Detail[c.lang] != c.hint || ev.Detail[other] != "" {
				t.Errorf("%s: the result's detail is %q, want the hint under %s only", c.lang, ev.Detail, c.lang)
			}
		}
		if !found {
			t.Errorf("%s: no result event: %+v", c.lang, evs)
		}
	}
}

// peerPhasePrograms is a ProgramRunner that says it starts the peer, then
// fails the check.
type peerPhasePrograms struct{}

func (peerPhasePrograms) RunProgram(_ context.Context, _ string, _ rdmalab.Program, _ string, emit func(sandbox.Event)) (rdmalab.ProgramEnd, error) {
	emit(sandbox.Event{Type: sandbox.EvPhase, Name: "peer"})
	return rdmalab.ProgramEnd{Stage: "check", Check: []byte("no")}, nil
}

// TestProgramHarnessPhase: a ranked program's peer is the lab's harness,
// and its phase says so in both languages; a one-rank program's is the
// peer on rxe1.
func TestProgramHarnessPhase(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	p := firstProgram(t)
	learner := store.NewLearnerID()
	for _, c := range []struct {
		ranks      int
		en, zh     string
		notEn, not string
	}{{1, "peer on rxe1", "对端", "harness", "测试框架"}, {4, "harness", "测试框架", "rxe1", "rxe1"}} {
		id := fmt.Sprintf("prog-phase-%d", c.ranks)
		evs := programRun(t, env, peerPhasePrograms{}, id, learner, p, rdmalab.Program{Ranks: c.ranks}, "en")
		seen := false
		for _, ev := range evs {
			if ev.Type != sandbox.EvPhase || ev.Name != "peer" {
				continue
			}
			seen = true
			en, zh := ev.Messages.Get("en"), ev.Messages.Get("zh")
			if !strings.Contains(en, c.en) || !strings.Contains(zh, c.zh) || strings.Contains(en, c.notEn) || strings.Contains(zh, c.not) {
				t.Errorf("ranks %d: phase says %q / %q", c.ranks, en, zh)
			}
			if p := zhcheck.Prose(zh); len(p) > 0 {
				t.Errorf("ranks %d: the phase's Chinese %q holds English %q", c.ranks, zh, p)
			}
		}
		if !seen {
			t.Errorf("ranks %d: no peer phase among %+v", c.ranks, evs)
		}
	}
}

// timedOutPrograms is a ProgramRunner whose every run is ended by the
// program's time limit.
type timedOutPrograms struct{}

func (timedOutPrograms) RunProgram(context.Context, string, rdmalab.Program, string, func(sandbox.Event)) (rdmalab.ProgramEnd, error) {
	return rdmalab.ProgramEnd{Stage: "check", TimedOut: true, Check: []byte("no")}, nil
}

// TestProgramTimedOutNamesLoad: a program ended by its time limit is told
// both causes, a wait without a deadline and a busy lab, in each language;
// beside stress-ng a right program ran out of time in the lab's own
// suite, and the message said only that it ran too long.
func TestProgramTimedOutNamesLoad(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	p := firstProgram(t)
	learner := store.NewLearnerID()
	evs := programRun(t, env, timedOutPrograms{}, "prog-timedout", learner, p, rdmalab.Program{TimeoutS: 10}, "en")
	var res *sandbox.Event
	for i := range evs {
		if evs[i].Type == sandbox.EvResult {
			res = &evs[i]
		}
	}
	if res == nil {
		t.Fatalf("no result event: %+v", evs)
	}
	en, zh := res.Messages.Get("en"), res.Messages.Get("zh")
	for _, want := range []string{"longer than 10 s", "without a deadline", "busy lab", "run it again"} {
		if !strings.Contains(en, want) {
			t.Errorf("the English result %q does not say %q", en, want)
		}
	}
	for _, want := range []string{"超过了 10 秒", "没有截止时间", "繁忙", "再运行一次"} {
		if !strings.Contains(zh, want) {
			t.Errorf("the Chinese result %q does not say %q", zh, want)
		}
	}
	if l := zhcheck.Leaks(zh); len(l) > 0 {
		t.Errorf("the Chinese result %q leaks %q", zh, l)
	}
}

// firstProgram is lesson 04's first program in the built-in course.
func firstProgram(t *testing.T) *lessons.Program {
	t.Helper()
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return course.Lesson("04-first-program").Programs[0]
}

// programRun runs req for p through prog as learner's run id, in lang, and
// returns the events the store kept.
func programRun(t *testing.T, env *runEnv, prog rdmalab.ProgramRunner, id, learner string, p *lessons.Program, req rdmalab.Program, lang string) []sandbox.Event {
	t.Helper()
	info := sandbox.RunInfo{ID: id, Learner: learner, Experiment: ProgramExperiment, Status: sandbox.StatusRunning, Created: time.Now()}
	if err := env.Hub.RunCreated(info); err != nil {
		t.Fatal(err)
	}
	env.Server.runProgram(prog, id, learner, "04-first-program", p, req, lang)
	evs, err := env.DB.RunEvents(context.Background(), id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}
