package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
)

// DefaultHeartbeat is how often an idle event stream gets a comment, so
// proxies and browsers keep the connection open.
const DefaultHeartbeat = 15 * time.Second

// subscriberBuffer bounds the events waiting for one slow watcher. Beyond
// it the watcher is dropped; its browser reconnects with Last-Event-ID and
// catches up from the store, so a slow client never slows a run.
const subscriberBuffer = 256

// RunHub is the runner.Sink of the web layer: every run event is stored
// first, then fanned out to the live event streams watching that run, so a
// replay shows exactly what was streamed.
type RunHub struct {
	db  *store.DB
	log *slog.Logger
	// Heartbeat is the idle interval of event streams (DefaultHeartbeat when 0).
	Heartbeat time.Duration

	mu   sync.Mutex
	subs map[string]map[*subscription]struct{}
	// live holds the frames of the runs being streamed now (and for
	// liveLinger after their end): a watcher who arrives mid-run gets
	// its backlog from here. A class opening one shared run at once used
	// to send every watcher to the store twice (the run, its events), and
	// those reads queued the whole class's page loads behind them on the
	// reader connections (block profile under make load).
	live      map[string]*liveRun
	liveBytes int

	queue *queueWatch // run_wait.go: words a queued run's wait
}

// subscription is one live event stream of one run. ch is closed when the
// hub drops it (too slow) or it unsubscribes.
type subscription struct {
	ch     chan *sseFrame
	closed bool
}

// sseFrame is one event encoded once as an SSE message and shared by
// every subscriber: with 200 watchers the JSON is built once, not 200 times.
type sseFrame struct {
	seq   int64
	final bool
	b     []byte
}

// frameOf is ev, encoded as data (json.Marshal(ev), the bytes stored), as
// an SSE message whose `id:` is its seq, so a reconnecting EventSource
// sends Last-Event-ID and resumes after it.
func frameOf(ev sandbox.Event, data []byte) *sseFrame {
	b := make([]byte, 0, len(data)+32)
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, ev.Seq, 10)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	return &sseFrame{seq: ev.Seq, final: isFinalStatus(ev), b: b}
}

// liveRun is what the hub keeps of one run it is streaming.
type liveRun struct {
	frames []*sseFrame // every frame from seq 1, in order, while whole
	size   int         // bytes in frames
	// whole is false once a frame was missed or the run outgrew
	// liveRunMax: its watchers read their backlog from the store.
	whole bool
	final bool
}

// Bounds of what the hub keeps in memory: a run's frames up to
// liveRunMax bytes (a lesson's run streams a few KiB to a few hundred),
// all live runs together up to liveTotalMax; beyond either, watchers read
// the store as before. A finished run is kept liveLinger for the watchers
// still arriving.
const (
	liveRunMax   = 256 << 10
	liveTotalMax = 32 << 20
	liveLinger   = 10 * time.Second
	liveRunsMax  = 4096 // runs held at once (a run that never ends holds its entry)
)

// NewRunHub returns a hub storing into db. Pass it as the runner's Sink
// and as Config.Runs.
func NewRunHub(db *store.DB, log *slog.Logger) *RunHub {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &RunHub{db: db, log: log, subs: map[string]map[*subscription]struct{}{},
		live: map[string]*liveRun{}, queue: newQueueWatch()}
}

// RunCreated implements runner.RunRecorder: the run row exists before its
// first event.
func (h *RunHub) RunCreated(info sandbox.RunInfo) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.db.CreateRun(ctx, info); err != nil {
		return err
	}
	h.mu.Lock()
	if h.live[info.ID] == nil && h.liveBytes < liveTotalMax && len(h.live) < liveRunsMax {
		h.live[info.ID] = &liveRun{whole: true}
	}
	h.mu.Unlock()
	return nil
}

