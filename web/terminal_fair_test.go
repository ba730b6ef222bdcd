package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/rdmalab/rdmalab/runs/runner"
)

// termDial opens the terminal WebSocket as client c from address addr
// and returns the connection and what it first says: "shell" when the
// shell's output came, "queued" when it waits, or an error frame's text.
func termDial(t *testing.T, env *runEnv, c *http.Client, addr string) (*websocket.Conn, string) {
	t.Helper()
	h := http.Header{"Origin": {env.HTTP.URL}, "X-Real-IP": {addr}}
	ws, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(env.HTTP.URL, "http")+"/api/terminal", &websocket.DialOptions{HTTPClient: c, HTTPHeader: h})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		typ, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if typ == websocket.MessageBinary {
			return ws, "shell"
		}
		var m termMsg
		_ = json.Unmarshal(b, &m)
		switch {
		case m.T == "error":
			return ws, m.Msg
		case m.T == "status" && m.Pos > 0:
			return ws, "queued"
		}
	}
}

// learnerFrom is a fresh browser of address addr with its cookie.
func learnerFrom(t *testing.T, env *runEnv, addr string) *http.Client {
	c := env.client()
	req, _ := http.NewRequest("GET", env.HTTP.URL+"/?lang=en", nil)
	req.Header.Set("X-Real-IP", addr)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return c
}

// TestTerminalFairness (issue 28 fall 5): six fresh cookies from one
// address held both learner guests and the whole queue, and a learner from
// elsewhere was told the queue was full. Now one address holds half the
// terminals, one learner opens at most termTabsPerLearner tabs, and fresh
// cookies opening terminals count against the new-learner limit.
func TestTerminalFairness(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	fake := &fakeTerms{max: 2, queueMax: 4, sessions: map[string]*fakeShell{}}
	env.Server.cfg.Terminals = fake
	const attacker, victim = "203.0.113.9", "198.51.100.7"

	var got []string
	for range 6 {
		ws, said := termDial(t, env, learnerFrom(t, env, attacker), attacker)
		defer ws.CloseNow()
		got = append(got, said)
	}
	t.Logf("six cookies from one address: %q", got)
	if got[0] != "shell" {
		t.Errorf("the address's first learner: %q, want a shell", got[0])
	}
	for _, said := range got[1:] {
		if !strings.Contains(said, "already holds as many terminals as one address may (1,") {
			t.Errorf("a further cookie from the same address: %q, want refused", said)
		}
	}
	if n := fake.Waiting(); n != 0 {
		t.Errorf("%d of the address's learners wait in the queue", n)
	}
	// A learner elsewhere gets the other guest.
	ws, said := termDial(t, env, learnerFrom(t, env, victim), victim)
	defer ws.CloseNow()
	if said != "shell" {
		t.Errorf("the learner from another address: %q, want a shell", said)
	}

	// One learner, many tabs.
	env.Server.cfg.Limits.TerminalsPerAddr = -1
	tabs := learnerFrom(t, env, "192.0.2.1")
	for i := range termTabsPerLearner + 1 {
		ws, said := termDial(t, env, tabs, "192.0.2.1")
		defer ws.CloseNow()
		if want := i < termTabsPerLearner; want != (said == "shell" || said == "queued") {
			t.Errorf("tab %d: %q", i+1, said)
		}
		if i == termTabsPerLearner && !strings.Contains(said, "already open in 4 tabs") {
			t.Errorf("tab %d: %q, want the tabs message", i+1, said)
		}
	}

	// Fresh cookies that open terminals are new learners of their address.
	env.Server.limits.newLearner = newKeyedLimiter(2, time.Hour)
	for i := range 3 {
		ws, said := termDial(t, env, learnerFrom(t, env, "192.0.2.50"), "192.0.2.50")
		defer ws.CloseNow()
		refused := strings.Contains(said, "Too many new learners")
		if refused != (i == 2) {
			t.Errorf("fresh cookie %d: %q", i+1, said)
		}
	}
}
