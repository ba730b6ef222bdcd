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
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/rdmalab/rdmalab/sandbox"
)

// ServerConfig says how the lab server listens for workers.
type ServerConfig struct {
	Listen   string // host:port for workers, e.g. 0.0.0.0:4222
	Token    string // workers authenticate with this token, or
	NkeyPubs []string
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
	nc    *nats.Conn
	js    jetstream.JetStream
	epoch string

	mu      sync.Mutex
	workers map[string]*Worker
	runs    map[string]*remoteRun // by run id, while Exec waits
	subs    []*nats.Subscription
}

type remoteRun struct {
	emit    func(sandbox.Event)
	need    sandbox.Need
	worker  string // who claimed it ("" = not started)
	claimed chan string
	end     chan sandbox.End
	mu      sync.Mutex // orders emit calls
}

// Start runs the embedded NATS server and subscribes the lab's side.
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
	if cfg.Token == "" && len(cfg.NkeyPubs) == 0 {
		return nil, errors.New("workers need credentials: set a token (--nats-token) or nkeys (--nats-nkey)")
	}
	opts := &server.Options{Host: host, Port: p, NoSigs: true, JetStream: true, StoreDir: cfg.StoreDir,
		JetStreamMaxMemory: 64 << 20, MaxPayload: 1 << 20}
	if cfg.Token != "" && len(cfg.NkeyPubs) > 0 {
		return nil, errors.New("workers authenticate with a token or with nkeys, not both")
	}
	// The lab's own in-process connection authenticates like a worker.
	opts.Authorization = cfg.Token
	if cfg.TLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey})
		if err != nil {
			return nil, fmt.Errorf("workers TLS: %w", err)
		}
		opts.TLSConfig = tc
	}
	var inProcToken string
	if cfg.Token == "" {
		// nkeys: the in-process connection gets a password of its own.
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		inProcToken = hex.EncodeToString(b)
		opts.Users = []*server.User{{Username: "lab", Password: inProcToken}}
		for _, k := range cfg.NkeyPubs {
			opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: k})
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	ns.SetLoggerV2(natsLogger{cfg.Logger}, false, false, false)
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded NATS server did not start on %s", cfg.Listen)
	}
	copts := []nats.Option{nats.InProcessServer(ns), nats.Name("labserver"), nats.MaxReconnects(-1)}
	if cfg.Token != "" {
		copts = append(copts, nats.Token(cfg.Token))
	} else {
		copts = append(copts, nats.UserInfo("lab", inProcToken))
	}
	nc, err := nats.Connect("", copts...)
	if err != nil {
		ns.Shutdown()
		return nil, fmt.Errorf("connect to the embedded NATS server: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		ns.Shutdown()
		return nil, err
	}
	epoch := make([]byte, 8)
	_, _ = rand.Read(epoch)
	s := &Server{cfg: cfg, log: cfg.Logger, ns: ns, nc: nc, js: js, epoch: hex.EncodeToString(epoch),
		workers: map[string]*Worker{}, runs: map[string]*remoteRun{}}
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
	for subj, h := range map[string]nats.MsgHandler{
		subjHeartbeat:    s.onHeartbeat,
		subjClaim + "*":  s.onClaim,
		subjEvents + "*": s.onEvent,
	} {
		sub, err := nc.Subscribe(subj, h)
		if err != nil {
			s.Close()
			return nil, err
		}
		_ = sub.SetPendingLimits(-1, -1)
		s.subs = append(s.subs, sub)
	}
	s.log.Info("listening for workers", "addr", cfg.Listen, "tls", cfg.TLSCert != "")
	return s, nil
}

// Addr is where workers join (useful with port 0).
func (s *Server) Addr() string { return s.ns.Addr().String() }

