// Package runner is the lab server's queue of experiment runs: it
// validates a learner's request, orders it with everyone else's (one active
// run per learner, the scheduling rules of schedule.go, a bound on waiting
// runs), shares a run among classmates who asked for the same one
// (share.go), delivers an interactive run's commands (command.go), hands
// each run to the backend of its experiment's need as a sandbox.Session, and
// numbers every event for the Sink (writer.go). It lives apart from package
// sandbox so that the agent, which only performs one run, links no queue.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// Errors of Submit and Cancel. The web layer maps them to status codes;
// their text is what the learner reads.
var (
	ErrBusy          = errors.New("the lab is busy, try again in a minute")
	ErrLearnerActive = errors.New("you already have a run queued or running: wait for it to finish, or cancel it")
	ErrUnknownRun    = errors.New("no such active run")
	ErrClosed        = errors.New("the lab is shutting down")
)

// Config configures a Runner. Zero values take the defaults.
type Config struct {
	Registry *sandbox.Registry
	// Backend picks where an experiment of a given need runs. It may return
	// nil or a backend with the Unavailable capability (NoBackend): the run
	// then fails at once with its reason.
	Backend func(sandbox.Need) sandbox.Backend
	// Slots is how many runs a backend takes at once; default: Slots()
	// of a Slotted backend, else 1.
	Slots       func(sandbox.Backend) int
	Concurrency int  // runs executing at once, whatever their backends; default 1
	QueueMax    int  // runs waiting beyond those; default 20, then ErrBusy
	Sink        Sink // receives every event, numbered, in order per run
	Logger      *slog.Logger
	// NewID makes run ids; default 16 random hex characters.
	NewID func() string
	// ContendedIdle and ContendedRun bound an interactive run while a
	// waiting run needs its place (command.go): no command for
	// ContendedIdle, or ContendedRun since it started, and it ends.
	// Defaults DefaultContendedIdle, DefaultContendedRun.
	ContendedIdle time.Duration
	ContendedRun  time.Duration
	// Share lets a run request join, as a watcher, a run of the same
	// experiment with the same parameters that is queued or started less
	// than Share ago (share.go). Zero: every request runs its own.
	Share time.Duration
	// Expect seeds how long runs of each experiment take (by id), from
	// runs before this process started (store.RunDurations): the first
	// learners queued after a restart are told a wait, by the same
	// estimate that tells every later one.
	Expect map[string]time.Duration
	// Observer is told every run's queueing, start and end (observe.go:
	// the lab's metrics); nil: nothing is told.
	Observer Observer
}

// Sink receives everything the runner decides and everything a run emits, in
// order per run. The web layer implements it: it stores, then fans out.
type Sink interface {
	RunEvent(runID string, ev sandbox.Event)
}

// BatchSink is an optional interface of a Sink: the runner hands it every
// event of a run that is waiting at once, in order, in one call, so a
// burst of events is stored in one write and reaches the watchers
// together (RunEvent each would queue each event behind the previous
// one's commit).
type BatchSink interface {
	RunEvents(runID string, evs []sandbox.Event)
}

// RunRecorder is an optional interface of a Sink: the runner calls
// RunCreated in Submit, before the run's first event, so the sink can store
// the run row its events belong to. An error refuses the submission.
type RunRecorder interface {
	RunCreated(sandbox.RunInfo) error
}

// Runner owns the queue: FIFO order, one active run per learner, a global
// concurrency limit, a bound on waiting runs, and a time limit per run.
// A run continues whether or not anyone watches it.
type Runner struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	queue    []*run          // waiting, in order
	runs     map[string]*run // queued or running, by id
	learners map[string]*run // active run per learner
	running  int
	active   []*run                   // running, in start order
	expect   map[string]time.Duration // per experiment: how long its runs take (moving average)
	ownNext  map[string]bool          // learner+experiment whose last run was shared: the next is their own
	closed   bool
	wg       sync.WaitGroup // run goroutines and Submits writing a record
	writers  sync.WaitGroup // run writers delivering to the Sink
}

