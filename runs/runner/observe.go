package runner

import (
	"sort"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// Observer is told each run's life, for the lab's metrics
// (internal/metrics implements it; the runner does not import it). Its
// methods are called with the runner's lock held: they must be quick and
// must not call back into the runner. A run shared with classmates
// (share.go) is told once, as the run that executes.
type Observer interface {
	// RunQueued: a run was accepted into the queue.
	RunQueued(experiment string)
	// RunStarted: a run left the queue after waiting waited.
	RunStarted(experiment string, waited time.Duration)
	// RunFinished: a run ended with outcome (done, failed, cancelled,
	// timed-out, interrupted) after running ran; 0 for one that ended
	// while it waited.
	RunFinished(experiment, outcome string, ran time.Duration)
}

// ExperimentLoad is how many runs of one experiment wait and run now.
type ExperimentLoad struct {
	Experiment      string
	Queued, Running int
}

// Load is the runs queued and running now, per experiment (joined
// watchers of a shared run not counted: they run nothing), sorted by
// experiment.
func (r *Runner) Load() []ExperimentLoad {
	r.mu.Lock()
	by := map[string]*ExperimentLoad{}
	for _, ru := range r.runs {
		if ru.host != nil {
			continue
		}
		l := by[ru.exp.ID]
		if l == nil {
			l = &ExperimentLoad{Experiment: ru.exp.ID}
			by[ru.exp.ID] = l
		}
		if ru.info.Status == sandbox.StatusRunning {
			l.Running++
		} else {
			l.Queued++
		}
	}
	r.mu.Unlock()
	out := make([]ExperimentLoad, 0, len(by))
	for _, l := range by {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Experiment < out[j].Experiment })
	return out
}

// observeQueued, observeStarted and observeFinished tell the observer, if
// any. r.mu held.
func (r *Runner) observeQueued(ru *run) {
	if r.cfg.Observer != nil {
		r.cfg.Observer.RunQueued(ru.exp.ID)
	}
}

func (r *Runner) observeStarted(ru *run) {
	if r.cfg.Observer != nil {
		r.cfg.Observer.RunStarted(ru.exp.ID, ru.info.Started.Sub(ru.info.Created))
	}
}

func (r *Runner) observeFinished(ru *run, status sandbox.Status) {
	if r.cfg.Observer == nil {
		return
	}
	var ran time.Duration
	if !ru.info.Started.IsZero() {
		ran = time.Since(ru.info.Started)
	}
	r.cfg.Observer.RunFinished(ru.exp.ID, string(status), ran)
}

// Observe makes o the runner's observer (nil: none); the wiring calls it
// before the lab serves.
func (r *Runner) Observe(o Observer) {
	r.mu.Lock()
	r.cfg.Observer = o
	r.mu.Unlock()
}
