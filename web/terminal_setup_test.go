package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/coder/websocket"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/runs/runner"
)

// TestTerminalTaskSetup: a lesson whose :::task names setup= gives its
// terminal widget an endpoint with the lesson, and opening the terminal
// there runs the setup script (the lesson's file, as the task-check path
// runs scripts) before the shell's output arrives; a lesson without setups
// and an unknown lesson run nothing.
func TestTerminalTaskSetup(t *testing.T) {
	page := func(title, text, setup string) string {
		return "---\ntitle: " + title + "\nsummary: S.\norder: 1\n---\n\n## T {#t}\n\n::terminal\n\n:::task nv tasks/nv.sh" + setup + "\n" + text + "\n:::\n"
	}
	c, err := lessons.Load(fstest.MapFS{
		"01-t/index.en.md":     {Data: []byte(page("Tasks", "Connect.", " setup=tasks/target.sh"))},
		"01-t/index.zh.md":     {Data: []byte(page("任务", "连接。", " setup=tasks/target.sh"))},
		"01-t/tasks/nv.sh":     {Data: []byte("exit 1\n")},
		"01-t/tasks/target.sh": {Data: []byte("echo export the target\n")},
		"02-plain/index.en.md": {Data: []byte(strings.Replace(page("Plain", "Do.", ""), "order: 1", "order: 2", 1))},
		"02-plain/index.zh.md": {Data: []byte(strings.Replace(page("普通", "做。", ""), "order: 1", "order: 2", 1))},
		"02-plain/tasks/nv.sh": {Data: []byte("exit 1\n")},
	}, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := newRunEnv(t, runner.Config{})
	env.Course.Store(c)
	terms := &taskTerms{fakeTerms: &fakeTerms{max: 2, queueMax: 1, sessions: map[string]*fakeShell{}},
		open: map[string]bool{}, verdict: map[string]TaskVerdict{}}
	env.Server.cfg.Terminals = terms
	ann := env.client()
	for slug, want := range map[string]string{"01-t": "/api/terminal?lesson=01-t", "02-plain": "/api/terminal"} {
		resp := env.get(ann, "/lessons/"+slug+"?lang=en")
		d, err := goquery.NewDocumentFromReader(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := d.Find("[data-testid=terminal]").Attr("data-endpoint"); got != want {
			t.Errorf("%s: terminal endpoint %q, want %q", slug, got, want)
		}
	}
	annID := learnerOf(t, ann, env.HTTP.URL)
	terms.mu.Lock()
	terms.open[annID] = true
	terms.mu.Unlock()

	open := func(query string) (statuses []string) {
		t.Helper()
		h := http.Header{"Origin": {env.HTTP.URL}}
		ws, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(env.HTTP.URL, "http")+"/api/terminal?"+query, &websocket.DialOptions{HTTPClient: ann, HTTPHeader: h})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer ws.CloseNow()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for {
			typ, b, err := ws.Read(ctx)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if typ == websocket.MessageBinary {
				return statuses
			}
			var m termMsg
			_ = json.Unmarshal(b, &m)
			if m.T == "status" && m.Msg != "" {
				statuses = append(statuses, m.Msg)
			}
		}
	}
	calls := func() []string {
		terms.mu.Lock()
		defer terms.mu.Unlock()
		return append([]string(nil), terms.calls...)
	}
	st := open("lesson=01-t&rows=24&cols=80&lang=en")
	if got := calls(); len(got) != 1 || got[0] != annID+"|en|echo export the target\n" {
		t.Fatalf("setup calls %q, want the lesson's setup script once", got)
	}
	if !strings.Contains(strings.Join(st, "\n"), "Preparing your machine") {
		t.Errorf("statuses before the shell %q: no word of the setup", st)
	}
	terms.mu.Lock()
	terms.verdict[annID] = TaskVerdict{Detail: "exit status 1", Output: []byte("modprobe: not found")}
	terms.mu.Unlock()
	if st := open("lesson=01-t&lang=zh"); !strings.Contains(strings.Join(st, "\n"), "没能为任务「nv」准备好") {
		t.Errorf("a failed setup is not said in zh: %q", st)
	}
	n := len(calls())
	open("lesson=02-plain")
	open("lesson=nope")
	open("rows=24")
	if got := calls(); len(got) != n {
		t.Errorf("setups ran for a lesson without any, an unknown lesson or none: %q", got[n:])
	}
}