// run is one active run. Its writer numbers its events and hands them to
// the Sink in that order, outside the runner's lock.
type run struct {
	info     sandbox.RunInfo
	exp      *sandbox.Experiment
	w        *runWriter
	recorded bool // the Sink has its record: it may start

	cancel context.CancelFunc // set when it starts
	stop   sandbox.Status     // why it was stopped: cancelled, interrupted or timed-out (idle)
	be     sandbox.Backend    // where it runs, set when it starts
	wait   time.Duration      // the wait last told to the learner (queued)
	// interactive runs (command.go), guarded by Runner.mu
	cmds       chan sandbox.Command
	cmdsClosed bool
	lastCmd    time.Time
	stopMsg    sandbox.Text
	// shared runs (share.go)
	host  *run   // a joined run: the run whose events it receives
	share *share // a run others may join (Runner.cfg.Share > 0)
}

// New returns a runner; call Close to stop it.
func New(cfg Config) *Runner {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.ContendedIdle <= 0 {
		cfg.ContendedIdle = DefaultContendedIdle
	}
	if cfg.ContendedRun <= 0 {
		cfg.ContendedRun = DefaultContendedRun
	}
	if cfg.QueueMax <= 0 {
		cfg.QueueMax = 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NewID == nil {
		cfg.NewID = randomID
	}
	if cfg.Registry == nil {
		cfg.Registry = sandbox.NewRegistry()
	}
	expect := map[string]time.Duration{}
	for id, d := range cfg.Expect {
		if d > 0 {
			expect[id] = d
		}
	}
	return &Runner{cfg: cfg, log: cfg.Logger, runs: map[string]*run{}, learners: map[string]*run{},
		expect: expect, ownNext: map[string]bool{}}
}

func randomID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

// Submit validates and queues a run. It returns sandbox.ErrUnknownExperiment, a
// *ParamError, ErrLearnerActive, ErrBusy or ErrClosed without queueing.
func (r *Runner) Submit(learner, experiment string, raw map[string]any) (sandbox.RunInfo, error) {
	exp := r.cfg.Registry.Get(experiment)
	if exp == nil {
		return sandbox.RunInfo{}, fmt.Errorf("%w %q", sandbox.ErrUnknownExperiment, experiment)
	}
	params, err := exp.Validate(raw)
	if err != nil {
		return sandbox.RunInfo{}, err
	}

	// Order is assigned under the lock; the run's record is written
	// outside it, so a slow database never stalls other learners.
	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		return sandbox.RunInfo{}, ErrClosed
	case r.learners[learner] != nil:
		r.mu.Unlock()
		return sandbox.RunInfo{}, ErrLearnerActive
	}
	if host := r.hostForLocked(learner, exp, params); host != nil {
		return r.join(host, learner, exp, params) // unlocks r.mu
	}
	switch {
	case r.running >= r.cfg.Concurrency && len(r.queue) >= r.cfg.QueueMax:
		r.mu.Unlock()
		return sandbox.RunInfo{}, ErrBusy
	}
	ru := &run{exp: exp, info: sandbox.RunInfo{
		ID: r.cfg.NewID(), Learner: learner, Experiment: exp.ID, Params: params,
		Status: sandbox.StatusQueued, Created: time.Now(),
	}}
	ru.w = newRunWriter(r.cfg.Sink, ru.info.ID, &r.writers)
	if r.cfg.Share > 0 && !exp.Interactive() {
		ru.share = &share{}
	}
	r.queue = append(r.queue, ru)
	r.runs[ru.info.ID] = ru
	r.learners[learner] = ru
	ru.info.Position = len(r.queue)
	waits, known := r.waitsLocked()
	ev := sandbox.Event{Type: sandbox.EvStatus, Status: sandbox.StatusQueued, Position: ru.info.Position}
	if i := len(r.queue) - 1; known[i] {
		ru.wait, ev.Wait = waits[i], waits[i].Seconds()
	}
	r.emit(ru, ev)
	info := ru.info
	r.wg.Add(1) // Close waits for the record to be written
	r.mu.Unlock()
	defer r.wg.Done()

	if err := r.record(ru, info, func() { r.removeLocked(ru); r.dispatchLocked() }); err != nil {
		return sandbox.RunInfo{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ru.recorded = true
	r.observeQueued(ru)
	r.dispatchLocked()
	return ru.info, nil
}

// record has the Sink store the run's record (RunRecorder), then lets its
// events out; if the Sink refuses, it drops them and calls undoLocked
// with r.mu held. Called without r.mu.
func (r *Runner) record(ru *run, info sandbox.RunInfo, undoLocked func()) error {
	if rec, ok := r.cfg.Sink.(RunRecorder); ok {
		if err := rec.RunCreated(info); err != nil {
			ru.w.discard()
			r.mu.Lock()
			defer r.mu.Unlock()
			undoLocked()
			return fmt.Errorf("record run: %w", err)
		}
	}
	ru.w.start()
	return nil
}

// dispatchLocked starts the waiting runs the scheduling rules allow
// (schedule.go) and tells the ones still waiting their new position and
// estimated wait.
func (r *Runner) dispatchLocked() {
	if r.closed {
		return
	}
	running := make([]schedItem, len(r.active))
	for i, ru := range r.active {
		running[i] = r.itemLocked(ru, ru.be)
	}
	// A run whose record is still being written holds its place: the
	// rules see the queue up to it.
	var queue []schedItem
	for _, ru := range r.queue {
		if !ru.recorded {
			break
		}
		queue = append(queue, r.itemLocked(ru, r.backendFor(ru.exp.Needs)))
	}
	starts := admit(running, queue, r.cfg.Concurrency)
	if len(starts) > 0 {
		picked := map[int]bool{}
		for _, i := range starts {
			picked[i] = true
			ru := r.queue[i]
			r.running++
			r.active = append(r.active, ru)
			r.start(ru, r.backendFor(ru.exp.Needs))
		}
		rest := r.queue[:0:0]
		for i, ru := range r.queue {
			if !picked[i] {
				rest = append(rest, ru)
			}
		}
		r.queue = rest
	}
	r.renumberLocked()
}

func (r *Runner) backendFor(n sandbox.Need) sandbox.Backend {
	if r.cfg.Backend == nil {
		return nil
	}
	return r.cfg.Backend(n)
}

// itemLocked is ru as the scheduling rules see it.
func (r *Runner) itemLocked(ru *run, be sandbox.Backend) schedItem {
	it := schedItem{key: be, slots: 1, timing: ru.exp.Class() == sandbox.Timing, expect: r.expectLocked(ru.exp.ID)}
	if ru.exp.Interactive() {
		// How long a learner drives it is theirs to say: while others
		// wait, ContendedRun is what it may take (command.go).
		it.expect = r.cfg.ContendedRun
	}
	switch {
	case be == nil || isUnavailable(be):
		it.slots = 1 << 20 // fails at once
	case r.cfg.Slots != nil:
		it.slots = r.cfg.Slots(be)
	default:
		if sl, ok := be.(sandbox.Slotted); ok {
			it.slots = sl.Slots()
		}
	}
	if ru.info.Status == sandbox.StatusRunning {
		it.left = remaining(it.expect, time.Since(ru.info.Started))
	}
	return it
}

// expectLocked is how long a run of experiment id takes: the moving
// average of its finished runs, else the average over the experiments
// that have finished runs, else 0 (unknown).
func (r *Runner) expectLocked(id string) time.Duration {
	if d, ok := r.expect[id]; ok {
		return d
	}
	if len(r.expect) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range r.expect {
		sum += d
	}
	return sum / time.Duration(len(r.expect))
}

// waitsLocked predicts every waiting run's wait (see estimate).
func (r *Runner) waitsLocked() ([]time.Duration, []bool) {
	running := make([]schedItem, len(r.active))
	for i, ru := range r.active {
		running[i] = r.itemLocked(ru, ru.be)
	}
	queue := make([]schedItem, len(r.queue))
	for i, ru := range r.queue {
		queue[i] = r.itemLocked(ru, r.backendFor(ru.exp.Needs))
	}
	return estimate(running, queue, r.cfg.Concurrency)
}

// renumberLocked emits a status event to every waiting run whose position
// changed, or whose estimated wait moved by more than a fifth (and 5 s).
func (r *Runner) renumberLocked() {
	waits, known := r.waitsLocked()
	for i, ru := range r.queue {
		var w time.Duration
		if known[i] {
			w = waits[i]
		}
		moved := w-ru.wait > max(5*time.Second, ru.wait/5) || ru.wait-w > max(5*time.Second, ru.wait/5) ||
			(w == 0) != (ru.wait == 0)
		if ru.info.Position != i+1 || moved {
			ru.info.Position = i + 1
			ru.wait = w
			r.emit(ru, sandbox.Event{Type: sandbox.EvStatus, Status: sandbox.StatusQueued, Position: i + 1, Wait: w.Seconds()})
		}
	}
}

func (r *Runner) start(ru *run, be sandbox.Backend) {
	timeout := ru.exp.TimeLimit()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	ru.cancel = cancel
	if ru.exp.Interactive() {
		r.startCommands(ctx, ru)
	}
	ru.info.Status = sandbox.StatusRunning
	ru.info.Position = 0
	ru.be, ru.info.Started = be, time.Now()
	r.observeStarted(ru)
	ru.share.startedAt(ru.info.Started.Add(r.cfg.Share))
	name := "none"
	if be != nil {
		name = be.Name()
	}
	ru.info.Backend = name
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer cancel()
		status, why := r.execute(ctx, ru, be, timeout)
		r.finish(ru, status, why)
	}()
}

// execute runs one run on its backend and decides its final status and
// why (nil for a run that simply ended).
func (r *Runner) execute(ctx context.Context, ru *run, be sandbox.Backend, timeout time.Duration) (sandbox.Status, sandbox.Text) {
	unavailable, refuses := be.(sandbox.Unavailable)
	if be == nil || refuses {
		reason := sandbox.Text{"en": "no backend can run experiments that need " + string(ru.exp.Needs) + " on this machine",
			"zh": "这台机器上没有能运行需要 " + string(ru.exp.Needs) + " 的实验的后端"}
		if refuses && unavailable.Unavailable().Get("en") != "" {
			reason = unavailable.Unavailable()
		}
		r.emit(ru, sandbox.Event{Type: sandbox.EvStatus, Status: sandbox.StatusRunning, Backend: "none"})
		r.emit(ru, sandbox.Event{Type: sandbox.EvError, Message: reason.Get("en"), Messages: reason})
		return sandbox.StatusFailed, reason
	}
	r.emit(ru, sandbox.Event{Type: sandbox.EvStatus, Status: sandbox.StatusRunning, Backend: be.Name()})
	var cmds <-chan sandbox.Command
	if ru.cmds != nil {
		cmds = ru.cmds
	}
	req := sandbox.Request{RunID: ru.info.ID, Experiment: ru.exp.ID, Params: ru.info.Params}
	err := be.Exec(ctx, sandbox.NewSession(req, cmds, func(ev sandbox.Event) {
		if ev.Type == sandbox.EvStatus {
			// The runner alone decides the lifecycle; a backend may only
			// say where the run really runs (a worker: "vm@lab-2").
			if ev.Status == sandbox.StatusRunning && ev.Backend != "" {
				r.mu.Lock()
				ru.info.Backend = ev.Backend
				r.mu.Unlock()
				r.emit(ru, sandbox.Event{Type: sandbox.EvStatus, Status: sandbox.StatusRunning, Backend: ev.Backend})
			}
			return
		}
		r.out(ru, ev, true)
	}))
	r.mu.Lock()
	stop, stopMsg := ru.stop, ru.stopMsg
	r.mu.Unlock()
	if err == nil {
		if stop == sandbox.StatusTimedOut { // an idle interactive run that cleaned up
			return stop, stopMsg
		}
		return sandbox.StatusDone, nil
	}
	switch {
	case stop != "":
		why := msgCancelled
		if stop == sandbox.StatusInterrupted {
			why = msgStoppedDuring
		}
		if stopMsg != nil {
			why = stopMsg
		}
		return stop, why
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		why := sandbox.Text{"en": fmt.Sprintf("the run reached its time limit of %s and was stopped", timeout),
			"zh": fmt.Sprintf("运行达到了 %s 的时间上限，已被停止", timeout)}
		r.emit(ru, sandbox.Event{Type: sandbox.EvError, Message: why.Get("en"), Messages: why})
		return sandbox.StatusTimedOut, why
	}
	var af *sandbox.AgentFailure
	if !errors.As(err, &af) { // an agent failure was already reported as an event
		r.emit(ru, sandbox.ErrorEvent("", err))
	}
	r.log.Info("run failed", "run", ru.info.ID, "experiment", ru.exp.ID, "err", err)
	return sandbox.StatusFailed, sandbox.FailureText(err)
}

// finish emits the final status and frees the learner's slot.
func (r *Runner) finish(ru *run, status sandbox.Status, why sandbox.Text) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ru.info.Status = status
	r.emit(ru, sandbox.Event{Type: sandbox.EvStatus, Status: status, Message: why.Get("en"), Messages: why, Backend: ru.info.Backend})
	r.observeFinished(ru, status)
	r.removeLocked(ru)
	r.endJoinedLocked(ru, status)
	r.running--
	for i, a := range r.active {
		if a == ru {
			r.active = append(r.active[:i], r.active[i+1:]...)
			break
		}
	}
	if status == sandbox.StatusDone {
		// A moving average: recent runs count most (a loaded machine).
		took := time.Since(ru.info.Started)
		if old, ok := r.expect[ru.exp.ID]; ok {
			took = (old*2 + took) / 3
		}
		r.expect[ru.exp.ID] = took
	}
	r.dispatchLocked()
}

