package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/rdmalab/rdmalab/internal/ctxtime"
	"github.com/rdmalab/rdmalab/sandbox"

	"github.com/rdmalab/rdmalab"
)

// WorkerConfig is one worker machine.
type WorkerConfig struct {
	URL      string // nats://HOST:4222 (tls://… with TLS)
	Token    string
	NkeySeed string // file with the worker's nkey seed (instead of a token)
	CAFile   string // TLS: the server certificate's CA, if not a public one
	Name     string // default: host name
	// Backends are what this worker runs, per need, with their slots.
	Backends map[sandbox.Need]sandbox.Backend
	Slots    map[sandbox.Need]int
	// Terms, when set, are learner terminals this worker hosts for the
	// lab (term.go); nil: none.
	Terms  rdmalab.TermHost
	Logger *slog.Logger
}

// Connect joins the lab's NATS server as worker cfg.Name; wrong
// credentials fail here. Its replies come to an inbox of its own name
// (the only one its credential lets it hear).
func Connect(cfg WorkerConfig) (*nats.Conn, error) {
	if !ValidName(cfg.Name) {
		return nil, fmt.Errorf("worker name %q: 1–32 letters, digits, - or _, starting with a letter or digit (--name)", clip(cfg.Name))
	}
	opts := []nats.Option{nats.Name("labserver worker " + cfg.Name), nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond), nats.RetryOnFailedConnect(false),
		nats.CustomInboxPrefix(inboxPrefix(cfg.Name))}
	switch {
	case cfg.NkeySeed != "":
		o, err := nats.NkeyOptionFromSeed(cfg.NkeySeed)
		if err != nil {
			return nil, fmt.Errorf("nkey seed: %w", err)
		}
		opts = append(opts, o)
	case cfg.Token != "":
		opts = append(opts, nats.UserInfo(tokenUser, cfg.Token))
	}
	if cfg.CAFile != "" {
		opts = append(opts, nats.RootCAs(cfg.CAFile))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("join %s: %w", cfg.URL, err)
	}
	return nc, nil
}

// RunWorker serves the lab until ctx ends: it takes jobs for each need it
// has slots for, runs them on its backend and streams their events back.
func RunWorker(ctx context.Context, cfg WorkerConfig) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Name == "" {
		cfg.Name, _ = os.Hostname()
		cfg.Name, _, _ = strings.Cut(cfg.Name, ".")
	}
	nc, err := Connect(cfg)
	if err != nil {
		return err
	}
	defer nc.Close()
	w := &worker{cfg: cfg, log: cfg.Logger, nc: nc, cancels: map[string]context.CancelFunc{}}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	w.js = js
	sub, err := nc.Subscribe(subjCancel+cfg.Name+".*", w.onCancel)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	if cfg.Terms != nil {
		stop, err := w.serveTerms(ctx, cfg.Terms)
		if err != nil {
			return err
		}
		defer stop()
	}
	cfg.Logger.Info("worker joined", "url", cfg.URL, "name", cfg.Name, "slots", cfg.Slots, "terminals", cfg.Terms != nil)
	var wg sync.WaitGroup
	wg.Go(func() { w.heartbeat(ctx) })
	for need, n := range cfg.Slots {
		for range n {
			wg.Go(func() { w.serve(ctx, need) })
		}
	}
	wg.Wait()
	return nil
}

type worker struct {
	cfg WorkerConfig
	log *slog.Logger
	nc  *nats.Conn
	js  jetstream.JetStream

	mu      sync.Mutex
	cancels map[string]context.CancelFunc
	running int
}

func (w *worker) onCancel(m *nats.Msg) {
	id := m.Subject[len(subjCancel)+len(w.cfg.Name)+1:]
	w.mu.Lock()
	if c := w.cancels[id]; c != nil {
		c()
	}
	w.mu.Unlock()
}

// heartbeat says every beatEvery that this worker is alive, what it runs
// and how loaded it is.
func (w *worker) heartbeat(ctx context.Context) {
	info := Worker{Name: w.cfg.Name, Backends: map[string]int{}, CPUs: runtime.NumCPU(), Backend: "none"}
	for need, n := range w.cfg.Slots {
		info.Backends[string(need)] = n
	}
	var labMu sync.Mutex
	refresh := func() {
		if be := w.cfg.Backends[sandbox.NeedRDMA]; be != nil {
			lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			lab := be.Lab(lctx)
			cancel()
			labMu.Lock()
			info.Backend, info.Accel, info.Devices = be.Name(), lab.Accel, lab.Devices
			labMu.Unlock()
		}
	}
	go func() {
		for ctx.Err() == nil {
			refresh()
			_ = ctxtime.Sleep(ctx, 10*time.Second)
		}
	}()
	for ctx.Err() == nil {
		labMu.Lock()
		hb := info
		labMu.Unlock()
		w.mu.Lock()
		hb.Running = w.running
		w.mu.Unlock()
		if w.cfg.Terms != nil {
			n, max := w.cfg.Terms.InUse()
			hb.Terms = &rdmalab.TermLoad{Max: max, InUse: n}
		}
		hb.Load1 = load1()
		b, _ := json.Marshal(hb)
		_ = w.nc.Publish(subjHeartbeat+w.cfg.Name, b)
		_ = ctxtime.Sleep(ctx, beatEvery)
	}
}

