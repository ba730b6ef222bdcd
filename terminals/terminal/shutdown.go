package terminal

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Shutdown stops every learner guest as Close does, but first keeps each
// learner's machine (when Keep is set), as a reclaim would: labserver
// stopping (SIGTERM, SIGINT) must not lose what learners built. Saves run
// StartsAtOnce at a time until ctx ends; a machine whose save has not
// finished by then is lost, and the log names its learner. Saves the
// reaper began before are waited for within the same ctx.
func (t *Terminals) Shutdown(ctx context.Context) error {
	t.init()
	if t.Keep == nil {
		return t.Close()
	}
	log := t.Cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	var keep []*termSession
	for _, s := range t.sessions {
		keep = append(keep, s)
		t.saving[s.owner] = make(chan struct{})
	}
	var earlier []chan struct{} // saves the reaper began
	for learner, ch := range t.saving {
		if !slices.ContainsFunc(keep, func(s *termSession) bool { return s.owner == learner }) {
			earlier = append(earlier, ch)
		}
	}
	spares := t.spares
	t.sessions, t.spares = map[string]*termSession{}, nil
	t.notify()
	t.mu.Unlock()
	close(t.stop) // waiters and new attaches are told the lab is shutting down

	var wg sync.WaitGroup
	for _, s := range spares {
		wg.Go(s.discard)
	}
	begin := time.Now()
	deadline, _ := ctx.Deadline()
	if len(keep) > 0 {
		log.Info("saving learners' machines before stopping", "machines", len(keep), "at_once", t.StartsAtOnce,
			"within", time.Until(deadline).Round(time.Second))
	}
	var mu sync.Mutex
	saved, lost := 0, []string{}
	work := make(chan *termSession)
	for range t.StartsAtOnce {
		wg.Go(func() {
			for s := range work {
				var res KeptSave
				if ctx.Err() == nil {
					res = t.keepSession(ctx, s)
				} else {
					t.dropSession(s)
				}
				mu.Lock()
				if res.Bytes > 0 {
					saved++
				} else {
					lost = append(lost, s.owner)
				}
				mu.Unlock()
			}
		})
	}
	for _, s := range keep {
		work <- s
	}
	close(work)
	wg.Wait()
	for _, ch := range earlier {
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
	if len(keep) > 0 {
		took := time.Since(begin).Round(time.Millisecond)
		if len(lost) > 0 {
			// Each learner named, so an admin can tell them.
			for _, learner := range lost {
				log.Warn("a learner's machine was not saved before the stop (not in time, or the save failed): it is lost",
					"learner", learner)
			}
		}
		log.Info("learners' machines saved before stopping", "saved", saved, "not_saved", len(lost), "took", took)
	}
	return nil
}

// dropSession stops s without keeping it and ends its learner's wait.
func (t *Terminals) dropSession(s *termSession) {
	s.discard()
	t.mu.Lock()
	if ch := t.saving[s.owner]; ch != nil {
		close(ch)
		delete(t.saving, s.owner)
	}
	t.mu.Unlock()
}
