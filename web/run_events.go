package web

import (
	"github.com/go-chi/chi/v5"
	"net/http"
	"time"
)

// runEvents is GET /api/runs/{id}/events: the run's events as Server-Sent
// Events — the stored ones after Last-Event-ID first, then live ones as the
// runner emits them — ending with `event: end` after the final status.
// A finished run replays and ends at once.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	hub := s.cfg.Runs
	if hub == nil {
		s.writeError(w, r, errSandboxOff)
		return
	}
	id := chi.URLParam(r, "id")
	after := lastEventID(r)

	// Subscribe before reading the backlog: an event stored in between is
	// then both in the backlog and on the channel, and the seq check below
	// drops the copy. The other order could lose it. A run the hub is
	// streaming gives its backlog from memory, with no store read at all.
	sub, frames, live := hub.subscribeAfter(id, after)
	defer hub.unsubscribe(id, sub)
	if !live {
		run, err := s.loadRun(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		backlog, err := s.cfg.Store.RunEventsJSON(r.Context(), run.ID, after, 0)
		if err != nil {
			s.writeError(w, r, err)
			return
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
			return
		}
		sent = f.seq
		if f.final {
			_ = sse.named("end", `{}`)
			return
		}
	}
	if err := sse.comment("live"); err != nil {
		return
	}

	beat := time.NewTicker(hub.heartbeat())
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return // the learner closed the tab; the run goes on
		case <-beat.C:
			if err := sse.comment("ping"); err != nil {
				return
			}
		case f, ok := <-sub.ch:
			if !ok {
				// Dropped for being slow: end this response; the browser
				// reconnects with Last-Event-ID and resumes from the store.
				return
			}
			// Write this event and every other one already waiting, then
			// flush once: each event still leaves as soon as it is here.
		drain:
			for {
				if f.seq > sent {
					if err := sse.frame(f); err != nil {
						return
					}
					sent = f.seq
					if f.final {
						_ = sse.named("end", `{}`)
						return
					}
				}
				select {
				case f, ok = <-sub.ch:
					if !ok {
						_ = sse.flush()
						return
					}
				default:
					break drain
				}
			}
			if err := sse.flush(); err != nil {
				return
			}
		}
	}
}