// serve takes one job at a time for need until ctx ends. A lost stream
// (the server restarted) is looked for again.
func (w *worker) serve(ctx context.Context, need sandbox.Need) {
	var cons jetstream.Consumer
	for ctx.Err() == nil {
		if cons == nil {
			// The server made the consumer; a worker may only use it.
			c, err := w.js.Consumer(ctx, stream, consumerName(need))
			if err != nil {
				_ = ctxtime.Sleep(ctx, 500*time.Millisecond)
				continue
			}
			cons = c
		}
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			cons = nil
			_ = ctxtime.Sleep(ctx, 250*time.Millisecond)
			continue
		}
		for m := range batch.Messages() {
			w.handle(ctx, need, m)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			cons = nil
		}
	}
}

// handle claims a job's run, runs it and streams its events. A refused
// claim (the run ended already, or belongs to an earlier server) drops it.
func (w *worker) handle(ctx context.Context, need sandbox.Need, m jetstream.Msg) {
	var job Job
	if err := json.Unmarshal(m.Data(), &job); err != nil || job.RunID == "" {
		_ = m.Term()
		return
	}
	id := job.RunID
	subj := subjEvents + w.cfg.Name + "." + id
	// Frames are numbered: the server fails a run with a hole.
	var n int64
	var nmu sync.Mutex
	send := func(f sandbox.Frame) {
		nmu.Lock()
		defer nmu.Unlock()
		n++
		b, _ := json.Marshal(frame{N: n, Frame: f})
		_ = w.nc.Publish(subj, b)
	}
	ses := &sandbox.Session{RunID: id, Experiment: job.Experiment, Request: job.Req, Emit: func(ev sandbox.Event) {
		send(sandbox.Frame{Event: &ev})
	}}
	if job.Interactive {
		// Listen for the run's commands before claiming it: the server
		// sends them once the claim is granted.
		cmds, stop, err := w.commands(id)
		if err != nil {
			_ = m.Nak()
			return
		}
		defer stop()
		ses.Commands = cmds
	}
	cb, _ := json.Marshal(Claim{Epoch: job.Epoch})
	reply, err := w.nc.Request(subjClaim+w.cfg.Name+"."+id, cb, 5*time.Second)
	if err != nil {
		_ = m.Nak() // the server did not answer: let it come back
		return
	}
	if string(reply.Data) != "ok" {
		_ = m.Term()
		return
	}
	_ = m.Ack()
	runCtx, cancel := context.WithCancel(ctx)
	w.mu.Lock()
	w.cancels[id] = cancel
	w.running++
	w.mu.Unlock()
	defer func() {
		cancel()
		w.mu.Lock()
		delete(w.cancels, id)
		w.running--
		w.mu.Unlock()
	}()
	w.log.Info("run", "run", id, "experiment", job.Experiment, "interactive", job.Interactive)
	var end sandbox.End
	if be := w.cfg.Backends[need]; be == nil {
		end = sandbox.End{Kind: sandbox.EndError, Error: "worker " + w.cfg.Name + " has no backend for " + string(need),
			Zh: "worker 机器 " + w.cfg.Name + " 没有能运行 " + string(need) + " 实验的后端"}
	} else {
		err := be.Exec(runCtx, ses)
		end = sandbox.EndOf(err, runCtx.Err() != nil)
	}
	send(sandbox.Frame{End: &end})
	_ = w.nc.Flush()
}

// commands subscribes to run id's commands from the server: each message
// is one sandbox.Command, an empty one ends the stream. The stream closes
// then or when stop is called.
func (w *worker) commands(id string) (<-chan sandbox.Command, func(), error) {
	ch := make(chan sandbox.Command, 16)
	var mu sync.Mutex
	closed := false
	closeOnce := func() {
		mu.Lock()
		defer mu.Unlock()
		if !closed {
			closed = true
			close(ch)
		}
	}
	sub, err := w.nc.Subscribe(subjCommands+w.cfg.Name+"."+id, func(m *nats.Msg) {
		if len(m.Data) == 0 {
			closeOnce()
			return
		}
		c, err := sandbox.DecodeCommand(m.Data)
		if err != nil {
			w.log.Warn("a command from the server that is not one", "run", id, "err", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		select {
		case ch <- c:
		default: // the server's runner queues 4 at most; more is a broken server
		}
	})
	if err != nil {
		return nil, nil, err
	}
	// The subscription must reach the server before the claim does.
	if err := w.nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, nil, err
	}
	return ch, func() { _ = sub.Unsubscribe(); closeOnce() }, nil
}

func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}
