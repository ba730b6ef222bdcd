package terminal

import (
	"log/slog"
	"time"
)

// Paused spares sized to the class (issue 31). A class opening its
// terminals together cannot be served by restores on demand: under TCG on
// 2 cores the 19th restore waits for the 18 before it (~19/2 × a restore).
// What serves them is guests restored before they press: paused spares
// (restored, shell at its prompt, then QMP stop: memory, no CPU), as many
// as the expected class still needs, while free memory allows.
//
// One refiller starts spares one after another, and only while no
// learner's own guest is starting: a spare never takes a start slot from
// a learner waiting for their shell, and one restore at a time leaves the
// other cores to the live shells.

// SpareStats is the state of the paused spares (for /lab and tests).
type SpareStats struct {
	Ready    int // spares restored and paused, waiting for a learner
	Starting int // spares being restored
	Target   int // spares wanted now: the expected class less the learners in, within memory and places
	Class    int // the class spares are kept for (Spares)
	// Room is how many more learner guests free memory holds now (below
	// 0: fewer than run); Bounded is false when memory does not bound them.
	Room    int
	Bounded bool
	// FromSpare and Started count attaches that got a spare and learner
	// guests started on demand since the start.
	FromSpare, Started int
}

// Warm starts keeping the spares now rather than at the first attach
// (serve calls it at start: the class's guests are restored before the
// class comes).
func (t *Terminals) Warm() {
	t.init()
	t.warmOnce.Do(func() { go t.refiller() })
	t.kickRefill()
}

// kickRefill wakes the refiller (the spares or the learners in changed).
func (t *Terminals) kickRefill() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// class is the number of learners spares are kept for. t.mu held.
func (t *Terminals) class() int { return max(t.Spares, 0) }

// unbounded is room() without a memory bound.
const unbounded = 1 << 30

// room is how many more learner guests free memory holds; below 0 it
// holds fewer than run now.
func (t *Terminals) room() int {
	if t.Room == nil {
		return unbounded
	}
	return t.Room()
}

// spareTarget is how many spares to keep: the class less the learners
// already in, at least one, no more than the places left (at least one,
// for the next learner after a reclaim). t.mu held.
func (t *Terminals) spareTarget() int {
	if t.Spares < 0 {
		return 0
	}
	in := t.inUse()
	return max(1, min(t.class()-in, t.Max-in))
}

// SpareStats reports the paused spares' state.
func (t *Terminals) SpareStats() SpareStats {
	t.init()
	room := t.room()
	t.mu.Lock()
	defer t.mu.Unlock()
	st := SpareStats{Target: t.spareTarget(), Class: t.class(), Room: room, Bounded: t.Room != nil,
		FromSpare: t.fromSpare, Started: t.startedOwn}
	for _, s := range t.spares {
		if s.backend.Paused() {
			st.Ready++
		} else {
			st.Starting++
		}
	}
	return st
}

// refiller keeps the spares at their target, one restore at a time, and
// gives spares back when free memory runs short.
func (t *Terminals) refiller() {
	log := t.Cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	grew := false // spares started since the last "ready" line
	for {
		room := t.room()
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return
		}
		target := t.spareTarget()
		var s, drop *termSession
		switch {
		case room < 0 && len(t.spares) > 0:
			// Memory is short (something else grew): the newest spare goes.
			drop, t.spares = t.spares[len(t.spares)-1], t.spares[:len(t.spares)-1]
		case len(t.spares) < target && t.ownStarting == 0 && room > 0:
			s = t.startGuest("")
			t.spares = append(t.spares, s)
		}
		n, class := len(t.spares), t.class()
		t.mu.Unlock()
		if grew && s == nil && drop == nil {
			args := []any{"spares", n, "target", target, "class", class}
			if room != unbounded {
				args = append(args, "room_guests", room)
			}
			if m := t.GuestMemory(); m.Guests > 0 {
				args = append(args, "guests", m.Guests, "guests_pss_mib", m.PSS>>20,
					"pss_per_guest_mib", m.PSS/int64(m.Guests)>>20, "shared_mib", m.Shared()>>20)
			}
			log.Info("paused spare learner guests ready", args...)
			grew = false
		}
		switch {
		case drop != nil:
			log.Warn("a paused spare learner guest stopped: free memory is short", "spares", n)
			drop.discard()
			continue
		case s != nil:
			grew = true
			if err := s.prepare(t.spareUp); err != nil {
				if !s.discarded.Load() { // not the lab's own stop
					log.Warn("a spare learner guest did not start", "err", err)
				}
				t.mu.Lock()
				i := indexOf(t.spares, s)
				if i >= 0 {
					t.spares = append(t.spares[:i], t.spares[i+1:]...)
				}
				t.mu.Unlock()
				if i >= 0 {
					s.discard()
				} // else a learner took it meanwhile: it is their session now, and its health ping restarts a hung guest
				if !t.sleep(t.SpareRetry) {
					return
				}
			}
			continue
		}
		select {
		case <-t.stop:
			return
		case <-t.kick:
		case <-time.After(t.SpareRetry): // free memory changes on its own
		}
	}
}

// sleep waits d, false when the terminals close meanwhile.
func (t *Terminals) sleep(d time.Duration) bool {
	select {
	case <-t.stop:
		return false
	case <-time.After(d):
		return true
	}
}

func indexOf(ss []*termSession, s *termSession) int {
	for i, o := range ss {
		if o == s {
			return i
		}
	}
	return -1
}
