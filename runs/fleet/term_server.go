package fleet

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/time/rate"

	"github.com/rdmalab/rdmalab/internal/textclip"

	"github.com/rdmalab/rdmalab"
)

// The server's side of terminals on workers (term.go): a RemoteTerm per
// tab attached to a worker's shell, and the verify and reset calls.

// termState is the server's terminals on workers, under Server.tmu.
type termState struct {
	secret []byte
	terms  map[string]*RemoteTerm  // by terminal id
	calls  map[string]*pendingCall // by request id
	bad    map[string]string       // workers that broke a bound: no more terminals there
	peak   map[string]int          // learners a worker has served at once, the most seen (termAllowance)
	watch  bool                    // the death watch runs
}

type pendingCall struct {
	worker string
	res    chan termResultMsg
}

// newTermState is the server's terminals on workers before the first:
// made before any subscription can deliver to onTermOut.
func newTermState() termState {
	ts := termState{secret: make([]byte, 32), terms: map[string]*RemoteTerm{}, calls: map[string]*pendingCall{}, bad: map[string]string{}, peak: map[string]int{}}
	_, _ = rand.Read(ts.secret)
	return ts
}

// termsInit starts the terminals' side of the server: the shared
// subscription of token workers' terminal output (an nkey worker's has
// its own, isolate.go) and the death watch. Called from Start.
func (s *Server) termsInit() error {
	if s.cfg.Token != "" {
		sub, err := s.nc.Subscribe(subjTermOut+"*.*.*", s.shared(s.onTermOut, subjTermOut))
		if err != nil {
			return err
		}
		_ = sub.SetPendingLimits(pendingMsgs, pendingBytes)
		s.subs = append(s.subs, sub)
	}
	go s.termWatch()
	return nil
}

