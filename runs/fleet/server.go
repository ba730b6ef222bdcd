package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"golang.org/x/time/rate"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/textclip"

	"github.com/rdmalab/rdmalab/sandbox"
)

// ServerConfig says how the lab server listens for workers.
type ServerConfig struct {
	Listen string // host:port for workers, e.g. 0.0.0.0:4222
	// Workers are the workers' names and public nkeys (a credential per
	// worker), and/or
	Workers []WorkerKey
	// Token is one credential shared by token workers (see auth.go).
	Token string
	// TLS: see docs/operations.md ("More machines"): put the cert and key
	// in TLSCert/TLSKey and workers join with tls://.
	TLSCert, TLSKey string
	StoreDir        string // JetStream's directory (a temp dir when empty)
	Logger          *slog.Logger
}

// Server is the embedded NATS server with JetStream and the lab's side of
// the protocol: the work queue, claims, events, heartbeats.
type Server struct {
	cfg   ServerConfig
	log   *slog.Logger
	ns    *server.Server
	opts  *server.Options
	nc    *nats.Conn
	js    jetstream.JetStream
	epoch string
	// abuse logs what a worker did wrong, at most once per 10 s.
	abuse rate.Sometimes

	mu      sync.Mutex
	workers map[string]*Worker
	runs    map[string]*remoteRun // by run id, while Exec waits
	subs    []*nats.Subscription
	wsubs   map[string]*workerSubs          // each nkey worker's own (isolate.go)
	ownSubs atomic.Pointer[map[string]bool] // wsubs' names, read without mu by the shared subscriptions

	tmu     sync.Mutex // guards ts; taken before mu, never after
	ts      termState  // learner terminals on workers (term_server.go)
	closing chan struct{}
}

type remoteRun struct {
	emit    func(sandbox.Event)
	need    sandbox.Need
	worker  string // whose claim was granted ("" = not started); under Server.mu
	claimed chan string
	end     chan sandbox.End

	mu       sync.Mutex // orders emit calls; guards what follows
	n        int64      // the last frame's number
	events   int        // events taken
	bytes    int        // their bytes
	broken   bool       // a bound was broken: nothing more is taken
	srvDrops int        // the server's drops of the worker's events when the last frame came (isolate.go)
}

// Start runs the embedded NATS server and subscribes the lab's side.

// natsStartWait bounds the embedded NATS server's start (tens of ms
// here; a loaded 2-core machine needs more).
const natsStartWait = 30 * time.Second

