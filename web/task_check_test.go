package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/PuerkitoBio/goquery"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/runs/runner"
)

// taskTerms are fake terminals that also verify tasks: a learner has a
// terminal once open[learner] is set; verdicts are scripted per learner.
// (The real guest runs lesson 01's scripts in machines/vm's
// TestTerminalVerify and e2e's TestLesson01Terminal.)
type taskTerms struct {
	*fakeTerms
	mu      sync.Mutex
	open    map[string]bool
	verdict map[string]TaskVerdict
	calls   []string // learner|lang|script
}

func (f *taskTerms) Verify(_ context.Context, learner string, script []byte, lang string) (TaskVerdict, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.open[learner] {
		return TaskVerdict{}, ErrNoTerminal
	}
	f.calls = append(f.calls, learner+"|"+lang+"|"+string(script))
	return f.verdict[learner], nil
}

func taskTestCourse(t *testing.T) *lessons.Course {
	page := func(title, text string) string {
		return "---\ntitle: " + title + "\nsummary: S.\norder: 1\n---\n\n## T {#t}\n\n::terminal\n\n:::task memlock tasks/memlock.sh\n" + text + "\n:::\n"
	}
	c, err := lessons.Load(fstest.MapFS{
		"01-t/index.en.md":      {Data: []byte(page("Tasks", "Raise the limit."))},
		"01-t/index.zh.md":      {Data: []byte(page("任务", "调高上限。"))},
		"01-t/tasks/memlock.sh": {Data: []byte("#!/bin/sh\necho checking\n")},
		"02-none/index.en.md":   {Data: []byte("---\ntitle: None\nsummary: S.\norder: 2\n---\n\nText.\n")},
		"02-none/index.zh.md":   {Data: []byte("---\ntitle: 无\nsummary: 摘要。\norder: 2\n---\n\n正文。\n")},
	}, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTaskCheck: the Check endpoint runs the lesson's script for the
// learner who asks, in their language; says so when no terminal is open;
// stores a pass, which the lesson page then shows (to that learner only)
// and a later failure does not undo; refuses cross-site posts, unknown
// tasks, and a learner checking too often.
func TestTaskCheck(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	env.Course.Store(taskTestCourse(t))
	terms := &taskTerms{fakeTerms: &fakeTerms{max: 2, queueMax: 1, sessions: map[string]*fakeShell{}},
		open: map[string]bool{}, verdict: map[string]TaskVerdict{}}
	env.Server.cfg.Terminals = terms
	ann, bob := env.client(), env.client()
	env.get(ann, "/lessons/01-t").Body.Close() // cookies
	env.get(bob, "/lessons/01-t").Body.Close()
	annID, bobID := learnerOf(t, ann, env.HTTP.URL), learnerOf(t, bob, env.HTTP.URL)
	const check = "/api/lessons/01-t/tasks/memlock/check"

	post := func(c *http.Client, path string, header ...string) (int, taskCheckResponse, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", env.HTTP.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var out taskCheckResponse
		_ = json.Unmarshal(b, &out)
		return res.StatusCode, out, string(b)
	}

	// No terminal yet: said in the learner's language, nothing stored.
	code, r, _ := post(ann, check+"?lang=zh")
	if code != 200 || r.Status != "no-terminal" || !strings.Contains(r.Message, "你的终端还没有打开") {
		t.Fatalf("no terminal (zh): %d %+v", code, r)
	}
	code, r, _ = post(ann, check+"?lang=en")
	if code != 200 || r.Status != "no-terminal" || !strings.Contains(r.Message, "Your terminal is not open yet") {
		t.Fatalf("no terminal (en): %d %+v", code, r)
	}

	// The script fails: its output is the hint.
	terms.mu.Lock()
	terms.open[annID], terms.open[bobID] = true, true
	terms.verdict[annID] = TaskVerdict{Output: []byte("still 8192 KiB\n"), Detail: "exit status 1"}
	terms.mu.Unlock()
	code, r, _ = post(ann, check+"?lang=en")
	if code != 200 || r.Status != "failed" || r.Done || r.Hint != "still 8192 KiB" || !strings.Contains(r.Message, "exit status 1") || r.Checks != 1 {
		t.Fatalf("failing script: %d %+v", code, r)
	}
	if r.ChecksText != "checked once" {
		t.Errorf("checks_text after one check: %q", r.ChecksText)
	}
	if got := pageChecks(t, env, ann, "en"); got != "checked once" {
		t.Errorf("after one check the page says %q, want \"checked once\"", got)
	}
	if got := pageChecks(t, env, ann, "zh"); got != "已检查 1 次" {
		t.Errorf("after one check the zh page says %q", got)
	}
	terms.mu.Lock()
	if len(terms.calls) != 1 || terms.calls[0] != annID+"|en|#!/bin/sh\necho checking\n" {
		t.Errorf("verifier calls %q", terms.calls)
	}
	terms.mu.Unlock()
	code, r, _ = post(ann, check+"?lang=zh")
	if code != 200 || r.Status != "failed" || !strings.Contains(r.Message, "还没有通过（退出状态 1）") {
		t.Fatalf("failing script (zh): %d %+v", code, r)
	}
	if r.ChecksText != "已检查 2 次" {
		t.Errorf("checks_text after two checks (zh): %q", r.ChecksText)
	}
	terms.mu.Lock()
	terms.verdict[annID] = TaskVerdict{Passed: true, Output: []byte("65536 KiB")}
	terms.mu.Unlock()
	code, r, _ = post(ann, check+"?lang=zh")
	if code != 200 || r.Status != "passed" || !r.Done || !strings.Contains(r.Message, "通过") || r.Checks != 3 {
		t.Fatalf("passing script: %d %+v", code, r)
	}
	// A later failure keeps the task done.
	terms.mu.Lock()
	terms.verdict[annID] = TaskVerdict{Output: []byte("gone"), Detail: "exit status 1"}
	terms.mu.Unlock()
	code, r, _ = post(ann, check+"?lang=en")
	if r.Status != "failed" || !r.Done || !strings.Contains(r.Message, "stays done") {
		t.Fatalf("failure after a pass: %d %+v", code, r)
	}

	// The page shows ann's mark (from the store, after a reload), not bob's.
	state := func(c *http.Client, lang string) (string, bool) {
		t.Helper()
		res := env.get(c, "/lessons/01-t?lang="+lang)
		defer res.Body.Close()
		doc, err := goquery.NewDocumentFromReader(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		task := doc.Find(`[data-testid=task][data-task=memlock]`)
		if task.Length() != 1 {
			t.Fatalf("%d memlock tasks on the page", task.Length())
		}
		return strings.TrimSpace(task.Find(`[data-testid=task-state]`).Text()), task.HasClass("task-done")
	}
	if s, done := state(ann, "zh"); !done || s != "已完成 ✓" {
		t.Errorf("ann's page (zh): %q done=%v", s, done)
	}
	if s, done := state(bob, "en"); done || s != "Not done yet" {
		t.Errorf("bob's page (en): %q done=%v", s, done)
	}
	// How often ann checked, in words (bob never did).
	if got := pageChecks(t, env, ann, "en"); got != "checked 4 times" {
		t.Errorf("ann's checks (en): %q", got)
	}
	if got := pageChecks(t, env, ann, "zh"); got != "已检查 4 次" {
		t.Errorf("ann's checks (zh): %q", got)
	}
	if got := pageChecks(t, env, bob, "en"); got != "" {
		t.Errorf("bob's checks before any: %q", got)
	}

	// Refusals.
	if code, _, body := post(ann, check, "Sec-Fetch-Site", "cross-site"); code != http.StatusForbidden {
		t.Errorf("cross-site check: %d %s", code, body)
	}
	if code, _, body := post(ann, "/api/lessons/01-t/tasks/nope/check"); code != http.StatusNotFound {
		t.Errorf("unknown task: %d %s", code, body)
	}
	if code, _, body := post(ann, "/api/lessons/02-none/tasks/memlock/check"); code != http.StatusNotFound {
		t.Errorf("a lesson without tasks: %d %s", code, body)
	}
	limited := false
	for range taskCheckBurst + 1 {
		if code, _, body := post(bob, check+"?lang=en"); code == http.StatusTooManyRequests {
			limited = strings.Contains(body, "checking too often")
			break
		}
	}
	if !limited {
		t.Errorf("bob was never told he checks too often in %d checks", taskCheckBurst+1)
	}
}

// pageChecks is the memlock task's "checked N times" on c's lesson page.
func pageChecks(t *testing.T, env *runEnv, c *http.Client, lang string) string {
	t.Helper()
	res := env.get(c, "/lessons/01-t?lang="+lang)
	defer res.Body.Close()
	doc, err := goquery.NewDocumentFromReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(doc.Find(`[data-task=memlock] .task-checks`).Text())
}