// termKey is the key a worker knows learner by: it never learns the id.
func (s *Server) termKey(learner string) string {
	m := hmac.New(sha256.New, s.ts.secret)
	m.Write([]byte(learner))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

func newID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// termTrustStart is the terminals a worker is offered before it has
// served any: a worker says how many it hosts, but a rogue one saying 64
// would draw a whole class to shells it fakes and checks it answers
// (issue 43). Its places grow as slow start does: twice the most learners
// it has served at once for termProbation (shells it answered, their tabs
// open that long, no bound broken), never more than it says it hosts. So
// a new worker of 16 places is offered 2, then 4, 8, 16 about a
// termProbation apart while a class holds its shells; the learners it is
// not yet offered stay in this machine's queue (or are told it is full).
const termTrustStart = 2

// termProbation is how long a served shell must stay open before it
// counts toward its worker's places (a var: tests shorten it).
var termProbation = 30 * time.Second

// termAllowance is the most terminals worker is offered now. s.tmu held.
func (s *Server) termAllowance(worker string) int {
	return max(termTrustStart, 2*s.ts.peak[worker])
}

// provePeaks raises each worker's peak to the learners whose shells it
// answered and who have held them open for termProbation. s.tmu held.
func (s *Server) provePeaks(now time.Time) {
	keys := map[string]map[string]bool{}
	for _, t := range s.ts.terms {
		if t.servedAt.IsZero() || now.Sub(t.servedAt) < termProbation {
			continue
		}
		if _, bad := s.ts.bad[t.worker]; bad {
			continue
		}
		if keys[t.worker] == nil {
			keys[t.worker] = map[string]bool{}
		}
		keys[t.worker][t.key] = true
	}
	for w, k := range keys {
		if len(k) > s.ts.peak[w] {
			s.ts.peak[w] = len(k)
		}
	}
}

// TermWorkers are the live workers that host terminals and may get more:
// their load as they said it, raised to the terminals this server has
// open there (a heartbeat lags a placement by up to a second), their Max
// capped by what they have shown they serve (termAllowance).
func (s *Server) TermWorkers() map[string]rdmalab.TermLoad {
	out := map[string]rdmalab.TermLoad{}
	for _, w := range s.Workers() {
		if w.Terms != nil {
			out[w.Name] = *w.Terms
		}
	}
	s.tmu.Lock()
	defer s.tmu.Unlock()
	for name := range s.ts.bad {
		delete(out, name)
	}
	open := map[string]int{}
	for _, t := range s.ts.terms {
		open[t.worker]++
	}
	for name, l := range out {
		l.InUse = max(l.InUse, open[name])
		l.Max = min(l.Max, s.termAllowance(name))
		out[name] = l
	}
	return out
}

// TermUsable reports whether worker is alive and never broke a terminal
// bound.
func (s *Server) TermUsable(worker string) bool {
	s.tmu.Lock()
	_, bad := s.ts.bad[worker]
	s.tmu.Unlock()
	return !bad && s.alive(worker)
}

// RemoteTerm is one tab's view of a learner's shell on a worker.
type RemoteTerm struct {
	s              *Server
	worker, id     string
	key            string    // the learner's (termKey)
	servedAt       time.Time // when the worker answered the open (Server.tmu)
	ready          chan termReady
	out            chan []byte
	recent         []byte
	note           string
	lim            *rate.Limiter
	detachOnce     sync.Once
	mu             sync.Mutex // guards what follows and orders out
	total          int
	closed, opened bool
	dropped        bool // the worker's guest dropped keystrokes since the last Write
	lost           *TermLost
}

// TermAttach opens learner's shell on worker: their guest there starts if
// it has none. It waits for the worker's answer until ctx ends or the
// worker dies.
func (s *Server) TermAttach(ctx context.Context, worker, learner string, rows, cols uint16) (rdmalab.TermConn, error) {
	t := &RemoteTerm{s: s, worker: worker, key: s.termKey(learner), id: newID(), ready: make(chan termReady, 1), out: make(chan []byte, termOutBuf),
		lim: rate.NewLimiter(termRate, termBurst)}
	s.tmu.Lock()
	s.ts.terms[t.id] = t
	s.tmu.Unlock()
	o := termOpen{Key: t.key, Rows: rows, Cols: cols}
	if c := rdmalab.ClientOf(ctx); c != "" {
		o.Client = s.termKey("client\x00" + c)
	}
	b, _ := json.Marshal(o)
	if err := s.nc.Publish(t.subject("open"), b); err != nil {
		t.Detach()
		return nil, err
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	slow := time.NewTimer(termOpenWait)
	defer slow.Stop()
	for {
		select {
		case <-slow.C:
			// A worker that says it has room but does not answer would
			// hold every learner placed there: it gets no more.
			s.breach(t, fmt.Sprintf("no answer to an open in %s", termOpenWait))
			return nil, &TermLost{Worker: worker, Broken: "no answer to an open"}
		case r := <-t.ready:
			if r.Err != "" {
				t.Detach()
				return nil, fmt.Errorf("worker %s: %s", worker, r.Err)
			}
			return t, nil
		case <-ctx.Done():
			t.Detach()
			return nil, ctx.Err()
		case <-tick.C:
			t.mu.Lock()
			lost := t.lost
			t.mu.Unlock()
			if lost != nil {
				t.Detach()
				return nil, lost
			}
			if !s.alive(worker) {
				t.Detach()
				return nil, &TermLost{Worker: worker}
			}
		}
	}
}

func (t *RemoteTerm) subject(op string) string { return subjTermIn + t.worker + "." + t.id + "." + op }

// Recent is the shell's output before this attach.
func (t *RemoteTerm) Recent() []byte { return t.recent }

// Output carries the shell's output; it is closed when the shell ends,
// the tab detaches, it fell too far behind, or the worker was lost.
func (t *RemoteTerm) Output() <-chan []byte { return t.out }

// KeptNote is what the worker said of the learner's kept machine.
func (t *RemoteTerm) KeptNote() string { return t.note }

// Worker is where the shell lives.
func (t *RemoteTerm) Worker() string { return t.worker }

// Lost reports whether the output ended because the worker was lost
// (died or broke a bound), not because the shell ended.
func (t *RemoteTerm) Lost() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lost != nil
}

// Write sends keystrokes.
func (t *RemoteTerm) Write(b []byte) error {
	t.mu.Lock()
	closed, dropped := t.closed, t.dropped
	t.dropped = false
	t.mu.Unlock()
	if closed {
		return errors.New("the shell has ended")
	}
	for len(b) > 0 { // the learner's page sends at most 64 KiB at once
		n := min(len(b), termChunk)
		if err := t.s.nc.Publish(t.subject("in"), b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	if dropped {
		return rdmalab.ErrKeysDropped
	}
	return nil
}

// Resize sets the shell's window size.
func (t *RemoteTerm) Resize(rows, cols uint16) error {
	b, _ := json.Marshal(termSize{Rows: rows, Cols: cols})
	return t.s.nc.Publish(t.subject("size"), b)
}

// Detach ends this view; the shell and its guest stay on the worker.
func (t *RemoteTerm) Detach() {
	t.detachOnce.Do(func() {
		t.s.tmu.Lock()
		delete(t.s.ts.terms, t.id)
		t.s.tmu.Unlock()
		_ = t.s.nc.Publish(t.subject("detach"), nil)
		t.end(nil)
	})
}

// end closes the output, lost saying why when it was not the shell.
func (t *RemoteTerm) end(lost *TermLost) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	if lost != nil {
		t.lost = lost
	}
	t.closed = true
	close(t.out)
}

// breach ends t: its worker broke a bound (logged at most once per 10 s);
// no more terminals are placed there.
func (s *Server) breach(t *RemoteTerm, why string) {
	s.warn("workers: a worker broke a terminal bound; its terminal ends and it gets no more", "worker", t.worker, "terminal", t.id, "bound", why)
	s.tmu.Lock()
	s.ts.bad[t.worker] = why
	s.tmu.Unlock()
	t.end(&TermLost{Worker: t.worker, Broken: why})
	t.Detach()
}

// onTermOut takes one message from a worker's terminals:
// lab.tout.<w>.<id>.<op>, from the worker the id was opened on, within
// the bounds of term.go; anything else is dropped.
func (s *Server) onTermOut(m *nats.Msg) {
	worker, rest, ok := subjectOf(m.Subject, subjTermOut)
	if !ok {
		return
	}
	id, op, ok := strings.Cut(rest, ".")
	if !ok {
		return
	}
	s.tmu.Lock()
	t := s.ts.terms[id]
	call := s.ts.calls[id]
	s.tmu.Unlock()
	switch {
	case op == "result" && call != nil:
		if call.worker != worker {
			s.warn("workers: an answer to another worker's terminal call", "worker", worker)
			return
		}
		var r termResultMsg
		if len(m.Data) > termResult || json.Unmarshal(m.Data, &r) != nil {
			s.warn("workers: a terminal call's answer that is too big or not one", "worker", worker, "bytes", len(m.Data))
			r = termResultMsg{Err: "worker " + worker + " answered with something that is not an answer"}
		}
		select {
		case call.res <- r:
		default:
		}
		return
	case t == nil:
		return // a terminal that ended here (detached) or never was
	case t.worker != worker:
		s.warn("workers: output for another worker's terminal", "worker", worker, "terminal", id)
		return
	}
	switch op {
	case "ready":
		var r termReady
		if len(m.Data) > termRecent+4<<10 || json.Unmarshal(m.Data, &r) != nil || len(r.Recent) > termRecent || len(r.Err) > maxText {
			s.breach(t, "an attach answer that is too big or not one")
			return
		}
		switch r.Note {
		case "", "restored", "unreadable", "too-big", "stale", "evicted", "share": // terminal.KeepNote
		default:
			r.Note = ""
		}
		t.mu.Lock()
		first := !t.opened
		t.opened = true
		if first {
			t.recent, t.note = r.Recent, r.Note
		}
		t.mu.Unlock()
		if first {
			if r.Err == "" {
				s.tmu.Lock()
				if s.ts.terms[t.id] == t {
					t.servedAt = time.Now()
				}
				s.tmu.Unlock()
			}
			t.ready <- r
		}
	case "out":
		t.mu.Lock()
		why := ""
		switch {
		case !t.opened:
			why = "output before the terminal was opened"
		case len(m.Data) > termChunk:
			why = fmt.Sprintf("an output message over %d bytes", termChunk)
		case !t.lim.AllowN(time.Now(), len(m.Data)):
			why = fmt.Sprintf("output faster than %d KiB/s", termRate>>10)
		case t.total+len(m.Data) > termTotal:
			why = fmt.Sprintf("more than %d MiB of output in one attach", termTotal>>20)
		}
		if why != "" {
			t.mu.Unlock()
			s.breach(t, why)
			return
		}
		t.total += len(m.Data)
		behind := false
		if !t.closed {
			select {
			case t.out <- m.Data:
			default:
				behind = true // the tab fell behind: it re-attaches, as a local one does
			}
		}
		t.mu.Unlock()
		if behind {
			t.Detach()
		}
	case "dropped":
		t.mu.Lock()
		t.dropped = true
		t.mu.Unlock()
	case "end":
		t.mu.Lock()
		opened := t.opened
		t.mu.Unlock()
		if opened {
			t.s.tmu.Lock()
			delete(t.s.ts.terms, t.id)
			t.s.tmu.Unlock()
			t.end(nil)
		}
	default:
		s.warn("workers: an unknown terminal message", "worker", worker, "op", clip(op))
	}
}

// termWatch ends the terminals of workers that stopped sending
// heartbeats (their learners' pages say so and open a new machine) and
// fails the calls waiting on them.
func (s *Server) termWatch() {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-tick.C:
		}
		s.tmu.Lock()
		s.provePeaks(time.Now())
		var dead []*RemoteTerm
		for _, t := range s.ts.terms {
			if !s.alive(t.worker) {
				dead = append(dead, t)
			}
		}
		for id, c := range s.ts.calls {
			if !s.alive(c.worker) {
				select {
				case c.res <- termResultMsg{Err: "worker " + c.worker + " stopped answering"}:
				default:
				}
				delete(s.ts.calls, id)
			}
		}
		s.tmu.Unlock()
		for _, t := range dead {
			s.log.Warn("workers: a worker with learner terminals stopped answering; they end", "worker", t.worker, "terminal", t.id)
			t.end(&TermLost{Worker: t.worker})
			t.Detach()
		}
	}
}

