package runner

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// Shared runs: a class presses Run on the same experiment within seconds.
// Run one after another, the last learner waits for all the others' runs
// (30 × 4 s under TCG); run side by side, they share the same two cores.
// So a request with the same experiment and parameters as a run that is
// queued, or that started less than Config.Share ago, joins it: it
// gets a run of its own (an id, a record, a replay page, a line in the
// learner's history and the gradebook), whose events are a copy of the
// shared run's from its first one, with a line first saying so. The shared
// run executes once, measured alone if it is a timing run.
//
// The learner's next request of that experiment after a joined one runs
// their own (ownNext): "Run again for your own". Interactive runs are never
// shared (each learner drives their own). A learner who cancels a joined
// run leaves it; the one who started a shared run that others watch leaves
// it too, and it goes on for them.

// share is a joinable run's state, guarded by its own mutex: events are
// copied to the runs that joined from the goroutine that emits them, which
// may not hold the runner's lock (the experiment's events).
type share struct {
	mu     sync.Mutex
	closes time.Time       // when joining ends (zero: queued, open)
	log    []sandbox.Event // the events so far, while others may join
	joined []*run          // runs receiving a copy of every event
	left   bool            // the starting learner left: their own record has ended
}

// startedAt closes joining at t (the run has started).
func (sh *share) startedAt(t time.Time) {
	if sh == nil {
		return
	}
	sh.mu.Lock()
	sh.closes = t
	sh.mu.Unlock()
}

// openLocked reports whether a run may still join.
func (sh *share) openLocked(now time.Time) bool {
	return sh.closes.IsZero() || now.Before(sh.closes)
}

// out hands ev to ru's own writer (unless its learner left it) and a copy
// to every run that joined it. paced: an experiment's event, which waits
// while the run's writer is far behind.
func (r *Runner) out(ru *run, ev sandbox.Event, paced bool) {
	sh := ru.share
	var joined []*run
	left := false
	if sh != nil {
		sh.mu.Lock()
		if sh.openLocked(time.Now()) {
			sh.log = append(sh.log, ev)
		} else {
			sh.log = nil // nobody joins any more
		}
		joined, left = slices.Clone(sh.joined), sh.left
		sh.mu.Unlock()
	}
	switch {
	case left:
	case paced:
		ru.w.addPaced(ev)
	default:
		ru.w.add(ev)
	}
	for _, j := range joined {
		j.w.add(ev)
	}
}

// ownKey names a learner's runs of one experiment in ownNext.
func ownKey(learner, experiment string) string { return learner + "\x00" + experiment }

// hostForLocked is the run learner's request of exp with params joins, or
// nil when it runs its own. It consumes the learner's ownNext.
func (r *Runner) hostForLocked(learner string, exp *sandbox.Experiment, params sandbox.Params) *run {
	if r.cfg.Share <= 0 || exp.Interactive() || r.closed {
		return nil
	}
	if k := ownKey(learner, exp.ID); r.ownNext[k] {
		delete(r.ownNext, k)
		return nil
	}
	now := time.Now()
	var best *run
	for _, h := range r.runs {
		if h.share == nil || h.exp != exp || h.stop != "" || !reflect.DeepEqual(h.info.Params, params) {
			continue
		}
		h.share.mu.Lock()
		open := h.share.openLocked(now)
		h.share.mu.Unlock()
		if open && (best == nil || h.info.Created.Before(best.info.Created)) {
			best = h
		}
	}
	return best
}