func Start(cfg ServerConfig) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("workers listen address %q: %w", cfg.Listen, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("workers listen port %q: %w", port, err)
	}
	if p == 0 {
		// nats-server reads port 0 as its default, 4222, not "any port":
		// two labs (or test binaries) asking for :0 collided on 4222 and
		// the second never started. RANDOM_PORT is its "any port".
		p = server.RANDOM_PORT
	}
	if cfg.Token == "" && len(cfg.Workers) == 0 {
		return nil, errors.New("workers need credentials: an nkey per worker (--nats-nkeys NAME=U…) or a shared token (--nats-token)")
	}
	for _, k := range cfg.Workers {
		if !ValidName(k.Name) || !nkeys.IsValidPublicUserKey(k.Pub) {
			return nil, fmt.Errorf("worker key %s=%s: not a worker name and a public user nkey", clip(k.Name), clip(k.Pub))
		}
	}
	opts := &server.Options{Host: host, Port: p, NoSigs: true, JetStream: true, StoreDir: cfg.StoreDir,
		JetStreamMaxMemory: 64 << 20, MaxPayload: maxMessage}
	if cfg.TLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey})
		if err != nil {
			return nil, fmt.Errorf("workers TLS: %w", err)
		}
		opts.TLSConfig = tc
	}
	// The lab's own in-process connection has a password of its own and
	// every permission; workers have theirs (auth.go).
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	labPass := hex.EncodeToString(b)
	authOptions(opts, labPass, cfg.Token, cfg.Workers)
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	nlog := newNatsLogger(cfg.Logger)
	ns.SetLoggerV2(nlog, false, false, false)
	go ns.Start()
	// A server that cannot start (its port taken, its store directory
	// unusable) fails here with the last error it reported.
	if !ns.ReadyForConnections(natsStartWait) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded NATS server did not start on %s within %s (%s)", cfg.Listen, natsStartWait, nlog.lastError())
	}
	epoch := make([]byte, 8)
	_, _ = rand.Read(epoch)
	s := &Server{cfg: cfg, log: cfg.Logger, ns: ns, opts: opts, epoch: hex.EncodeToString(epoch),
		workers: map[string]*Worker{}, runs: map[string]*remoteRun{}, abuse: rate.Sometimes{Interval: 10 * time.Second},
		closing: make(chan struct{}), ts: newTermState()}
	nc, err := nats.Connect("", nats.InProcessServer(ns), nats.Name("labserver"), nats.MaxReconnects(-1),
		nats.UserInfo("lab", labPass), nats.ErrorHandler(s.natsError))
	if err != nil {
		ns.Shutdown()
		return nil, fmt.Errorf("connect to the embedded NATS server: %w", err)
	}
	s.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		ns.Shutdown()
		return nil, err
	}
	s.js = js
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Memory storage: a queued job does not outlive the server (the next
	// start marks its run interrupted anyway); a restart starts empty.
	_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subjRuns + ">"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.MemoryStorage, MaxAge: time.Hour})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("work queue: %w", err)
	}
	// The work consumers are the server's: workers may only fetch from
	// them and acknowledge what they fetched.
	for _, need := range []sandbox.Need{sandbox.NeedHost, sandbox.NeedRDMA} {
		_, err := js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
			Durable: consumerName(need), FilterSubject: subjRuns + string(need),
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxDeliver: 5, MaxAckPending: 10000,
		})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("work queue consumer: %w", err)
		}
	}
	// Token workers share these; an nkey worker has its own (isolate.go).
	for subj, h := range map[string]nats.MsgHandler{
		subjHeartbeat + "*": s.shared(s.onHeartbeat, subjHeartbeat),
		subjClaim + "*.*":   s.shared(s.onClaim, subjClaim),
		subjEvents + "*.*":  s.shared(s.onEvent, subjEvents),
	} {
		if cfg.Token == "" {
			break // every worker has subscriptions of its own
		}
		sub, err := nc.Subscribe(subj, h)
		if err != nil {
			s.Close()
			return nil, err
		}
		// What waits for the handler is bounded: a flood is dropped by
		// the client, not kept (1 MB messages once took it to 1.8 GB).
		_ = sub.SetPendingLimits(pendingMsgs, pendingBytes)
		s.subs = append(s.subs, sub)
	}
	s.mu.Lock()
	err = s.subscribeWorkersLocked(workerNames(cfg.Workers))
	s.mu.Unlock()
	if err != nil {
		s.Close()
		return nil, err
	}
	if err := s.termsInit(); err != nil {
		s.Close()
		return nil, err
	}
	s.log.Info("listening for workers", "addr", cfg.Listen, "tls", cfg.TLSCert != "", "nkey_workers", len(cfg.Workers), "token", cfg.Token != "")
	return s, nil
}

// SetWorkers replaces the nkey workers (and keeps the token, if any): a
// worker whose key is gone is disconnected at once and cannot join again;
// a run it had fails when its heartbeats stop.
func (s *Server) SetWorkers(keys []WorkerKey) error {
	for _, k := range keys {
		if !ValidName(k.Name) || !nkeys.IsValidPublicUserKey(k.Pub) {
			return fmt.Errorf("worker key %s=%s: not a worker name and a public user nkey", clip(k.Name), clip(k.Pub))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.opts.Clone()
	labPass := s.opts.Users[0].Password
	authOptions(o, labPass, s.cfg.Token, keys)
	if err := s.ns.ReloadOptions(o); err != nil {
		return fmt.Errorf("reload the workers' keys: %w", err)
	}
	s.opts = o
	s.cfg.Workers = keys
	return s.subscribeWorkersLocked(workerNames(keys))
}

func workerNames(keys []WorkerKey) []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name
	}
	return names
}

