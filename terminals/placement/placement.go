// Package placement decides where a learner's terminal lives: on this
// machine while it has room, else on the worker with the most room, and
// later attaches and task checks where the learner's machine already is.
// It speaks only the domain's terminal types; the workers are anything
// that offers their terminals by name (runs/fleet's Server does, over
// NATS), so placement knows nothing of the wire.
package placement

import (
	"context"
	"errors"
	"sync"

	"github.com/rdmalab/rdmalab"
)

// Workers are other machines' learner terminals, by worker name, as the
// fleet offers them (fleet.Server).
type Workers interface {
	// TermWorkers are the live workers that host terminals, with their load.
	TermWorkers() map[string]rdmalab.TermLoad
	// TermUsable reports whether worker is alive and may hold a terminal.
	TermUsable(worker string) bool
	// TermAttach opens learner's shell on worker.
	TermAttach(ctx context.Context, worker, learner string, rows, cols uint16) (rdmalab.TermConn, error)
	// TermVerify runs a task's check on learner's machine on worker.
	TermVerify(ctx context.Context, worker, learner string, script []byte, lang string) (rdmalab.TaskVerdict, error)
	// TermReset ends learner's machine on worker and what was kept of it.
	TermReset(ctx context.Context, worker, learner string) error
}

// Placement puts each learner's new terminal on a machine with room: this
// one while it has a free guest, else the worker with the most room, else
// this one's queue. A learner's next attach (a reload, a second tab) and
// task checks go where their machine is. A worker that dies ends its
// terminals (their TermConn says Lost) and the learner's next attach is placed
// anew. Placement is itself a rdmalab.TermHost over learner ids.
type Placement struct {
	Local rdmalab.TermHost // this machine's terminals; nil: none here
	Fleet Workers          // the workers; nil: none

	mu    sync.Mutex
	where map[string]string // learner → the worker that holds their machine
}

// workerOf is the live worker that holds learner's machine, "" if none.
func (p *Placement) workerOf(learner string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.where[learner]
	if w != "" && (p.Fleet == nil || !p.Fleet.TermUsable(w)) {
		delete(p.where, learner)
		return ""
	}
	return w
}

func (p *Placement) place(learner, worker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.where == nil {
		p.where = map[string]string{}
	}
	if worker == "" {
		delete(p.where, learner)
	} else {
		p.where[learner] = worker
	}
}

// roomiest is the worker with the most free terminals, "" if none has one.
func (p *Placement) roomiest() string {
	if p.Fleet == nil {
		return ""
	}
	best, free := "", 0
	for name, l := range p.Fleet.TermWorkers() {
		if f := l.Max - l.InUse; f > free || f == free && f > 0 && name < best {
			best, free = name, f
		}
	}
	return best
}

// localRoom reports whether this machine takes learner now without a wait.
func (p *Placement) localRoom(learner string) bool {
	if p.Local == nil {
		return false
	}
	if p.Local.Holds(learner) {
		return true
	}
	n, max := p.Local.InUse()
	return n < max && p.Local.Waiting() == 0
}

// Attach returns learner's shell where their machine is, or on a new one
// placed as the type says.
func (p *Placement) Attach(ctx context.Context, learner string, rows, cols uint16, wait func(rdmalab.TermQueue)) (rdmalab.TermConn, error) {
	if w := p.workerOf(learner); w != "" {
		t, err := p.Fleet.TermAttach(ctx, w, learner, rows, cols)
		if err == nil || ctx.Err() != nil {
			return t, err
		}
		// Their worker failed them: a new machine elsewhere.
		p.place(learner, "")
	}
	if !p.localRoom(learner) {
		if w := p.roomiest(); w != "" {
			t, err := p.Fleet.TermAttach(ctx, w, learner, rows, cols)
			if err == nil {
				p.place(learner, w)
				return t, nil
			}
			if ctx.Err() != nil || p.Local == nil {
				return nil, err
			}
		}
	}
	if p.Local == nil {
		return nil, &rdmalab.TermsFullError{}
	}
	return p.Local.Attach(ctx, learner, rows, cols, wait)
}

// InUse is the terminals in use and the most there may be, here and on
// the live workers.
func (p *Placement) InUse() (n, max int) {
	if p.Local != nil {
		n, max = p.Local.InUse()
	}
	if p.Fleet != nil {
		for _, l := range p.Fleet.TermWorkers() {
			n += l.InUse
			max += l.Max
		}
	}
	return n, max
}

// Waiting is the learners in this machine's queue (workers queue nobody).
func (p *Placement) Waiting() int {
	if p.Local == nil {
		return 0
	}
	return p.Local.Waiting()
}

// Holds reports whether learner has a machine here or on a worker, or
// waits for one.
func (p *Placement) Holds(learner string) bool {
	return p.workerOf(learner) != "" || p.Local != nil && p.Local.Holds(learner)
}

// Reset ends learner's machine wherever it is and what was kept of it.
func (p *Placement) Reset(ctx context.Context, learner string) error {
	var errs []error
	if w := p.workerOf(learner); w != "" {
		errs = append(errs, p.Fleet.TermReset(ctx, w, learner))
		p.place(learner, "")
	}
	if p.Local != nil {
		errs = append(errs, p.Local.Reset(ctx, learner))
	}
	return errors.Join(errs...)
}

// Verify runs a task's check where learner's machine is.
func (p *Placement) Verify(ctx context.Context, learner string, script []byte, lang string) (rdmalab.TaskVerdict, error) {
	if w := p.workerOf(learner); w != "" {
		return p.Fleet.TermVerify(ctx, w, learner, script, lang)
	}
	if p.Local == nil {
		return rdmalab.TaskVerdict{}, rdmalab.ErrNoTerminal
	}
	return p.Local.Verify(ctx, learner, script, lang)
}

// Worker is the worker that holds learner's machine ("" here or none).
func (p *Placement) Worker(learner string) string { return p.workerOf(learner) }