// RunEvent implements runner.Sink.
func (h *RunHub) RunEvent(runID string, ev sandbox.Event) {
	ev = h.queue.note(runID, ev)
	// Encoded once: these bytes are stored and sent to every watcher.
	data, err := json.Marshal(ev)
	if err != nil {
		h.log.Error("encode run event", "run", runID, "seq", ev.Seq, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = h.db.AppendRunEventJSON(ctx, runID, ev, data)
	cancel()
	if err != nil {
		// Live watchers still get it; the replay will miss it, and the log says so.
		h.log.Error("store run event", "run", runID, "seq", ev.Seq, "type", ev.Type, "err", err)
	}
	frame := frameOf(ev, data)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.keepLocked(runID, frame, err == nil)
	for sub := range h.subs[runID] {
		select {
		case sub.ch <- frame:
		default:
			h.dropLocked(runID, sub)
		}
	}
}

// keepLocked adds frame to the run's live frames (stored says whether the
// store has it too: a frame the store missed must not be in a backlog the
// store could not give, so the run stops being whole).
func (h *RunHub) keepLocked(runID string, f *sseFrame, stored bool) {
	lr := h.live[runID]
	if lr == nil {
		return
	}
	if lr.whole && stored && f.seq == int64(len(lr.frames))+1 &&
		lr.size+len(f.b) <= liveRunMax && h.liveBytes+len(f.b) <= liveTotalMax {
		lr.frames = append(lr.frames, f)
		lr.size += len(f.b)
		h.liveBytes += len(f.b)
	} else if lr.whole {
		lr.whole = false
		h.liveBytes -= lr.size
		lr.frames, lr.size = nil, 0
	}
	if f.final && !lr.final {
		lr.final = true
		time.AfterFunc(liveLinger, func() { h.forget(runID, lr) })
	}
}

// forget drops a finished run's frames.
func (h *RunHub) forget(runID string, lr *liveRun) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.live[runID] == lr {
		delete(h.live, runID)
		h.liveBytes -= lr.size
	}
}

// subscribe starts receiving a run's events as they are stored.
func (h *RunHub) subscribe(runID string) *subscription {
	sub, _, _ := h.subscribeAfter(runID, 0)
	return sub
}

// subscribeAfter subscribes to a run's events and, when the hub holds the
// run whole, returns its frames after seq after, taken under the same lock:
// nothing is missed or doubled between the backlog and the channel. live
// is false when the backlog must come from the store.
func (h *RunHub) subscribeAfter(runID string, after int64) (sub *subscription, backlog []*sseFrame, live bool) {
	sub = &subscription{ch: make(chan *sseFrame, subscriberBuffer)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if lr := h.live[runID]; lr != nil && lr.whole {
		live = true
		for _, f := range lr.frames {
			if f.seq > after {
				backlog = append(backlog, f)
			}
		}
	}
	if h.subs[runID] == nil {
		h.subs[runID] = map[*subscription]struct{}{}
	}
	h.subs[runID][sub] = struct{}{}
	return sub, backlog, live
}

func (h *RunHub) unsubscribe(runID string, sub *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropLocked(runID, sub)
}

func (h *RunHub) dropLocked(runID string, sub *subscription) {
	if sub.closed {
		return
	}
	sub.closed = true
	close(sub.ch)
	delete(h.subs[runID], sub)
	if len(h.subs[runID]) == 0 {
		delete(h.subs, runID)
	}
}

// watchers is the number of live streams of a run (tests, metrics).
func (h *RunHub) watchers(runID string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs[runID])
}

func (h *RunHub) heartbeat() time.Duration {
	if h.Heartbeat > 0 {
		return h.Heartbeat
	}
	return DefaultHeartbeat
}

// isFinalStatus reports whether ev ends a run's stream.
func isFinalStatus(ev sandbox.Event) bool {
	return ev.Type == sandbox.EvStatus && ev.Status.Final()
}

// sseWriter writes Server-Sent Events, flushing each one.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	return s
}

// frame writes one encoded event without flushing: the caller flushes
// once it has written every event that is ready.
func (s *sseWriter) frame(f *sseFrame) error {
	_, err := s.w.Write(f.b)
	return err
}

// flush sends what was written to the client now.
func (s *sseWriter) flush() error { return s.rc.Flush() }

// named writes an event of another type (end) with a small JSON body.
func (s *sseWriter) named(name string, data string) error {
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		return err
	}
	return s.rc.Flush()
}

// comment writes a heartbeat that EventSource ignores.
func (s *sseWriter) comment(text string) error {
	if _, err := fmt.Fprintf(s.w, ": %s\n\n", text); err != nil {
		return err
	}
	return s.rc.Flush()
}

// retry tells the browser how soon to reconnect after a dropped stream.
func (s *sseWriter) retry(d time.Duration) error {
	_, err := fmt.Fprintf(s.w, "retry: %d\n\n", d.Milliseconds())
	return err
}

// lastEventID is where a stream resumes: the Last-Event-ID header of a
// reconnecting EventSource, else ?after= (a page that already rendered
// some events), else the start.
func lastEventID(r *http.Request) int64 {
	for _, v := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after")} {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return n
		}
	}
	return 0
}