// natsError reports the lab connection's asynchronous errors (a slow
// consumer: a flood was dropped), at most once per 10 s.
func (s *Server) natsError(_ *nats.Conn, sub *nats.Subscription, err error) {
	s.abuse.Do(func() {
		subj := ""
		if sub != nil {
			subj = sub.Subject
		}
		s.log.Warn("workers: messages dropped or refused", "subject", subj, "err", err)
	})
}

// Addr is where workers join (useful with port 0).
func (s *Server) Addr() string { return s.ns.Addr().String() }

// Close stops the NATS server; runs waiting on workers fail.
func (s *Server) Close() {
	s.mu.Lock()
	runs := s.runs
	s.runs = map[string]*remoteRun{}
	s.mu.Unlock()
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	for _, r := range runs {
		select {
		case r.end <- sandbox.End{Kind: sandbox.EndError, Error: "the lab server is shutting down", Zh: "实验服务器正在关闭"}:
		default:
		}
	}
	s.mu.Lock()
	for _, ws := range s.wsubs {
		ws.close()
	}
	s.wsubs = nil
	s.mu.Unlock()
	if s.nc != nil {
		s.nc.Close()
	}
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

func (s *Server) onHeartbeat(m *nats.Msg) {
	name := m.Subject[len(subjHeartbeat):]
	if !ValidName(name) {
		return
	}
	now := time.Now()
	s.mu.Lock()
	old, known := s.workers[name]
	if known && now.Sub(old.Seen) < heartbeatMin {
		s.mu.Unlock()
		return // faster than any worker beats: dropped unread
	}
	if !known && len(s.workers) >= maxWorkers {
		s.mu.Unlock()
		s.warn("workers: heartbeat of one worker too many ignored", "worker", name, "max", maxWorkers)
		return
	}
	s.mu.Unlock()
	hb, ok := decodeHeartbeat(m.Data)
	if !ok {
		s.warn("workers: heartbeat that is not one", "worker", name, "bytes", len(m.Data))
		return
	}
	hb.Name = name // who it is is its subject's, which its credential allows
	w := sanitize(hb)
	w.Seen = now
	s.mu.Lock()
	if _, known := s.workers[name]; !known {
		s.log.Info("worker joined", "worker", name, "backend", w.Backend, "slots", w.Backends)
	}
	if len(s.workers) < maxWorkers || s.workers[name] != nil {
		s.workers[name] = &w
	}
	s.mu.Unlock()
}

// warn logs a worker's misdeed, at most once per 10 s.
func (s *Server) warn(msg string, args ...any) { s.abuse.Do(func() { s.log.Warn(msg, args...) }) }

// subjectOf splits lab.X.<worker>.<run> after prefix.
func subjectOf(subj, prefix string) (worker, run string, ok bool) {
	worker, run, ok = strings.Cut(subj[len(prefix):], ".")
	return worker, run, ok && ValidName(worker) && run != ""
}

// onClaim answers a worker that wants to start a run: yes once, to the
// first, while the run still waits here; no otherwise (a redelivered job
// of a run already failed, or of an earlier server). The worker is the one
// the subject names (its credential allows only its own).
func (s *Server) onClaim(m *nats.Msg) {
	worker, id, ok := subjectOf(m.Subject, subjClaim)
	if !ok {
		return
	}
	var c Claim
	_ = json.Unmarshal(m.Data, &c)
	s.mu.Lock()
	r := s.runs[id]
	ok = r != nil && r.worker == "" && c.Epoch == s.epoch
	if ok {
		r.worker = worker
	}
	s.mu.Unlock()
	if ok {
		_, srvDrops := s.drops(worker) // a gap counts only the server's drops from here on
		// Where it runs, before the worker can send its first event.
		r.mu.Lock()
		r.srvDrops = srvDrops
		r.emit(sandbox.Event{Type: sandbox.EvStatus, Status: sandbox.StatusRunning, Backend: s.backendOf(worker, r.need)})
		r.mu.Unlock()
		r.claimed <- worker
		_ = m.Respond([]byte("ok"))
		return
	}
	_ = m.Respond([]byte("no"))
}

// onEvent takes one frame of a run from the worker whose claim was
// granted, within the run's bounds; anything else is dropped.
func (s *Server) onEvent(m *nats.Msg) {
	worker, id, ok := subjectOf(m.Subject, subjEvents)
	if !ok {
		return
	}
	s.mu.Lock()
	r := s.runs[id]
	mine := r != nil && r.worker == worker
	s.mu.Unlock()
	if r == nil {
		return // a run that already ended here (failed, cancelled)
	}
	if !mine {
		s.warn("workers: events for a run another worker (or none) was granted", "worker", worker, "run", id)
		return
	}
	_, srvDrops := s.drops(worker)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broken {
		return
	}
	r.events++
	r.bytes += rdmalab.EventCost(m.Data) // what the lab's encoding of it costs
	var f frame
	why := ""
	switch {
	case r.events > runEvents:
		why = fmt.Sprintf("more than %d events in one run", runEvents)
	case r.bytes > runBytes:
		why = fmt.Sprintf("more than %d bytes of events in one run", runBytes)
	case json.Unmarshal(m.Data, &f) != nil || (f.Event == nil) == (f.End == nil):
		why = "a message that is not an event or an end"
	case f.N != r.n+1 && srvDrops != r.srvDrops:
		// Not the worker's rate: the server dropped them itself (a
		// pending limit overflowed) and says so in its own name.
		r.broken = true
		s.warn("workers: the lab server dropped messages of a run; it fails, not the worker's fault", "worker", worker, "run", id)
		_ = s.nc.Publish(subjCancel+worker+"."+id, nil)
		select {
		case r.end <- sandbox.End{Kind: sandbox.EndError,
			Error: fmt.Sprintf("the lab server could not keep up with worker %s's messages and lost some of this run's (not the worker's fault): run it again", worker),
			Zh:    fmt.Sprintf("实验服务器没有跟上 worker %s 的消息，丢失了这次运行的一部分（不是 worker 的错）：请再运行一次", worker)}:
		default:
		}
		return
	case f.N != r.n+1:
		why = fmt.Sprintf("message %d after %d: it sent faster than %d bytes a second and messages were dropped, or they were forged", f.N, r.n, workerRate)
	}
	if why != "" {
		r.broken = true
		s.warn("workers: a worker broke a bound; its run fails", "worker", worker, "run", id, "bound", why)
		_ = s.nc.Publish(subjCancel+worker+"."+id, nil)
		select {
		case r.end <- sandbox.End{Kind: sandbox.EndBroken, Error: "the worker broke a bound: " + why, Zh: "worker 机器越过了一项限制：" + why}:
		default:
		}
		return
	}
	r.n = f.N
	r.srvDrops = srvDrops
	if f.End != nil {
		end := sandbox.End{Kind: f.End.Kind, Error: textclip.Bytes(f.End.Error, maxText), Zh: textclip.Bytes(f.End.Zh, maxText)}
		select {
		case r.end <- end:
		default:
		}
		return
	}
	r.emit(*f.Event)
}

// Workers are the workers heard from recently, by name.
func (s *Server) Workers() []Worker {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Worker
	for name, w := range s.workers {
		if time.Since(w.Seen) > deadAfter {
			delete(s.workers, name)
			continue
		}
		out = append(out, *w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// alive reports whether worker name has been heard from lately.
func (s *Server) alive(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.workers[name]
	return w != nil && time.Since(w.Seen) <= deadAfter
}

// Slots is how many runs of need the live workers take at once.
func (s *Server) Slots(need sandbox.Need) int {
	n := 0
	for _, w := range s.Workers() {
		n += w.Backends[string(need)]
	}
	return n
}

// Exec queues the session's run for a worker and relays its events until
// it ends; an interactive run's commands go to the worker that claimed it.
// A worker that stops sending heartbeats mid-run fails the run with that
// reason; cancelling ctx asks the worker to stop it.
func (s *Server) Exec(ctx context.Context, need sandbox.Need, ses *sandbox.Session) error {
	id := ses.RunID
	r := &remoteRun{emit: ses.Emit, need: need, claimed: make(chan string, 1), end: make(chan sandbox.End, 1)}
	s.mu.Lock()
	s.runs[id] = r
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.runs, id)
		s.mu.Unlock()
	}()
	b, _ := json.Marshal(Job{RunID: id, Experiment: ses.Experiment, Req: ses.Request, Interactive: ses.Interactive(), Need: need, Epoch: s.epoch})
	if _, err := s.js.Publish(ctx, subjRuns+string(need), b, jetstream.WithMsgID(id)); err != nil {
		return fmt.Errorf("queue the run for a worker: %w", err)
	}
	worker := ""
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case w := <-r.claimed:
			worker = w
			if ses.Interactive() {
				// The worker subscribed to the run's commands before it
				// claimed the run: none is lost.
				defer s.forwardCommands(ctx, w, id, ses.Commands)()
			}
		case end := <-r.end:
			// Events before the end were emitted in order by onEvent; wait
			// for any still being handed over.
			r.mu.Lock()
			r.mu.Unlock()
			err := end.Err()
			if err != nil && end.Kind != sandbox.EndFailed && worker != "" {
				err = fmt.Errorf("%w (worker %s)", err, worker)
			}
			return err
		case <-ctx.Done():
			if worker != "" {
				_ = s.nc.Publish(subjCancel+worker+"."+id, nil)
			}
			return ctx.Err()
		case <-tick.C:
			if worker != "" && !s.alive(worker) {
				return &sandbox.Reason{Kind: "worker-lost", Text: sandbox.Text{
					"en": fmt.Sprintf("worker %s stopped answering while running this run (no heartbeat for %s): it died or lost its connection; the run's outcome is unknown", worker, deadAfter),
					"zh": fmt.Sprintf("worker 机器 %s 在运行途中不再应答（%s 没有心跳）：它死掉了或断开了连接；运行结果未知", worker, deadAfter)}}
			}
		}
	}
}