// join gives learner a run of their own that receives a copy of host's
// events, from its first. It is called with r.mu held and unlocks it.
func (r *Runner) join(host *run, learner string, exp *sandbox.Experiment, params sandbox.Params) (sandbox.RunInfo, error) {
	ru := &run{exp: exp, host: host, info: sandbox.RunInfo{
		ID: r.cfg.NewID(), Learner: learner, Experiment: exp.ID, Params: params,
		Status: host.info.Status, Position: host.info.Position, Backend: host.info.Backend, Created: time.Now(),
	}}
	ru.w = newRunWriter(r.cfg.Sink, ru.info.ID, &r.writers)
	r.runs[ru.info.ID] = ru
	r.learners[learner] = ru
	sh := host.share
	sh.mu.Lock()
	n := len(sh.joined) + 1 // the classmates on it: who started it and who joined before
	if sh.left {
		n--
	}
	ru.w.add(sharedNote(n))
	for _, ev := range sh.log {
		ru.w.add(ev)
	}
	sh.joined = append(sh.joined, ru)
	sh.mu.Unlock()
	info := ru.info
	r.wg.Add(1) // Close waits for the record to be written
	r.mu.Unlock()
	defer r.wg.Done()

	if err := r.record(ru, info, func() { r.detachLocked(ru); r.removeLocked(ru) }); err != nil {
		return sandbox.RunInfo{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ru.recorded = true
	r.log.Info("run joined a shared run", "run", info.ID, "shared", host.info.ID, "experiment", exp.ID, "watchers", n+1)
	return r.infoLocked(ru), nil
}

// sharedNote is the line a joined run starts with.
func sharedNote(n int) sandbox.Event {
	en := fmt.Sprintf("You are watching a run shared with %d classmates — same parameters. Press Run again for your own.", n)
	if n == 1 {
		en = "You are watching a run shared with 1 classmate — same parameters. Press Run again for your own."
	}
	zh := fmt.Sprintf("你正在观看与 %d 位同学共享的一次运行——参数相同。再按一次「运行」，就是你自己的运行。", n)
	return sandbox.Event{Type: sandbox.EvLog, Level: "info", Name: "shared", Message: en, Messages: sandbox.Text{"en": en, "zh": zh}}
}

// detachLocked stops copying host events to a joined run.
func (r *Runner) detachLocked(ru *run) {
	sh := ru.host.share
	sh.mu.Lock()
	sh.joined = slices.DeleteFunc(sh.joined, func(j *run) bool { return j == ru })
	sh.mu.Unlock()
}

// leaveLocked ends one learner's part in a shared run with status why and
// reports true, or reports false when ru is not shared (then it must be
// stopped). A joined run leaves its host; a run others joined goes on for
// them, and only its starter's record ends.
func (r *Runner) leaveLocked(ru *run, why sandbox.Status) bool {
	var final sandbox.Event
	switch {
	case ru.host != nil:
		r.detachLocked(ru)
		ru.info.Status = why
		final = sandbox.Event{Type: sandbox.EvStatus, Status: why, Message: msgCancelled.Get("en"), Messages: msgCancelled}
		if why == sandbox.StatusInterrupted {
			final.Message, final.Messages = msgStoppedDuring.Get("en"), msgStoppedDuring
		}
		ru.w.add(final)
		r.removeLocked(ru)
	case ru.share != nil:
		sh := ru.share
		sh.mu.Lock()
		others := len(sh.joined) > 0 && !sh.left
		if others {
			sh.left = true
		}
		sh.mu.Unlock()
		if !others {
			return false
		}
		ru.w.add(sandbox.Event{Type: sandbox.EvStatus, Status: why, Message: msgCancelled.Get("en"), Messages: msgCancelled})
		// Its record ends; the run stays queued or running for the others.
		delete(r.runs, ru.info.ID)
		if r.learners[ru.info.Learner] == ru {
			delete(r.learners, ru.info.Learner)
		}
	default:
		return false
	}
	r.ownNextLocked(ru)
	return true
}

// endJoinedLocked ends the runs that joined host, which has just ended
// with status (its final event was copied to them).
func (r *Runner) endJoinedLocked(host *run, status sandbox.Status) {
	if host.share == nil {
		return
	}
	host.share.mu.Lock()
	joined := host.share.joined
	host.share.joined, host.share.log = nil, nil
	host.share.mu.Unlock()
	for _, j := range joined {
		j.info.Status = status
		r.removeLocked(j)
		r.ownNextLocked(j)
	}
}

// ownNextLocked makes the learner's next request of ru's experiment run
// their own.
func (r *Runner) ownNextLocked(ru *run) {
	if len(r.ownNext) >= 50_000 {
		clear(r.ownNext) // only a courtesy: a brief lapse shares one more run
	}
	r.ownNext[ownKey(ru.info.Learner, ru.exp.ID)] = true
}

// infoLocked is ru's info; a joined run's status, position and backend
// are its host's.
func (r *Runner) infoLocked(ru *run) sandbox.RunInfo {
	info := ru.info
	if h := ru.host; h != nil && r.runs[ru.info.ID] == ru {
		info.Status, info.Position, info.Backend, info.Started = h.info.Status, h.info.Position, h.info.Backend, h.info.Started
	}
	return info
}
