package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// Errors of Runner.Command besides ErrUnknownRun and the experiment's own
// (sandbox.ErrNotInteractive, a *sandbox.CommandError).
var (
	ErrNotStarted  = errors.New("the run has not started yet: wait for it to leave the queue")
	ErrCommandBusy = errors.New("the run is still busy with your previous commands: wait for its answer")
)

// commandQueue is how many accepted commands may wait for the experiment.
const commandQueue = 4

// startCommands gives an interactive run its command stream (the
// session's Commands) and starts its idle watch. Called with r.mu held,
// from start.
func (r *Runner) startCommands(ctx context.Context, ru *run) {
	ru.cmds = make(chan sandbox.Command, commandQueue)
	ru.lastCmd = time.Now()
	go r.watchIdle(ctx, ru)
}

// Command delivers a learner's command to their interactive run. The run
// must be the learner's, running, and the command one of the experiment's;
// it is stored as an EvCommand event before it is delivered, so a replay
// shows it ahead of the run's answer. Errors: ErrUnknownRun, a
// *sandbox.CommandError, sandbox.ErrNotInteractive, ErrNotStarted, ErrCommandBusy.
func (r *Runner) Command(runID, learner string, c sandbox.Command) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ru := r.runs[runID]
	if ru == nil || ru.info.Learner != learner {
		return ErrUnknownRun
	}
	if err := ru.exp.ValidateCommand(c); err != nil {
		return err
	}
	if ru.info.Status != sandbox.StatusRunning || ru.cmds == nil {
		return ErrNotStarted
	}
	if ru.cmdsClosed || ru.stop != "" {
		return ErrUnknownRun
	}
	if len(ru.cmds) == cap(ru.cmds) {
		return ErrCommandBusy
	}
	ru.lastCmd = time.Now()
	r.emit(ru, sandbox.Event{Type: sandbox.EvCommand, Name: c.Cmd})
	ru.cmds <- c // never blocks: only we send, under r.mu, with room left
	return nil
}

// An interactive run holds its place (a guest, the machine) for as long as
// its learner drives it, and its learner may simply stop (issue 28: an idle
// verbs-steps held the only experiment guest for up to 3 min per command,
// 20 min per run, while the page told the others "about 15 s"). While a
// waiting run needs its place, it may go ContendedIdle without a command
// and ContendedRun in all; the wait estimate counts it at ContendedRun.
const (
	DefaultContendedIdle = 45 * time.Second
	DefaultContendedRun  = 5 * time.Minute
	// contendedPoll is how often an interactive run's watch looks whether
	// others wait now.
	contendedPoll = time.Second
)

// contendedLocked reports whether a waiting run would start if ru ended:
// ru holds a place someone wants (the scheduling rules of schedule.go,
// played with and without it). r.mu held.
func (r *Runner) contendedLocked(ru *run) bool {
	var with, without []schedItem
	for _, a := range r.active {
		it := r.itemLocked(a, a.be)
		with = append(with, it)
		if a != ru {
			without = append(without, it)
		}
	}
	var queue []schedItem
	for _, q := range r.queue {
		if !q.recorded {
			break
		}
		queue = append(queue, r.itemLocked(q, r.backendFor(q.exp.Needs)))
	}
	if len(queue) == 0 {
		return false
	}
	return len(admit(without, queue, r.cfg.Concurrency)) > len(admit(with, queue, r.cfg.Concurrency))
}

// watchIdle ends an interactive run nobody drives: after IdleLimit without
// a command (ContendedIdle, or ContendedRun since its start, while others
// wait for its place) it closes the command stream (the experiment cleans
// up and returns; the run ends timed-out) and kills the run IdleGrace
// later if it has not ended by then.
func (r *Runner) watchIdle(ctx context.Context, ru *run) {
	t := time.NewTimer(min(ru.exp.IdleLimit(), contendedPoll))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		limit, msg := ru.exp.IdleLimit(), sandbox.Text(nil)
		idle := time.Since(ru.lastCmd)
		if r.contendedLocked(ru) {
			limit = min(limit, r.cfg.ContendedIdle)
			if idle >= limit {
				msg = sandbox.Text{"en": fmt.Sprintf("no command for %s while others waited for this machine: the run cleaned up and ended", limit),
					"zh": fmt.Sprintf("%s 内没有命令，而别人在等这台机器：运行已清理并结束", limit)}
			} else if time.Since(ru.info.Started) >= r.cfg.ContendedRun {
				msg = sandbox.Text{"en": fmt.Sprintf("others waited for this machine and the run had it for %s: the run cleaned up and ended", r.cfg.ContendedRun),
					"zh": fmt.Sprintf("别人在等这台机器，而这次运行已占用它 %s：运行已清理并结束", r.cfg.ContendedRun)}
			}
		} else if idle >= limit {
			msg = sandbox.Text{"en": fmt.Sprintf("no command for %s: the run cleaned up and ended", limit),
				"zh": fmt.Sprintf("%s 内没有命令：运行已清理并结束", limit)}
		}
		if msg == nil {
			t.Reset(min(limit-idle, contendedPoll)) // others may come to wait
			r.mu.Unlock()
			continue
		}
		if ru.stop == "" {
			ru.stop = sandbox.StatusTimedOut
			ru.stopMsg = msg
		}
		if !ru.cmdsClosed {
			ru.cmdsClosed = true
			close(ru.cmds)
		}
		r.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(sandbox.IdleGrace):
			ru.cancel()
		}
		return
	}
}
