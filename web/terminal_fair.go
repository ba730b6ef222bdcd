package web

import (
	"context"
	"net/http"
	"sync"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/web/page"
)

// Terminals are few (a guest each) and a learner is a cookie: one client
// that makes fresh cookies must not hold every learner guest and the whole
// queue (issue 28: 6 cookies from one address held both guests and the
// queue for 170 s). So a client address may hold (in use or waiting)
// terminals for at most Limits.TerminalsPerAddr learners (by default half
// of the terminals, at least one), one learner may have its terminal open
// in at most termTabsPerLearner tabs, and a learner the database does not
// know yet (a fresh cookie) counts against the address's new-learner rate
// when it opens a terminal, as its first write would.

// termTabsPerLearner bounds one learner's open terminal sockets.
const termTabsPerLearner = 4

// termClients is who holds terminals, per client address.
type termClients struct {
	mu sync.Mutex
	// addrs: address → learner → open terminal sockets; a learner with
	// none stays while their guest is held (Terminals.Holds).
	addrs map[string]map[string]int
}

// enter counts a terminal socket of learner from addr. It returns the
// refusal's string key and argument, or "" and a leave func to call when
// the socket ends. perAddr < 0: no per-address bound.
func (c *termClients) enter(addr, learner string, perAddr int, holds func(string) bool) (leave func(), refusal string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.addrs == nil {
		c.addrs = map[string]map[string]int{}
	}
	ls := c.addrs[addr]
	if ls == nil {
		if len(c.addrs) >= limiterKeys {
			c.pruneLocked(holds)
		}
		ls = map[string]int{}
		c.addrs[addr] = ls
	}
	for l, open := range ls {
		if open == 0 && l != learner && !holds(l) {
			delete(ls, l)
		}
	}
	if ls[learner] >= termTabsPerLearner {
		return nil, "term.tabs", termTabsPerLearner
	}
	if _, known := ls[learner]; !known && perAddr >= 0 && len(ls) >= perAddr {
		return nil, "term.addrfull", len(ls)
	}
	ls[learner]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if m := c.addrs[addr]; m != nil {
			m[learner]--
		}
	}, "", 0
}

// pruneLocked forgets addresses that hold nothing any more. c.mu held.
func (c *termClients) pruneLocked(holds func(string) bool) {
	for addr, ls := range c.addrs {
		for l, open := range ls {
			if open == 0 && !holds(l) {
				delete(ls, l)
			}
		}
		if len(ls) == 0 {
			delete(c.addrs, addr)
		}
	}
}

// termPerAddr is the per-address bound in force: the configured one, or
// half of the terminals (at least one).
func (s *Server) termPerAddr() int {
	if n := s.cfg.Limits.TerminalsPerAddr; n != 0 {
		return n
	}
	_, max := s.cfg.Terminals.InUse()
	return (max + 1) / 2
}

// termAdmit applies this file's bounds to a terminal request of learner:
// a refusal message in lang (and no leave), or a leave func.
func (s *Server) termAdmit(r *http.Request, learner, lang string) (leave func(), refusal string) {
	addr := page.AddrKey(page.ClientAddr(r))
	if !s.mayCreateLearner(r, learner) {
		s.log.Warn("new learner limit (terminal)", "addr", addr)
		return nil, trf(lang, "limit.new_learners", int(s.cfg.Limits.NewLearnerEvery.Seconds()))
	}
	leave, key, n := s.termClients.enter(addr, learner, s.termPerAddr(), s.cfg.Terminals.Holds)
	if key != "" {
		s.log.Warn("terminal refused", "addr", addr, "bound", key, "held", n)
		return nil, trf(lang, key, n)
	}
	return leave, ""
}

// clientOf is an address learner holds a machine from (termAdmit's key),
// "" when none: the address a program run of theirs was admitted for.
func (c *termClients) clientOf(learner string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for addr, ls := range c.addrs {
		if _, ok := ls[learner]; ok {
			return addr
		}
	}
	return ""
}

// clientRunner runs programs for the client their run was admitted for
// (termAdmit, which every program run passes first): a machine the run
// starts is remembered with that address, as a terminal's is, and counts
// against its kept-machine share (terminal.Keep.ClientMax).
type clientRunner struct {
	rdmalab.ProgramRunner
	clientOf func(learner string) string
}

func (c clientRunner) RunProgram(ctx context.Context, learner string, prog rdmalab.Program, lang string, emit func(sandbox.Event)) (rdmalab.ProgramEnd, error) {
	if client := c.clientOf(learner); client != "" {
		ctx = rdmalab.WithClient(ctx, client)
	}
	return c.ProgramRunner.RunProgram(ctx, learner, prog, lang, emit)
}