// Close stops the NATS server; runs waiting on workers fail.
func (s *Server) Close() {
	s.mu.Lock()
	runs := s.runs
	s.runs = map[string]*remoteRun{}
	s.mu.Unlock()
	for _, r := range runs {
		select {
		case r.end <- sandbox.End{Kind: sandbox.EndError, Error: "the lab server is shutting down"}:
		default:
		}
	}
	if s.nc != nil {
		s.nc.Close()
	}
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

func (s *Server) onHeartbeat(m *nats.Msg) {
	var w Worker
	if json.Unmarshal(m.Data, &w) != nil || w.Name == "" {
		return
	}
	w.Seen = time.Now()
	s.mu.Lock()
	if _, known := s.workers[w.Name]; !known {
		s.log.Info("worker joined", "worker", w.Name, "backend", w.Backend, "slots", w.Backends)
	}
	s.workers[w.Name] = &w
	s.mu.Unlock()
}

// onClaim answers a worker that wants to start a run: yes once, to the
// first, while the run still waits here; no otherwise (a redelivered job
// of a run already failed, or of an earlier server).
func (s *Server) onClaim(m *nats.Msg) {
	id := m.Subject[len(subjClaim):]
	var c Claim
	_ = json.Unmarshal(m.Data, &c)
	s.mu.Lock()
	r := s.runs[id]
	ok := r != nil && r.worker == "" && c.Epoch == s.epoch
	if ok {
		r.worker = c.Worker
	}
	s.mu.Unlock()
	if ok {
		// Where it runs, before the worker can send its first event.
		r.mu.Lock()
		r.emit(sandbox.Event{Type: sandbox.EvStatus, Status: sandbox.StatusRunning, Backend: s.backendOf(c.Worker, r.need)})
		r.mu.Unlock()
		r.claimed <- c.Worker
		_ = m.Respond([]byte("ok"))
		return
	}
	_ = m.Respond([]byte("no"))
}

func (s *Server) onEvent(m *nats.Msg) {
	id := m.Subject[len(subjEvents):]
	var msg sandbox.Frame
	if json.Unmarshal(m.Data, &msg) != nil {
		return
	}
	s.mu.Lock()
	r := s.runs[id]
	s.mu.Unlock()
	if r == nil {
		return // a run that already ended here (failed, cancelled)
	}
	if msg.End != nil {
		select {
		case r.end <- *msg.End:
		default:
		}
		return
	}
	if msg.Event != nil {
		r.mu.Lock()
		r.emit(*msg.Event)
		r.mu.Unlock()
	}
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
				defer s.forwardCommands(ctx, id, ses.Commands)()
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
			_ = s.nc.Publish(subjCancel+id, nil)
			return ctx.Err()
		case <-tick.C:
			if worker != "" && !s.alive(worker) {
				return fmt.Errorf("worker %s stopped answering while running this run (no heartbeat for %s): it died or lost its connection; the run's outcome is unknown", worker, deadAfter)
			}
		}
	}
}

// forwardCommands publishes each command of cmds to the worker running
// run id, and an empty message when cmds closes (no more commands: the
// experiment cleans up). stop ends it.
func (s *Server) forwardCommands(ctx context.Context, id string, cmds <-chan sandbox.Command) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-quit:
				return
			case c, ok := <-cmds:
				var b []byte
				if ok {
					b, _ = json.Marshal(c)
				}
				if err := s.nc.Publish(subjCommands+id, b); err != nil || !ok {
					return
				}
			}
		}
	}()
	return func() { close(quit); <-done }
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

// natsLogger sends the embedded server's notices to slog (warnings and up).
type natsLogger struct{ l *slog.Logger }

func (n natsLogger) Noticef(format string, v ...any) {}
func (n natsLogger) Warnf(format string, v ...any)   { n.l.Warn("nats: " + fmt.Sprintf(format, v...)) }
func (n natsLogger) Fatalf(format string, v ...any)  { n.l.Error("nats: " + fmt.Sprintf(format, v...)) }
func (n natsLogger) Errorf(format string, v ...any)  { n.l.Error("nats: " + fmt.Sprintf(format, v...)) }
func (n natsLogger) Debugf(format string, v ...any)  {}
func (n natsLogger) Tracef(format string, v ...any)  {}