// termCallOn sends op (verify, reset) for learner to worker and waits
// for its answer, ctx's end or the worker's death.
func (s *Server) termCallOn(ctx context.Context, worker, op string, c termCall) (termResultMsg, error) {
	id := newID()
	p := &pendingCall{worker: worker, res: make(chan termResultMsg, 1)}
	s.tmu.Lock()
	s.ts.calls[id] = p
	s.tmu.Unlock()
	defer func() {
		s.tmu.Lock()
		delete(s.ts.calls, id)
		s.tmu.Unlock()
	}()
	b, _ := json.Marshal(c)
	if err := s.nc.Publish(subjTermIn+worker+"."+id+"."+op, b); err != nil {
		return termResultMsg{}, err
	}
	select {
	case r := <-p.res:
		if r.Err != "" {
			return r, fmt.Errorf("worker %s: %s", worker, clip(r.Err))
		}
		return r, nil
	case <-ctx.Done():
		return termResultMsg{}, ctx.Err()
	}
}

// TermVerify runs a task's check in learner's guest on worker.
func (s *Server) TermVerify(ctx context.Context, worker, learner string, script []byte, lang string) (rdmalab.TaskVerdict, error) {
	r, err := s.termCallOn(ctx, worker, "verify", termCall{Key: s.termKey(learner), Script: script, Lang: lang})
	if err != nil {
		return rdmalab.TaskVerdict{}, err
	}
	if r.NoTerm {
		return rdmalab.TaskVerdict{}, rdmalab.ErrNoTerminal
	}
	return rdmalab.TaskVerdict{Passed: r.Passed, Output: r.Output, Detail: textclip.Bytes(r.Detail, maxText)}, nil
}

// TermReset ends learner's machine on worker.
func (s *Server) TermReset(ctx context.Context, worker, learner string) error {
	_, err := s.termCallOn(ctx, worker, "reset", termCall{Key: s.termKey(learner)})
	return err
}