// emit numbers ev and queues it for the Sink, in order for this run; it
// never waits for the Sink.
func (r *Runner) emit(ru *run, ev sandbox.Event) { r.out(ru, ev, false) }

// isUnavailable reports whether be has the Unavailable capability.
func isUnavailable(be sandbox.Backend) bool {
	_, ok := be.(sandbox.Unavailable)
	return ok
}

// Cancel stops a queued or running run; its final status is cancelled.
// It returns ErrUnknownRun when no such run is active.
func (r *Runner) Cancel(runID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ru := r.runs[runID]
	if ru == nil {
		return ErrUnknownRun
	}
	if r.leaveLocked(ru, sandbox.StatusCancelled) { // a shared run goes on for the others
		return nil
	}
	r.stopLocked(ru, sandbox.StatusCancelled)
	return nil
}

// stopLocked removes a waiting run at once, or asks a running one to stop
// (its goroutine emits the final status after the backend killed it).
func (r *Runner) stopLocked(ru *run, why sandbox.Status) {
	if ru.info.Status == sandbox.StatusRunning {
		if ru.stop == "" {
			ru.stop = why
		}
		ru.cancel()
		return
	}
	ru.info.Status = why
	msg := msgCancelledEarly
	if why == sandbox.StatusInterrupted {
		msg = msgStoppedBefore
	}
	r.emit(ru, sandbox.Event{Type: sandbox.EvStatus, Status: why, Message: msg.Get("en"), Messages: msg})
	if ru.host == nil {
		r.observeFinished(ru, why)
	}
	r.removeLocked(ru)
	r.endJoinedLocked(ru, why)
	r.dispatchLocked() // a waiting timing run may have held others back
}

