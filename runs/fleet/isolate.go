package fleet

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/time/rate"
)

// One worker must not fail another (issue 43 fall 4: with one
// subscription, one pending limit, for every worker's events and one for
// every worker's heartbeats, worker A flooding its own subjects made the
// server drop worker B's events and heartbeats, and B's honest runs
// failed in B's name). So every nkey worker has connections of its own
// to the embedded server — one for its heartbeats, one for its claims
// and events, one for its terminals' output (term_server.go's onTermOut:
// A's flood there once dropped B's shells' output and the answers to
// B's opens) — each subscription with its own pending limit: a flood
// fills only its sender's connection and buffers (one shared connection
// still carried A's gigabytes ahead of B's end, and B's run timed out).
// Its claims and events share a byte rate (workerRate, workerBurst) past
// which they are dropped and counted as its own.
// Token workers name themselves, so they share the wildcard
// subscriptions (and one credential): give each worker an nkey to keep
// them apart.
//
// A gap in a run's numbering fails the run. When the server dropped
// messages itself since the run's last frame (a pending limit
// overflowed: it could not keep up), the run fails as the lab's fault,
// not the worker's; otherwise the worker went past its rate or forged
// the numbering, and the run fails in its name.
const (
	workerRate  = 16 << 20 // bytes per second of claims and events, per worker
	workerBurst = runBytes // one run's whole budget at once
	// per worker: what waits for the handler
	workerPendingMsgs  = 4096
	workerPendingBytes = 32 << 20
	workerBeatMsgs     = 64
	workerBeatBytes    = 64 * maxHeartbeat
	workerClaimMsgs    = 256
	workerClaimBytes   = 1 << 20
	workerTermMsgs     = 4096
	workerTermBytes    = 16 << 20
)

// workerSubs are one nkey worker's connections, subscriptions and byte
// rate.
type workerSubs struct {
	conns []*nats.Conn         // heartbeats; claims and events; terminals' output
	subs  []*nats.Subscription // heartbeats, claims, events, terminals' output
	rate  *rate.Limiter
	drops atomic.Int64 // messages its rate dropped
}

// allow takes n bytes of the worker's rate.
func (w *workerSubs) allow(n int) bool {
	if w.rate.AllowN(time.Now(), n) {
		return true
	}
	w.drops.Add(1)
	return false
}

// subscribeWorkers gives each of names its own subscriptions and drops
// those of workers no longer named. s.mu held.
func (s *Server) subscribeWorkersLocked(names []string) error {
	keep := map[string]bool{}
	for _, name := range names {
		keep[name] = true
		if s.wsubs[name] != nil {
			continue
		}
		ws := &workerSubs{rate: rate.NewLimiter(workerRate, workerBurst)}
		for range 3 {
			nc, err := nats.Connect("", nats.InProcessServer(s.ns), nats.Name("labserver:"+name), nats.MaxReconnects(-1),
				nats.UserInfo("lab", s.opts.Users[0].Password), nats.ErrorHandler(s.natsError))
			if err != nil {
				ws.close()
				return fmt.Errorf("connect for worker %s: %w", name, err)
			}
			ws.conns = append(ws.conns, nc)
		}
		for _, sp := range []struct {
			nc          *nats.Conn
			subj        string
			h           nats.MsgHandler
			msgs, bytes int
		}{
			{ws.conns[0], subjHeartbeat + name, s.onHeartbeat, workerBeatMsgs, workerBeatBytes},
			{ws.conns[1], subjClaim + name + ".*", s.rated(ws, s.onClaim), workerClaimMsgs, workerClaimBytes},
			{ws.conns[1], subjEvents + name + ".*", s.rated(ws, s.onEvent), workerPendingMsgs, workerPendingBytes},
			// Each terminal's output has its own bounds (onTermOut).
			{ws.conns[2], subjTermOut + name + ".*.*", s.onTermOut, workerTermMsgs, workerTermBytes},
		} {
			sub, err := sp.nc.Subscribe(sp.subj, sp.h)
			if err != nil {
				ws.close()
				return fmt.Errorf("subscribe worker %s: %w", name, err)
			}
			_ = sub.SetPendingLimits(sp.msgs, sp.bytes)
			ws.subs = append(ws.subs, sub)
		}
		if s.wsubs == nil {
			s.wsubs = map[string]*workerSubs{}
		}
		s.wsubs[name] = ws
	}
	for name, ws := range s.wsubs {
		if !keep[name] {
			ws.close()
			delete(s.wsubs, name)
		}
	}
	own := make(map[string]bool, len(s.wsubs))
	for name := range s.wsubs {
		own[name] = true
	}
	s.ownSubs.Store(&own)
	return nil
}

// close ends the worker's connections (and so its subscriptions).
func (w *workerSubs) close() {
	for _, nc := range w.conns {
		nc.Close()
	}
}

// rated is h behind ws's byte rate.
func (s *Server) rated(ws *workerSubs, h nats.MsgHandler) nats.MsgHandler {
	return func(m *nats.Msg) {
		if !ws.allow(len(m.Data)) {
			s.warn("workers: a worker sends faster than its rate; its messages are dropped", "subject", clip(m.Subject), "rate", workerRate)
			return
		}
		h(m)
	}
}

// shared is h for the wildcard subscriptions: only workers without
// subscriptions of their own (token workers) are heard there.
func (s *Server) shared(h nats.MsgHandler, prefix string) nats.MsgHandler {
	return func(m *nats.Msg) {
		name := m.Subject[len(prefix):]
		if i := indexDot(name); i >= 0 {
			name = name[:i]
		}
		if own := s.ownSubs.Load(); own == nil || !(*own)[name] {
			h(m)
		}
	}
}

func indexDot(s string) int {
	for i := range len(s) {
		if s[i] == '.' {
			return i
		}
	}
	return -1
}

// drops is how many messages of worker were dropped so far: by its own
// rate, and by the server (its events subscription's pending limit; for
// a token worker, the shared one's).
func (s *Server) drops(worker string) (byRate int64, byServer int) {
	s.mu.Lock()
	ws := s.wsubs[worker]
	subs := s.subs
	s.mu.Unlock()
	if ws != nil {
		n, _ := ws.subs[2].Dropped()
		return ws.drops.Load(), n
	}
	for _, sub := range subs {
		if sub.Subject == subjEvents+"*.*" {
			n, _ := sub.Dropped()
			byServer += n
		}
	}
	return 0, byServer
}
