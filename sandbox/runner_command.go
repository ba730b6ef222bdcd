package sandbox

import (
	"context"
	"fmt"
	"time"
)

// commandQueue is how many accepted commands may wait for the experiment.
const commandQueue = 4

// startCommands gives an interactive run its command stream (the
// session's Commands) and starts its idle watch. Called with r.mu held,
// from start.
func (r *Runner) startCommands(ctx context.Context, ru *run) {
	ru.cmds = make(chan Command, commandQueue)
	ru.lastCmd = time.Now()
	go r.watchIdle(ctx, ru)
}

// Command delivers a learner's command to their interactive run. The run
// must be the learner's, running, and the command one of the experiment's;
// it is stored as an EvCommand event before it is delivered, so a replay
// shows it ahead of the run's answer. Errors: ErrUnknownRun, a
// *CommandError, ErrNotInteractive, ErrNotStarted, ErrCommandBusy.
func (r *Runner) Command(runID, learner string, c Command) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ru := r.runs[runID]
	if ru == nil || ru.info.Learner != learner {
		return ErrUnknownRun
	}
	if err := ru.exp.ValidateCommand(c); err != nil {
		return err
	}
	if ru.info.Status != StatusRunning || ru.cmds == nil {
		return ErrNotStarted
	}
	if ru.cmdsClosed || ru.stop != "" {
		return ErrUnknownRun
	}
	if len(ru.cmds) == cap(ru.cmds) {
		return ErrCommandBusy
	}
	ru.lastCmd = time.Now()
	r.emit(ru, Event{Type: EvCommand, Name: c.Cmd})
	ru.cmds <- c // never blocks: only we send, under r.mu, with room left
	return nil
}

// watchIdle ends an interactive run nobody drives: after IdleLimit without
// a command it closes the command stream (the experiment cleans up and
// returns; the run ends timed-out) and kills the run IdleGrace later if it
// has not ended by then.
func (r *Runner) watchIdle(ctx context.Context, ru *run) {
	limit := ru.exp.IdleLimit()
	t := time.NewTimer(limit)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		if idle := time.Since(ru.lastCmd); idle < limit {
			t.Reset(limit - idle)
			r.mu.Unlock()
			continue
		}
		if ru.stop == "" {
			ru.stop = StatusTimedOut
			ru.stopMsg = fmt.Sprintf("no command for %s: the run cleaned up and ended", limit)
		}
		if !ru.cmdsClosed {
			ru.cmdsClosed = true
			close(ru.cmds)
		}
		r.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(IdleGrace):
			ru.cancel()
		}
		return
	}
}
