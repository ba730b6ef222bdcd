package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/rdmalab/rdmalab"
)

// termWorker is a worker's side of learner terminals: it opens shells on
// its rdmalab.TermHost when the server asks and relays their bytes.
type termWorker struct {
	w    *worker
	host rdmalab.TermHost

	mu    sync.Mutex
	conns map[string]*workerTerm // by the server's terminal id
}

type workerTerm struct {
	cancel context.CancelFunc
	conn   rdmalab.TermConn // nil until attached
}

// serveTerms subscribes to the server's terminal requests for this worker;
// the returned func ends every shell's view here (their guests stay, as a
// closed tab leaves them).
func (w *worker) serveTerms(ctx context.Context, host rdmalab.TermHost) (func(), error) {
	tw := &termWorker{w: w, host: host, conns: map[string]*workerTerm{}}
	sub, err := w.nc.Subscribe(subjTermIn+w.cfg.Name+".>", func(m *nats.Msg) { tw.on(ctx, m) })
	if err != nil {
		return nil, err
	}
	return func() {
		_ = sub.Unsubscribe()
		tw.mu.Lock()
		defer tw.mu.Unlock()
		for id, t := range tw.conns {
			t.cancel()
			if t.conn != nil {
				t.conn.Detach()
			}
			delete(tw.conns, id)
		}
	}, nil
}

// publish sends one message of op about id to the server.
func (tw *termWorker) publish(id, op string, b []byte) {
	_ = tw.w.nc.Publish(subjTermOut+tw.w.cfg.Name+"."+id+"."+op, b)
}

// on handles one message from the server: lab.tin.<w>.<id>.<op>. The
// subscription calls it in order, so keystrokes keep theirs.
func (tw *termWorker) on(ctx context.Context, m *nats.Msg) {
	rest := m.Subject[len(subjTermIn)+len(tw.w.cfg.Name)+1:]
	id, op, ok := strings.Cut(rest, ".")
	if !ok || id == "" {
		return
	}
	switch op {
	case "open":
		var o termOpen
		if json.Unmarshal(m.Data, &o) != nil || o.Key == "" {
			return
		}
		tctx, cancel := context.WithCancel(ctx)
		tw.mu.Lock()
		if old := tw.conns[id]; old != nil {
			tw.mu.Unlock()
			cancel()
			return // an id is opened once
		}
		t := &workerTerm{cancel: cancel}
		tw.conns[id] = t
		tw.mu.Unlock()
		go tw.open(tctx, id, t, o)
	case "in", "size":
		tw.mu.Lock()
		t := tw.conns[id]
		var c rdmalab.TermConn
		if t != nil {
			c = t.conn
		}
		tw.mu.Unlock()
		if c == nil {
			// Not a keystroke lost before attach: the server writes only
			// after "ready", which open sends once conn is set. This
			// terminal has ended here (detached, or its shell exited).
			return
		}
		if op == "in" {
			if errors.Is(c.Write(m.Data), rdmalab.ErrKeysDropped) {
				tw.publish(id, "dropped", nil) // the server's next Write says so
			}
			return
		}
		var sz termSize
		if json.Unmarshal(m.Data, &sz) == nil {
			_ = c.Resize(sz.Rows, sz.Cols)
		}
	case "detach":
		tw.mu.Lock()
		t := tw.conns[id]
		delete(tw.conns, id)
		tw.mu.Unlock()
		if t != nil {
			t.cancel()
			if t.conn != nil {
				t.conn.Detach()
			}
		}
	case "verify", "reset":
		var c termCall
		if json.Unmarshal(m.Data, &c) != nil || c.Key == "" {
			return
		}
		go tw.call(ctx, id, op, c)
	}
}

// open attaches to key's shell and relays its output until it ends or
// the server detaches.
func (tw *termWorker) open(ctx context.Context, id string, t *workerTerm, o termOpen) {
	if o.Client != "" && len(o.Client) <= 64 {
		ctx = rdmalab.WithClient(ctx, o.Client)
	}
	conn, err := tw.host.Attach(ctx, o.Key, o.Rows, o.Cols, nil)
	if err != nil {
		tw.mu.Lock()
		delete(tw.conns, id)
		tw.mu.Unlock()
		b, _ := json.Marshal(termReady{Err: err.Error()})
		tw.publish(id, "ready", b)
		return
	}
	tw.mu.Lock()
	if tw.conns[id] != t { // detached while it started
		tw.mu.Unlock()
		conn.Detach()
		return
	}
	t.conn = conn
	tw.mu.Unlock()
	recent := conn.Recent()
	if len(recent) > termRecent {
		recent = recent[len(recent)-termRecent:]
	}
	b, _ := json.Marshal(termReady{Recent: recent, Note: conn.KeptNote()})
	tw.publish(id, "ready", b)
	tw.w.log.Info("terminal opened", "terminal", id)
	for b := range conn.Output() {
		for len(b) > 0 {
			n := min(len(b), termChunk)
			tw.publish(id, "out", b[:n])
			b = b[n:]
		}
	}
	tw.mu.Lock()
	mine := tw.conns[id] == t
	delete(tw.conns, id)
	tw.mu.Unlock()
	if mine { // the shell ended (not a detach from the server)
		tw.publish(id, "end", nil)
		conn.Detach()
	}
}

// call runs a verify or a reset and answers it.
func (tw *termWorker) call(ctx context.Context, id, op string, c termCall) {
	var res termResultMsg
	if op == "reset" {
		if err := tw.host.Reset(ctx, c.Key); err != nil {
			res.Err = err.Error()
		}
	} else {
		v, err := tw.host.Verify(ctx, c.Key, c.Script, c.Lang)
		switch {
		case errors.Is(err, rdmalab.ErrNoTerminal):
			res.NoTerm = true
		case err != nil:
			res.Err = err.Error()
		default:
			res.Passed, res.Output, res.Detail = v.Passed, v.Output, v.Detail
		}
	}
	b, _ := json.Marshal(res)
	tw.publish(id, "result", b)
}
