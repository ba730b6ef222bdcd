package web

import (
	"context"
	"net/netip"
	"sync"
	"testing"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/zhcheck"
	"github.com/rdmalab/rdmalab/runs/runner"
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
