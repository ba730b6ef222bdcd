// Package runhub is the run hub of the web layer: the runner's Sink that
// stores every run event, then fans the same bytes out to the live event
// streams (SSE) watching that run. Each event is encoded once; those bytes
// are stored as sent, and a replay or a reconnect sends them as stored.
package runhub

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

	rdmalab "github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/store"
)

// DefaultHeartbeat is how often an idle event stream gets a comment, so
// proxies and browsers keep the connection open.
const DefaultHeartbeat = 15 * time.Second

// subscriberBuffer bounds the events waiting for one slow watcher. Beyond
// it the watcher is dropped; its browser reconnects with Last-Event-ID and
// catches up from the store, so a slow client never slows a run.
const subscriberBuffer = 256

// Hub is the runner.Sink of the web layer: every run event is stored
// first, then fanned out to the live event streams watching that run, so a
// replay shows exactly what was streamed.
type Hub struct {
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

	queue *queueWatch // queue.go: words a queued run's wait
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
func frameOf(ev rdmalab.Event, data []byte) *sseFrame {
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

// New returns a hub storing into db. Pass it as the runner's Sink and as
// web.Config.Runs.
func New(db *store.DB, log *slog.Logger) *Hub {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Hub{db: db, log: log, subs: map[string]map[*subscription]struct{}{},
		live: map[string]*liveRun{}, queue: newQueueWatch()}
}

// RunCreated implements runner.RunRecorder: the run row exists before its
// first event.
func (h *Hub) RunCreated(info rdmalab.RunInfo) error {
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

// RunEvent implements runner.Sink: RunEvents of one event.
func (h *Hub) RunEvent(runID string, ev rdmalab.Event) {
	h.RunEvents(runID, []rdmalab.Event{ev})
}

// RunEvents implements runner.BatchSink: the events (one run's, in order)
// are stored in one write, then each is fanned out, so a burst costs one
// commit and wakes each watcher once, not once an event.
func (h *Hub) RunEvents(runID string, evs []rdmalab.Event) {
	data := make([][]byte, 0, len(evs))
	kept := evs[:0:0]
	for _, ev := range evs {
		ev = h.queue.note(runID, ev)
		// Encoded once: these bytes are stored and sent to every watcher.
		b, err := json.Marshal(ev)
		if err != nil {
			h.log.Error("encode run event", "run", runID, "seq", ev.Seq, "err", err)
			continue
		}
		kept = append(kept, ev)
		data = append(data, b)
	}
	if len(kept) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := h.db.AppendRunEventsJSON(ctx, runID, kept, data)
	cancel()
	if err != nil {
		// Live watchers still get them; the replay will miss them, and the log says so.
		h.log.Error("store run events", "run", runID, "first", kept[0].Seq, "events", len(kept), "err", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, ev := range kept {
		frame := frameOf(ev, data[i])
		h.keepLocked(runID, frame, err == nil)
		for sub := range h.subs[runID] {
			select {
			case sub.ch <- frame:
			default:
				h.dropLocked(runID, sub)
			}
		}
	}
}

// keepLocked adds frame to the run's live frames (stored says whether the
// store has it too: a frame the store missed must not be in a backlog the
// store could not give, so the run stops being whole).
func (h *Hub) keepLocked(runID string, f *sseFrame, stored bool) {
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
func (h *Hub) forget(runID string, lr *liveRun) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.live[runID] == lr {
		delete(h.live, runID)
		h.liveBytes -= lr.size
	}
}

// subscribe starts receiving a run's events as they are stored.
func (h *Hub) subscribe(runID string) *subscription {
	sub, _, _ := h.subscribeAfter(runID, 0)
	return sub
}

// subscribeAfter subscribes to a run's events and, when the hub holds the
// run whole, returns its frames after seq after, taken under the same lock:
// nothing is missed or doubled between the backlog and the channel. live
// is false when the backlog must come from the store.
func (h *Hub) subscribeAfter(runID string, after int64) (sub *subscription, backlog []*sseFrame, live bool) {
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

func (h *Hub) unsubscribe(runID string, sub *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropLocked(runID, sub)
}

func (h *Hub) dropLocked(runID string, sub *subscription) {
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
func (h *Hub) watchers(runID string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs[runID])
}

func (h *Hub) heartbeat() time.Duration {
	if h.Heartbeat > 0 {
		return h.Heartbeat
	}
	return DefaultHeartbeat
}

// isFinalStatus reports whether ev ends a run's stream.
func isFinalStatus(ev rdmalab.Event) bool {
	return ev.Type == rdmalab.EvStatus && ev.Status.Final()
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

// Stream answers GET /api/runs/{id}/events for runID: the run's events as
// Server-Sent Events — the backlog after Last-Event-ID first, then live
// ones as the runner emits them — ending with `event: end` after the final
// status. A finished run replays and ends at once. A run the hub is
// streaming gives its backlog from memory, with no store read at all;
// otherwise check is called first (the caller's "is there such a run",
// answered as its error) and the backlog read from the store. An error is
// returned only before anything was written, for the caller to answer;
// once streaming, a failed write just ends the response.
func (h *Hub) Stream(w http.ResponseWriter, r *http.Request, runID string, check func() error) error {
	after := lastEventID(r)

	// Subscribe before reading the backlog: an event stored in between is
	// then both in the backlog and on the channel, and the seq check below
	// drops the copy. The other order could lose it.
	sub, frames, live := h.subscribeAfter(runID, after)
	defer h.unsubscribe(runID, sub)
	if !live {
		if err := check(); err != nil {
			return err
		}
		backlog, err := h.db.RunEventsJSON(r.Context(), runID, after, 0)
		if err != nil {
			return err
		}
		for _, st := range backlog {
			frames = append(frames, frameOf(st.Event, st.Data)) // sent as stored
		}
	}
	sse := newSSEWriter(w)
	_ = sse.retry(2 * time.Second)
	sent := after
	for _, f := range frames {
		if err := sse.frame(f); err != nil {
			return nil
		}
		sent = f.seq
		if f.final {
			_ = sse.named("end", `{}`)
			return nil
		}
	}
	if err := sse.comment("live"); err != nil {
		return nil
	}

	beat := time.NewTicker(h.heartbeat())
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return nil // the learner closed the tab; the run goes on
		case <-beat.C:
			if err := sse.comment("ping"); err != nil {
				return nil
			}
		case f, ok := <-sub.ch:
			if !ok {
				// Dropped for being slow: end this response; the browser
				// reconnects with Last-Event-ID and resumes from the store.
				return nil
			}
			// Write this event and every other one already waiting, then
			// flush once: each event still leaves as soon as it is here.
		drain:
			for {
				if f.seq > sent {
					if err := sse.frame(f); err != nil {
						return nil
					}
					sent = f.seq
					if f.final {
						_ = sse.named("end", `{}`)
						return nil
					}
				}
				select {
				case f, ok = <-sub.ch:
					if !ok {
						_ = sse.flush()
						return nil
					}
				default:
					break drain
				}
			}
			if err := sse.flush(); err != nil {
				return nil
			}
		}
	}
}