// removeLocked forgets an active run and frees its learner's slot.
func (r *Runner) removeLocked(ru *run) {
	for i, q := range r.queue {
		if q == ru {
			r.queue = append(r.queue[:i], r.queue[i+1:]...)
			break
		}
	}
	delete(r.runs, ru.info.ID)
	if r.learners[ru.info.Learner] == ru {
		delete(r.learners, ru.info.Learner)
	}
}

// Lookup returns an active (queued or running) run.
func (r *Runner) Lookup(runID string) (sandbox.RunInfo, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ru := r.runs[runID]
	if ru == nil {
		return sandbox.RunInfo{}, false
	}
	return r.infoLocked(ru), true
}

// Close refuses new runs, stops every active one with status interrupted
// (killing their processes) and waits for them to finish.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	for len(r.queue) > 0 {
		r.stopLocked(r.queue[0], sandbox.StatusInterrupted)
	}
	for _, ru := range r.runs {
		if ru.host != nil {
			r.leaveLocked(ru, sandbox.StatusInterrupted)
			continue
		}
		r.stopLocked(ru, sandbox.StatusInterrupted)
	}
	r.mu.Unlock()
	r.wg.Wait()
	r.writers.Wait() // every event is with the Sink
}

// The runner's own final status messages, in both languages.
var (
	msgCancelled      = sandbox.Text{"en": "cancelled", "zh": "已按你的请求停止"}
	msgCancelledEarly = sandbox.Text{"en": "cancelled before it started", "zh": "还没开始就取消了"}
	msgStoppedDuring  = sandbox.Text{"en": "the lab server stopped while this run was going", "zh": "运行途中实验服务器停止了"}
	msgStoppedBefore  = sandbox.Text{"en": "the lab server stopped before this run started", "zh": "运行开始前实验服务器停止了"}
)
