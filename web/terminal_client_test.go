package web

import (
	"context"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/zhcheck"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/web/page"
)

// clientTerms records the client each learner's attach was admitted for.
type clientTerms struct {
	*fakeTerms
	mu      sync.Mutex
	clients map[string]string
}

func (c *clientTerms) Attach(ctx context.Context, learner string, rows, cols uint16, wait func(rdmalab.TermQueue)) (rdmalab.TermConn, error) {
	c.mu.Lock()
	c.clients[learner] = rdmalab.ClientOf(ctx)
	c.mu.Unlock()
	return c.fakeTerms.Attach(ctx, learner, rows, cols, wait)
}

// TestTerminalAttachCarriesClient: a terminal's attach carries the
// address its admission counted it under (rdmalab.WithClient), so the
// machine it starts is kept within that address's share
// (terminal.Keep.ClientMax; issue 43: 64 cookies of one address evicted
// every other learner's kept machine). The learner's note says why their
// machine went, in both languages.
func TestTerminalAttachCarriesClient(t *testing.T) {
	for lang, key := range map[string]string{"zh": "term.kept.share", "en": "term.kept.share"} {
		s := keptText(lang, "share")
		if s == "" || s == key {
			t.Fatalf("%s: no text for a machine deleted for its address's share", lang)
		}
		if lang == "zh" {
			if l := zhcheck.Leaks(s); len(l) > 0 {
				t.Errorf("zh %q: %v", s, l)
			}
		}
	}
	env := newRunEnv(t, runner.Config{})
	terms := &clientTerms{fakeTerms: &fakeTerms{max: 4, queueMax: 4, sessions: map[string]*fakeShell{}}, clients: map[string]string{}}
	env.Server.cfg.Terminals = terms
	for _, addr := range []string{"192.0.2.8", "198.51.100.7"} {
		ws, said := termDial(t, env, learnerFrom(t, env, addr), addr)
		if said != "shell" {
			t.Fatalf("%s: attach said %q", addr, said)
		}
		ws.CloseNow()
	}
	terms.mu.Lock()
	defer terms.mu.Unlock()
	if len(terms.clients) != 2 {
		t.Fatalf("attaches seen: %v", terms.clients)
	}
	seen := map[string]bool{}
	for learner, c := range terms.clients {
		if c == "" {
			t.Errorf("learner %s attached with no client: their kept machine would count against no address's share", learner)
		}
		seen[c] = true
	}
	for _, addr := range []string{"192.0.2.8", "198.51.100.7"} {
		if k := page.AddrKey(netip.MustParseAddr(addr)); !seen[k] {
			t.Errorf("no attach carried %q (the admission's key of %s); seen %v", k, addr, terms.clients)
		}
	}
}

// clientPrograms records the client each program run's machine would be
// admitted for, then runs as machinePrograms does.
type clientPrograms struct {
	machinePrograms
	mu      sync.Mutex
	clients []string
}

func (c *clientPrograms) RunProgram(ctx context.Context, learner string, p rdmalab.Program, lang string, emit func(sandbox.Event)) (rdmalab.ProgramEnd, error) {
	c.mu.Lock()
	c.clients = append(c.clients, rdmalab.ClientOf(ctx))
	c.mu.Unlock()
	return c.machinePrograms.RunProgram(ctx, learner, p, lang, emit)
}

// TestProgramRunCarriesClient: a program run, which may start the
// learner's machine, carries the address its admission counted it under,
// as a terminal's attach does, so that machine too is kept within its
// address's share; New wires every program runner so.
func TestProgramRunCarriesClient(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env.Course.Store(course)
	fake := &fakeTerms{max: 2, queueMax: 4, sessions: map[string]*fakeShell{}}
	rec := &clientPrograms{machinePrograms: machinePrograms{fake}}
	env.Server.cfg.Terminals = fake
	env.Server.cfg.Programs = clientRunner{rec, env.Server.termClients.clientOf} // as New wires it
	p := course.Lesson("04-first-program").Programs[0]
	const addr = "203.0.113.9"
	req, _ := http.NewRequest("POST", env.HTTP.URL+"/api/lessons/04-first-program/programs/"+p.ID+"/run",
		strings.NewReader(`{"source":"int main(void){return 0;}"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Real-IP", addr)
	req.Header.Set("Origin", env.HTTP.URL)
	res, err := learnerFrom(t, env, addr).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("program run: %d", res.StatusCode)
	}
	want := page.AddrKey(netip.MustParseAddr(addr))
	for i := 0; ; i++ {
		rec.mu.Lock()
		got := slices.Clone(rec.clients)
		rec.mu.Unlock()
		if len(got) > 0 {
			if got[0] != want {
				t.Errorf("the program run carried client %q, want %q", got[0], want)
			}
			break
		}
		if i > 100 {
			t.Fatal("the program never ran")
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv, err := New(Config{Course: env.Course.Load, Store: env.DB, Programs: rec})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.cfg.Programs.(clientRunner); !ok {
		t.Errorf("New wires programs as %T, want them behind clientRunner", srv.cfg.Programs)
	}
}
