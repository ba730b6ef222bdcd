package web

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/zhcheck"
	"github.com/rdmalab/rdmalab/runs/runner"
)

// lostTerms gives each learner's first attach a machine that is then lost
// (as a worker that dies: fleet.RemoteTerm), later ones a fakeTerms shell.
type lostTerms struct {
	*fakeTerms
	mu   sync.Mutex
	lost map[string]bool
}

type lostAttach struct {
	fakeAttach
}

func (a *lostAttach) Lost() bool { return true }

func (l *lostTerms) Attach(ctx context.Context, learner string, rows, cols uint16, wait func(rdmalab.TermQueue)) (rdmalab.TermConn, error) {
	l.mu.Lock()
	first := !l.lost[learner]
	l.lost[learner] = true
	l.mu.Unlock()
	if !first {
		return l.fakeTerms.Attach(ctx, learner, rows, cols, wait)
	}
	a := &lostAttach{fakeAttach{s: &fakeShell{}, ch: make(chan []byte, 1), recent: []byte("on-the-worker$ ")}}
	go func() { time.Sleep(200 * time.Millisecond); a.once.Do(func() { close(a.ch) }) }() // the worker stops answering
	return a, nil
}

// TestTerminalLostMachine: a terminal whose machine is lost (a worker
// that died) is not "the shell exited": the tab is told, in the learner's
// language, that the machine failed and its files are gone, and gets a new
// machine in the same socket; keys then reach the new shell.
func TestTerminalLostMachine(t *testing.T) {
	for _, s := range []string{terminalStrings["zh"]["term.lost"], terminalStrings["zh"]["term.lost.new"]} {
		if l := zhcheck.Leaks(s); len(l) > 0 {
			t.Errorf("zh %q: %v", s, l)
		}
	}
	env := newRunEnv(t, runner.Config{})
	env.Server.cfg.Terminals = &lostTerms{fakeTerms: &fakeTerms{max: 2, queueMax: 4, sessions: map[string]*fakeShell{}}, lost: map[string]bool{}}
	ws, said := termDial(t, env, learnerFrom(t, env, "192.0.2.8"), "192.0.2.8")
	defer ws.CloseNow()
	if said != "shell" {
		t.Fatalf("first attach: %q", said)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var texts []string
	var out strings.Builder
	typed := false
	for !strings.Contains(out.String(), "you typed: ls") {
		typ, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v; frames %q, output %q", err, texts, out.String())
		}
		if typ == websocket.MessageBinary {
			out.Write(b)
			if strings.Contains(out.String(), "root@fake") && !typed {
				typed = true
				m, _ := json.Marshal(termMsg{T: "in", D: "ls\r"})
				_ = ws.Write(ctx, websocket.MessageText, m)
			}
			continue
		}
		var m termMsg
		_ = json.Unmarshal(b, &m)
		if m.T == "exit" || m.T == "error" {
			t.Fatalf("the lost machine ended the socket: %+v", m)
		}
		texts = append(texts, m.Msg+"|"+m.Note)
	}
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, terminalStrings["en"]["term.lost"]) || !strings.Contains(all, terminalStrings["en"]["term.lost.new"]) {
		t.Fatalf("the tab was not told its machine was lost; status frames:\n%s", all)
	}
}
