package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/runs/runner"
)

// slowTerms starts every machine only when release is closed, as a guest
// being restored; its shells may report dropped keystrokes (drops).
type slowTerms struct {
	*fakeTerms
	release chan struct{}
	drops   bool
}

func (s *slowTerms) Attach(ctx context.Context, learner string, rows, cols uint16, wait func(rdmalab.TermQueue)) (rdmalab.TermConn, error) {
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	a, err := s.fakeTerms.Attach(ctx, learner, rows, cols, wait)
	if err != nil || !s.drops {
		return a, err
	}
	return droppingConn{a}, nil
}

// droppingConn delivers every keystroke and reports that the guest
// dropped earlier ones, as terminal.Terminal does after the guest's
// keys-dropped event.
type droppingConn struct{ rdmalab.TermConn }

func (d droppingConn) Write(b []byte) error {
	if err := d.TermConn.Write(b); err != nil {
		return err
	}
	return rdmalab.ErrKeysDropped
}

// termRead reads the tab's frames until one holds want (the shell's
// output or a status line's text), failing after 10 s.
func termRead(t *testing.T, ws *websocket.Conn, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var seen strings.Builder
	for {
		typ, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %q: %v; the tab got: %q", want, err, seen.String())
		}
		text := string(b)
		if typ == websocket.MessageText {
			var m termMsg
			_ = json.Unmarshal(b, &m)
			text = m.Msg
		}
		seen.WriteString(text + "|")
		if strings.Contains(seen.String(), want) {
			return
		}
	}
}

func termSend(t *testing.T, ws *websocket.Conn, keys string) {
	t.Helper()
	b, _ := json.Marshal(termMsg{T: "in", D: keys})
	if err := ws.Write(context.Background(), websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// TestTerminalKeysNeverLostSilently (issue 42 item 6): keys typed while
// the machine starts were dropped; now they reach the shell in order
// once it is there, those beyond the bound are said to the learner, and
// a guest's drop is said too (in the tab's language).
func TestTerminalKeysNeverLostSilently(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	open := func(drops bool) (*websocket.Conn, *slowTerms) {
		terms := &slowTerms{fakeTerms: &fakeTerms{max: 4, queueMax: 4, sessions: map[string]*fakeShell{}}, release: make(chan struct{}), drops: drops}
		env.Server.cfg.Terminals = terms
		c := learnerFrom(t, env, "10.0.0.9")
		h := http.Header{"Origin": {env.HTTP.URL}, "X-Real-IP": {"10.0.0.9"}}
		ws, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(env.HTTP.URL, "http")+"/api/terminal", &websocket.DialOptions{HTTPClient: c, HTTPHeader: h})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		t.Cleanup(func() { ws.CloseNow() })
		termRead(t, ws, terminalStrings["en"]["term.starting"])
		return ws, terms
	}

	ws, terms := open(false)
	termSend(t, ws, "echo ")
	termSend(t, ws, "early\r")
	// The reader takes both frames before the machine is there (were it
	// slower, they would go straight to the shell: the test still passes).
	time.Sleep(100 * time.Millisecond)
	close(terms.release)
	termRead(t, ws, "you typed: echo early")

	ws, terms = open(true)
	close(terms.release)
	termRead(t, ws, "root@fake")
	termSend(t, ws, "ls\r")
	termRead(t, ws, terminalStrings["en"]["term.keys.dropped"])
}

// TestTabInputEarlyBound: keys typed before the shell are kept up to
// earlyKeysMax, go first and in order, and what went beyond is said once.
func TestTabInputEarlyBound(t *testing.T) {
	var said []string
	in := &tabInput{rows: 24, cols: 80, say: func(k string) { said = append(said, k) }}
	in.keys([]byte("ab"))
	in.keys([]byte(strings.Repeat("x", earlyKeysMax))) // beyond the bound: not kept
	in.keys([]byte("c"))
	in.size(30, 100)
	sh := &fakeShell{}
	a := &fakeAttach{s: sh, ch: make(chan []byte, 64)}
	in.attach(a, 24, 80)
	in.keys([]byte("d"))
	if got := string(sh.line); got != "abcd" {
		t.Errorf("the shell got %q, want %q", got, "abcd")
	}
	if len(said) != 1 || said[0] != "term.keys.early" {
		t.Errorf("said %q, want [term.keys.early]", said)
	}
}