// forwardCommands publishes each command of cmds to worker, running
// run id, and an empty message when cmds closes (no more commands: the
// experiment cleans up). stop ends it.
func (s *Server) forwardCommands(ctx context.Context, worker, id string, cmds <-chan sandbox.Command) (stop func()) {
	return sandbox.ForwardCommands(ctx, cmds, func(c sandbox.Command, ok bool) error {
		var b []byte
		if ok {
			b, _ = json.Marshal(c)
		}
		return s.nc.Publish(subjCommands+worker+"."+id, b)
	})
}

// backendOf names where a worker runs runs of need, e.g. "vm@lab-2".
func (s *Server) backendOf(worker string, need sandbox.Need) string {
	if need == sandbox.NeedHost {
		return "host@" + worker
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.workers[worker]; w != nil && w.Backend != "" {
		return w.Backend + "@" + worker
	}
	return "worker@" + worker
}

// natsLogger sends the embedded server's notices to slog (warnings and
// up), each kind at most once per 10 s: a worker's every refused publish
// (a permissions violation) is one of them.
type natsLogger struct {
	l          *slog.Logger
	warn, errs *rate.Sometimes
	// last is the latest error the server reported, every one kept: a
	// server that does not start says why in Start's error.
	last *atomic.Pointer[string]
}

func newNatsLogger(l *slog.Logger) natsLogger {
	return natsLogger{l: l, warn: &rate.Sometimes{Interval: 10 * time.Second}, errs: &rate.Sometimes{Interval: 10 * time.Second},
		last: new(atomic.Pointer[string])}
}

// lastError is the latest error the server reported, or a note that there
// was none.
func (n natsLogger) lastError() string {
	if p := n.last.Load(); p != nil {
		return "its last error: " + *p
	}
	return "it reported no error"
}

func (n natsLogger) keep(format string, v ...any) string {
	msg := fmt.Sprintf(format, v...)
	n.last.Store(&msg)
	return msg
}

func (n natsLogger) Noticef(format string, v ...any) {}
func (n natsLogger) Warnf(format string, v ...any) {
	n.warn.Do(func() { n.l.Warn("nats: " + fmt.Sprintf(format, v...)) })
}
func (n natsLogger) Fatalf(format string, v ...any) { n.l.Error("nats: " + n.keep(format, v...)) }
func (n natsLogger) Errorf(format string, v ...any) {
	msg := n.keep(format, v...)
	n.errs.Do(func() { n.l.Error("nats: " + msg) })
}
func (n natsLogger) Debugf(format string, v ...any) {}
func (n natsLogger) Tracef(format string, v ...any) {}
