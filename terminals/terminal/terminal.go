// Package terminal is the host's side of learner terminals and tasks: a
// Soft-RoCE guest of the learner's own (booted, restored and supervised
// by package vm) with a shell in it, handed out by Terminals — sessions,
// a FIFO queue, idle and detached reclaim, paused spares ahead of a class
// (spares.go), kept machines (keep.go, shutdown.go), sizing to the
// machine (size.go) — and, in that guest, a lesson task's check
// (Terminals.Verify) and a learner's program (program.go). It talks to
// the guest over channels of its agent port (vm.Guest.Open); the guest's
// side is package guestterm. It runs on the host.
package terminal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/machines/vmproto"
	"github.com/rdmalab/rdmalab/sandbox"

	"github.com/rdmalab/rdmalab"
)

// A learner's terminal: a shell as the ordinary user learner (uid 1000,
// guestterm) in a guest of the learner's own
// (never the host, never the shared experiment guests), relayed over the
// guest's agent port (vmproto.OpTerm). Terminals hands out one guest per
// learner, restored from the cache's snapshot when there is one, capped
// at Max, discarded after Idle without use.

// Terminal is one shell in a guest: a channel of its agent port
// (vmproto.OpTerm).
type Terminal struct {
	ch      *vm.Channel
	done    chan struct{}
	err     error
	dropped atomic.Bool // the guest dropped keystrokes since the last Write
}

// openTerminal starts a shell on a PTY of rows×cols in g; out receives its
// output (called from the connection's reader: it must not block long).
func openTerminal(g *vm.Guest, rows, cols uint16, out func([]byte)) (*Terminal, error) {
	// The guest holds a shell's output at its own rate; the host holds
	// it at a rate of its own (vm's bounds), whatever the guest says.
	t := &Terminal{done: make(chan struct{})}
	ch, err := g.Open(vmproto.HostMsg{Op: vmproto.OpTerm, Rows: rows, Cols: cols}, vm.ChannelOpts{Data: out, Rated: true,
		Event: func(ev sandbox.Event) {
			if ev.Type == sandbox.EvLog && ev.Name == vmproto.KeysDropped {
				t.dropped.Store(true)
			}
		}})
	if err != nil {
		return nil, err
	}
	t.ch = ch
	go func() {
		t.err = <-ch.End()
		close(t.done)
	}()
	return t, nil
}

// Write sends keystrokes to the shell; rdmalab.ErrKeysDropped when they
// went but the guest had dropped some sent before them.
func (t *Terminal) Write(b []byte) error {
	select {
	case <-t.done:
		return errors.New("the shell has exited")
	default:
	}
	if err := t.ch.Send(vmproto.HostMsg{Op: vmproto.OpTermIn, Data: b}); err != nil {
		return err
	}
	if t.dropped.Swap(false) {
		return rdmalab.ErrKeysDropped
	}
	return nil
}

// Resize sets the PTY's window size.
func (t *Terminal) Resize(rows, cols uint16) error {
	if rows == 0 || cols == 0 {
		return nil
	}
	return t.ch.Send(vmproto.HostMsg{Op: vmproto.OpTermIn, Rows: rows, Cols: cols})
}

// Close kills the shell and everything it started.
func (t *Terminal) Close() { t.ch.Cancel() }

// Done is closed when the shell has ended; Err says why (nil: it exited).
func (t *Terminal) Done() <-chan struct{} { return t.done }

// Err is why the shell ended, after Done.
func (t *Terminal) Err() error { <-t.done; return t.err }

// LearnerCPUs is a learner guest's vCPUs unless Cfg.CPUs says otherwise.
// One, not the experiment guests' two (issue 31, measured under TCG on 2
// host cores, 20 learners opening their terminals at once):
//   - a restored 2-vCPU guest hung now and then before its shell showed
//     a prompt, a vCPU spinning a host core (4 of 200 restores; none of
//     120 with one vCPU);
//   - 20 idle 1-vCPU guests used 1.6–2.5 % of a core each, against
//     2.4–3.5 %;
//     the class's open → echo cost 1.8–2.9 s of CPU in all, against
//     2.3–4.4 s, and its p95 was 1.0–1.6 s against 1.2–2.4 s;
//   - with two vCPUs the guest kernel finds the TSCs unsynchronized and
//     keeps time with the emulated HPET; with one it uses the TSC.
//
// A learner's shell is bounded to 75 % of its vCPUs (guestterm), so one
// busy shell now holds at most 0.75 of a host core, not 1.5: a class
// running perftest in its terminals at once gets twice the shells at full
// speed, each half as fast.
const LearnerCPUs = 1

// LearnerNice is the host niceness of a learner guest's QEMU: however
// busy a learner keeps theirs, the experiment guests and labserver get
// the CPU first.
const LearnerNice = 10

// Terminals gives each learner a guest of their own with one shell in it.
// A learner who comes when all Max guests are taken waits in a FIFO queue
// of at most QueueMax learners (told their place as it changes); beyond it
// they are refused with a *rdmalab.TermsFullError.
type Terminals struct {
	// Cfg is the learner guests' configuration. Its Nice 0 gives them
	// LearnerNice; below 0 they run at labserver's own priority (the
	// guest suite of the exercises, whose guest is what it judges).
	Cfg        vm.Config
	Max        int           // concurrent learner guests (2)
	Idle       time.Duration // a session unused (no keystroke) this long is discarded (DefaultIdle)
	Scrollback int           // bytes of output kept for a re-attach (64 KiB)
	QueueMax   int           // learners who may wait for a guest (2×Max)
	// DetachedGrace: while learners wait, a session with no tab attached
	// and unused this long gives its guest up (2 min): a closed tab must not
	// hold a place for the full Idle while others queue.
	DetachedGrace time.Duration
	// Spares is the class learner guests are kept ahead of demand for:
	// restored, their shell started, then paused (QMP stop: memory, no
	// CPU), so that a new learner's terminal opens with a resume instead
	// of a restore. Spares − the learners in are kept, at least one, at
	// most the places left (1; -1: none; spares.go). They count
	// in memory, not in Max.
	Spares int
	// Room, when set, is how many more learner guests free memory holds
	// now: spares start only while it is above 0 and are given back below
	// it (AutoRoom).
	Room func() int
	// Keep, when set, keeps a reclaimed learner's machine (keep.go) and
	// restores it at their next attach; nil: a reclaimed machine is gone.
	Keep *Keep
	// IdlePause: a learner's guest whose shell has had no keystroke and no
	// output this long, and whose QEMU is idle, is paused with its tab
	// open; the next keystroke resumes it (idle.go). 0: DefaultIdlePause;
	// below 0: never.
	IdlePause time.Duration

	// StartsAtOnce is how many learner guests may be starting (restored,
	// up to a ready agent) at once (the host's CPUs). A class opening its
	// terminals together otherwise restores all at once: under TCG on 2
	// cores 19 guests then took so long that their health pings (30 s)
	// failed and every one was discarded; one after another, each is up
	// in its own restore time and idle after.
	StartsAtOnce int
	// SpareRetry is how long the refiller waits after a spare failed to
	// start and between looks at free memory (30 s).
	SpareRetry time.Duration

	// spareUp, when set (tests), is called with each spare whose guest is
	// up, before its shell opens.
	spareUp func(*termSession)

	starts   chan struct{} // StartsAtOnce slots
	mu       sync.Mutex
	sessions map[string]*termSession
	saving   map[string]chan struct{} // learners whose machine is being kept; closed when done
	spares   []*termSession
	made     int           // guests started, to name them in the log
	waiting  []*termWaiter // FIFO
	changed  chan struct{} // closed and replaced when a place frees or the queue moves
	closed   bool
	stop     chan struct{}
	once     sync.Once

	// Spares (spares.go).
	kick        chan struct{} // wakes the refiller
	warmOnce    sync.Once     // starts the refiller
	ownStarting int           // learners' own guests starting: no spare starts meanwhile
	fromSpare   int           // attaches served from a spare
	startedOwn  int           // learner guests started on demand

	idle IdleStats // pauses and resumes for idleness (idle.go); Paused unused
}

// termWaiter is one Attach waiting for a place.
type termWaiter struct{ learner string }

// termSession is one learner's guest and shell.
type termSession struct {
	owner string
	// client is the admission's client (rdmalab.ClientOf) at the
	// learner's latest attach: their kept machine counts against its
	// share (Keep.ClientMax). Under mu.
	client  string
	backend *vm.Backend
	log     *slog.Logger // the guest's

	// keepNote says what became of the learner's kept machine at the
	// guest's start (Keep), until an attach takes it.
	keepMu   sync.Mutex
	keepNote KeepNote

	mu      sync.Mutex
	term    *Terminal
	scroll  []byte
	subs    map[*Attachment]struct{}
	lastUse time.Time
	max     int

	pmu   sync.Mutex // orders pausing and resuming the guest
	users int        // attachments, attaches under way and checks; the guest runs while > 0
	busy  int        // programs and checks running: the guest is not idle
	// idlePaused: the guest is paused for idleness while users > 0
	// (idle.go); a keystroke resumes it.
	idlePaused bool
	resumed    func(time.Duration) // told each resume from idlePaused

	// lastActive (mu) is the last keystroke, output, attach or run;
	// cpuSeen, demandSeen and cpuAt the guest QEMU's CPU time and its
	// demand (CPU used and waited for, vm.ProcessDemand) when reap last
	// looked (its goroutine's alone).
	lastActive time.Time
	cpuSeen    time.Duration
	demandSeen time.Duration
	cpuAt      time.Time

	discarded atomic.Bool // the session is being ended on purpose
}

// Attachment is one browser tab's view of a learner's shell.
type Attachment struct {
	s *termSession
	// Out carries output after the scrollback; it is closed when the shell
	// ends, the session is discarded, or this reader fell too far behind.
	Out chan []byte
	// Scrollback is the recent output the shell had produced before.
	Scrollback []byte
	// Kept says what became of the learner's kept machine, on the first
	// attach after it was reclaimed (KeepNone otherwise).
	Kept       KeepNote
	term       *Terminal
	closeOnce  sync.Once
	detachOnce sync.Once
}

func (t *Terminals) init() {
	t.once.Do(func() {
		if t.Max <= 0 {
			t.Max = 2
		}
		if t.Idle <= 0 {
			t.Idle = DefaultIdle
		}
		if t.Scrollback <= 0 {
			t.Scrollback = 64 << 10
		}
		if t.QueueMax <= 0 {
			t.QueueMax = 2 * t.Max
		}
		if t.DetachedGrace <= 0 {
			t.DetachedGrace = 2 * time.Minute
		}
		if t.Spares == 0 {
			t.Spares = 1
		}
		if t.StartsAtOnce <= 0 {
			t.StartsAtOnce = runtime.NumCPU()
		}
		if t.SpareRetry <= 0 {
			t.SpareRetry = 30 * time.Second
		}
		if t.IdlePause == 0 {
			t.IdlePause = DefaultIdlePause
		}
		t.starts = make(chan struct{}, t.StartsAtOnce)
		t.sessions = map[string]*termSession{}
		t.saving = map[string]chan struct{}{}
		t.changed = make(chan struct{})
		t.stop = make(chan struct{})
		t.kick = make(chan struct{}, 1)
		go t.reap()
	})
}

// InUse is how many learner guests run and the cap.
func (t *Terminals) InUse() (n, max int) {
	t.init()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inUse(), t.Max
}

// inUse is the learner guests that run: the sessions and those being
// kept (their QEMU still holds its memory). t.mu held.
func (t *Terminals) inUse() int { return len(t.sessions) + len(t.saving) }

// Holds reports whether learner has a guest or waits for one.
func (t *Terminals) Holds(learner string) bool {
	t.init()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sessions[learner] != nil {
		return true
	}
	return slices.ContainsFunc(t.waiting, func(w *termWaiter) bool { return w.learner == learner })
}

// Waiting is how many learners wait for a terminal.
func (t *Terminals) Waiting() int {
	t.init()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.waitingLearners("")
}

// waitingLearners counts the distinct learners in the queue other than
// except (a learner with two tabs waits once). t.mu held.
func (t *Terminals) waitingLearners(except string) int {
	seen := map[string]bool{}
	for _, w := range t.waiting {
		if w.learner != except {
			seen[w.learner] = true
		}
	}
	return len(seen)
}

// position is w's place in the queue: 1 + the distinct other learners
// ahead of it. t.mu held.
func (t *Terminals) position(w *termWaiter) int {
	seen := map[string]bool{}
	for _, o := range t.waiting {
		if o == w {
			break
		}
		if o.learner != w.learner {
			seen[o.learner] = true
		}
	}
	return len(seen) + 1
}

// notify wakes the waiters: a place freed or the queue moved. t.mu held.
func (t *Terminals) notify() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// dequeue takes w out of the queue. t.mu held.
func (t *Terminals) dequeue(w *termWaiter) {
	if i := slices.Index(t.waiting, w); i >= 0 {
		t.waiting = slices.Delete(t.waiting, i, i+1)
		t.notify()
	}
}

// newSession gives learner a guest: a spare one if there is one, else
// one that starts now. t.mu held.
func (t *Terminals) newSession(learner string) *termSession {
	var s *termSession
	if t.Keep != nil && t.Keep.Has(learner) {
		s = t.startGuest(learner) // their kept machine, not a spare
	} else if i := t.readySpare(); i >= 0 {
		s = t.spares[i]
		t.spares = append(t.spares[:i], t.spares[i+1:]...)
		t.fromSpare++
		s.mu.Lock()
		s.owner, s.lastUse = learner, time.Now()
		s.mu.Unlock()
	} else {
		t.startedOwn++
		s = t.startGuest(learner)
	}
	t.sessions[learner] = s
	t.kickRefill()
	return s
}

// readySpare is the index of a spare to hand out: a paused (ready) one
// first, else the one restoring (it is ahead of a new restore), -1 when
// there is none. t.mu held.
func (t *Terminals) readySpare() int {
	for i, s := range t.spares {
		if s.backend.Paused() {
			return i
		}
	}
	if len(t.spares) > 0 {
		return 0
	}
	return -1
}

// startGuest starts a learner guest for owner ("" for a spare). t.mu held.
func (t *Terminals) startGuest(owner string) *termSession {
	cfg := t.Cfg
	cfg.Learner = true
	switch {
	case cfg.Nice == 0:
		cfg.Nice = LearnerNice
	case cfg.Nice < 0:
		cfg.Nice = 0
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = LearnerCPUs
	}
	t.made++
	if cfg.Logger != nil {
		cfg.Logger = cfg.Logger.With("terminal_guest", t.made)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &termSession{owner: owner, backend: vm.New(cfg), log: log, subs: map[*Attachment]struct{}{}, max: t.Scrollback,
		lastUse: time.Now(), lastActive: time.Now(), resumed: t.noteResume}
	if owner != "" && t.Keep != nil {
		// The learner's kept machine instead of a fresh one, at the
		// first start only.
		keep := t.Keep
		s.backend.RestoreFirst(func(key string) *vm.SavedState {
			st, note := keep.take(owner, key)
			s.setKeepNote(note)
			return st
		}, func(st *vm.SavedState, _ time.Duration, err error) {
			keep.done(st)
			if err != nil {
				s.setKeepNote(KeepUnreadable)
			}
		})
	}
	if owner != "" {
		t.ownStarting++
	}
	go func() {
		if owner != "" {
			defer func() {
				t.mu.Lock()
				t.ownStarting--
				t.mu.Unlock()
				t.kickRefill()
			}()
		}
		// A slot from the start to a ready agent (StartsAtOnce).
		select {
		case t.starts <- struct{}{}:
		case <-t.stop:
			return
		}
		defer func() { <-t.starts }()
		s.backend.Start()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		_, _ = s.backend.WaitReady(ctx)
	}()
	return s
}

// prepare readies a spare: its guest up, its shell started and showing its
// prompt, then paused until a learner takes it. A learner may take it
// meanwhile (then it is theirs, running).
//
// A spare is kept only once its prompt showed. Restored 2-vCPU guests
// under TCG have been seen to hang right after the restore (one vCPU
// spinning a host core, no prompt, no answer to pings): such a spare used
// to be paused anyway, and the learner who took it waited 30 s for the
// health ping to give up, while it held a core (issue 31). A prompt that
// is slow to show is waited for (a busy machine) only while the guest
// answers a ping; one that never shows within sparePromptMax is not kept.
func (s *termSession) prepare(up func(*termSession)) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	g, err := s.backend.WaitReady(ctx)
	if err != nil {
		return err // a learner who took it meets the same error in Attach
	}
	if up != nil {
		up(s)
	}
	s.mu.Lock()
	if s.term == nil {
		term, err := openTerminal(g, 24, 80, s.output)
		if err != nil {
			s.mu.Unlock()
			return fmt.Errorf("open the spare's shell: %w", err)
		}
		s.setTerm(term)
	}
	s.mu.Unlock()
	if err := s.awaitPrompt(ctx, g); err != nil {
		return err
	}
	s.use()
	s.unuse() // nobody took it meanwhile: paused
	return nil
}

// How long a spare's prompt is waited for (prepare).
const (
	sparePromptLook = 10 * time.Second // then the guest must answer a ping
	sparePing       = 5 * time.Second  // within this
	sparePromptMax  = time.Minute      // and the prompt show within this
)

// awaitPrompt waits for the spare's shell to print its prompt (bash
// reading its profile), asking the guest for a ping every
// sparePromptLook it has not.
func (s *termSession) awaitPrompt(ctx context.Context, g *vm.Guest) error {
	start := time.Now()
	look := start.Add(sparePromptLook)
	for {
		s.mu.Lock()
		shown := len(s.scroll) > 0
		s.mu.Unlock()
		if shown {
			return nil
		}
		if now := time.Now(); now.After(look) {
			if now.Sub(start) >= sparePromptMax {
				return fmt.Errorf("the spare's shell showed no prompt in %s", sparePromptMax)
			}
			pctx, cancel := context.WithTimeout(ctx, sparePing)
			err := g.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("the spare's shell showed no prompt in %s and its guest does not answer: %w",
					now.Sub(start).Round(time.Second), err)
			}
			look = time.Now().Add(sparePromptLook)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// use marks the guest in use and resumes it if it was paused.
func (s *termSession) use() {
	if s.wake() > 0 {
		// It was paused for idleness, and runs again.
		s.pmu.Lock()
		s.users++
		s.pmu.Unlock()
		return
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.users++
	s.backend.Resume()
}

// hold is use for a program or a check: the guest is not idle until
// release.
func (s *termSession) hold() {
	s.use()
	s.pmu.Lock()
	s.busy++
	s.pmu.Unlock()
}

// release ends a hold.
func (s *termSession) release() {
	s.pmu.Lock()
	s.busy--
	s.pmu.Unlock()
	s.active()
	s.unuse()
}

// unuse ends one use; with none left the guest is paused (QMP stop): an
// idle guest that no tab shows costs no CPU, and its shell, with whatever
// it runs, goes on where it was at the next attach.
func (s *termSession) unuse() {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.users--
	if s.users == 0 {
		s.idlePaused = false // paused now because no tab shows it
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s.backend.Pause(ctx)
		cancel()
	}
}

// setTerm makes term the session's shell. s.mu held.
func (s *termSession) setTerm(term *Terminal) {
	s.term = term
	go func() {
		<-term.done
		if term.err != nil && !s.discarded.Load() {
			// An exit is the learner's, a discard ours; this is the
			// machine's (logged once a shell).
			s.log.Warn("a learner's shell ended", "owner", s.owner, "err", term.err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for a := range s.subs {
			if a.term == term {
				a.closeOut()
				delete(s.subs, a)
			}
		}
	}()
}

// Attach returns learner's shell, starting their guest (restored from the
// snapshot when the cache has one) and shell if needed. When all Max
// guests are taken it waits in the queue until a place frees or ctx ends;
// a full queue gives a *rdmalab.TermsFullError. ctx also bounds the guest's start.
func (t *Terminals) Attach(ctx context.Context, learner string, rows, cols uint16) (*Attachment, error) {
	return t.AttachWait(ctx, learner, rows, cols, nil)
}

// AttachWait is Attach that tells wait (if not nil) the learner's place
// in the queue each time it changes while they wait.
func (t *Terminals) AttachWait(ctx context.Context, learner string, rows, cols uint16, wait func(rdmalab.TermQueue)) (*Attachment, error) {
	t.init()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, errors.New("the lab is shutting down")
	}
	if err := t.awaitSaved(ctx, learner); err != nil {
		t.mu.Unlock()
		return nil, err
	}
	s := t.sessions[learner]
	if s == nil && (t.inUse() >= t.Max || len(t.waiting) > 0) {
		// Full, or others wait already: nobody overtakes the queue.
		if n := t.waitingLearners(learner); n >= t.QueueMax {
			t.mu.Unlock()
			return nil, &rdmalab.TermsFullError{Max: t.Max, Waiting: n}
		}
		w := &termWaiter{learner: learner}
		t.waiting = append(t.waiting, w)
		told := 0
		for {
			if s = t.sessions[learner]; s != nil {
				break // another tab of this learner got the place
			}
			if t.waiting[0] == w && t.inUse() < t.Max {
				s = t.newSession(learner)
				break
			}
			q := rdmalab.TermQueue{Position: t.position(w), InUse: t.inUse(), Max: t.Max}
			changed := t.changed
			t.mu.Unlock()
			if wait != nil && q.Position != told {
				told = q.Position
				wait(q)
			}
			select {
			case <-ctx.Done():
			case <-changed:
			case <-t.stop:
			}
			t.mu.Lock()
			if t.closed || ctx.Err() != nil {
				t.dequeue(w)
				t.mu.Unlock()
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				return nil, errors.New("the lab is shutting down")
			}
		}
		t.dequeue(w)
	}
	if s == nil {
		s = t.newSession(learner)
	}
	s.mu.Lock()
	s.lastUse = time.Now()
	if c := rdmalab.ClientOf(ctx); c != "" {
		s.client = c
	}
	s.mu.Unlock()
	t.mu.Unlock()

	s.use() // a paused guest (spare, or no tab attached) runs again
	a, err := t.open(ctx, s, rows, cols)
	if err != nil {
		s.unuse()
		return nil, err
	}
	return a, nil // the attachment keeps the use until Detach
}

// open waits for s's guest and attaches to its shell, starting one if
// there is none.
func (t *Terminals) open(ctx context.Context, s *termSession, rows, cols uint16) (*Attachment, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // the start; the queue's wait is ctx's
	defer cancel()
	g, err := s.backend.WaitReady(rctx)
	if err != nil {
		return nil, err
	}
	t.Warm() // the first guest up made the snapshot spares restore from
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastUse = time.Now()
	s.lastActive = s.lastUse
	if s.term == nil || isDone(s.term.done) {
		term, err := openTerminal(g, rows, cols, s.output)
		if err != nil {
			return nil, fmt.Errorf("open a shell in your machine: %w", err)
		}
		s.setTerm(term)
	} else {
		_ = s.term.Resize(rows, cols)
	}
	a := &Attachment{s: s, Out: make(chan []byte, 256), Scrollback: append([]byte(nil), s.scroll...), term: s.term, Kept: s.takeKeepNote()}
	s.subs[a] = struct{}{}
	return a, nil
}

func isDone(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// output keeps the shell's output for re-attaches and fans it out.
func (s *termSession) output(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastActive = time.Now()
	s.scroll = append(s.scroll, b...)
	if len(s.scroll) > s.max {
		s.scroll = append([]byte(nil), s.scroll[len(s.scroll)-s.max:]...)
	}
	for a := range s.subs {
		select {
		case a.Out <- b:
		default:
			// A reader this far behind is dropped; it re-attaches and
			// gets the scrollback.
			a.closeOut()
			delete(s.subs, a)
		}
	}
}

func (a *Attachment) closeOut() { a.closeOnce.Do(func() { close(a.Out) }) }

// Write sends keystrokes to the shell, resuming its guest first if it
// was paused for idleness (the keystrokes wait for it, in order).
func (a *Attachment) Write(b []byte) error {
	a.s.mu.Lock()
	a.s.lastUse = time.Now()
	a.s.mu.Unlock()
	a.s.wake()
	return a.term.Write(b)
}

// Resize sets the shell's window size (resuming an idle-paused guest).
func (a *Attachment) Resize(rows, cols uint16) error {
	a.s.wake()
	return a.term.Resize(rows, cols)
}

// Detach stops this tab's view; the shell keeps running (paused with its
// guest when no other tab shows it).
func (a *Attachment) Detach() {
	a.detachOnce.Do(func() {
		a.s.mu.Lock()
		delete(a.s.subs, a)
		a.s.lastUse = time.Now()
		a.s.mu.Unlock()
		a.closeOut()
		a.s.unuse()
	})
}

// KeptNote is Kept as a string (rdmalab.TermConn).
func (a *Attachment) KeptNote() string { return string(a.Kept) }

// Lost is false: a shell on this machine ends with its guest, and its
// learner's next attach starts that guest again here (rdmalab.TermConn).
func (a *Attachment) Lost() bool { return false }

// Recent is the output the shell had produced before this attach.
func (a *Attachment) Recent() []byte { return a.Scrollback }

// Output carries the output after Recent.
func (a *Attachment) Output() <-chan []byte { return a.Out }

// GuestPID is the QEMU pid of the learner's guest (tests).
func (a *Attachment) GuestPID() int { return a.s.backend.GuestPID() }

// reap discards sessions unused for Idle.
func (t *Terminals) reap() {
	every := min(t.Idle/4, t.DetachedGrace/4, 30*time.Second)
	if t.IdlePause > 0 {
		every = min(every, max(t.IdlePause/4, 100*time.Millisecond))
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		t.pauseIdle()
		var old []*termSession
		t.mu.Lock()
		queued := len(t.waiting) > 0
		for k, s := range t.sessions {
			s.mu.Lock()
			idle := time.Since(s.lastUse)
			if idle > t.Idle || queued && len(s.subs) == 0 && idle > t.DetachedGrace {
				old = append(old, s)
				delete(t.sessions, k)
			}
			s.mu.Unlock()
		}
		if len(old) > 0 {
			t.notify()
		}
		for _, s := range old {
			if t.Keep != nil && s.owner != "" {
				t.saving[s.owner] = make(chan struct{})
			}
		}
		t.mu.Unlock()
		for _, s := range old {
			s.mu.Lock()
			attached := len(s.subs)
			idle := time.Since(s.lastUse).Round(time.Second)
			s.mu.Unlock()
			// Once per machine reclaimed, so an admin (and a test's log)
			// can tell an idle reclaim from a guest that died.
			if t.Cfg.Logger != nil {
				t.Cfg.Logger.Info("a learner's machine reclaimed as unused", "owner", s.owner, "unused", idle, "tabs", attached, "kept", t.Keep != nil && s.owner != "")
			}
			if t.Keep == nil || s.owner == "" {
				go s.discard()
				continue
			}
			go func() { _ = t.keepSession(context.Background(), s) }()
		}
	}
}

// Discard ends learner's session now (their guest stops).
func (t *Terminals) Discard(learner string) {
	t.init()
	t.mu.Lock()
	s := t.sessions[learner]
	if s != nil {
		delete(t.sessions, learner)
		t.notify()
	}
	t.mu.Unlock()
	if s != nil {
		s.discard()
	}
}

func (s *termSession) discard() {
	s.discarded.Store(true)
	s.mu.Lock()
	for a := range s.subs {
		a.closeOut()
	}
	s.subs = map[*Attachment]struct{}{}
	s.mu.Unlock()
	s.backend.Close()
}

// Close stops every learner guest (nothing is kept: Shutdown keeps them).
func (t *Terminals) Close() error {
	t.init()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil // after Shutdown
	}
	t.closed = true
	all := slices.Collect(maps.Values(t.sessions))
	all = append(all, t.spares...)
	t.sessions, t.spares = map[string]*termSession{}, nil
	t.mu.Unlock()
	close(t.stop)
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() { defer wg.Done(); s.discard() }()
	}
	wg.Wait()
	return nil
}

// verifyIn runs a lesson task's verify script in g (vmproto.OpVerify).
func verifyIn(ctx context.Context, g *vm.Guest, script []byte, lang string) (rdmalab.TaskVerdict, error) {
	var res rdmalab.TaskVerdict
	var mu sync.Mutex
	ch, err := g.Open(vmproto.HostMsg{Op: vmproto.OpVerify, Data: script, Lang: lang}, vm.ChannelOpts{Data: func(b []byte) {
		mu.Lock()
		res.Output = append(res.Output, b...)
		mu.Unlock()
	}, DataMax: verifyCap}) // the guest's cap, enforced here too
	if err != nil {
		return res, err
	}
	select {
	case err := <-ch.End():
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			res.Passed = true
			return res, nil
		}
		if af, ok := errors.AsType[*sandbox.AgentFailure](err); ok {
			res.Detail = af.Message
			return res, nil
		}
		return res, err
	case <-ctx.Done():
		ch.Forget()
		return res, ctx.Err()
	}
}

// verifyCap is the host's own bound on a check's output: what the guest
// promises (vmproto.VerifyOutputMax), no more.
const verifyCap = vmproto.VerifyOutputMax

// Verify runs script in learner's own guest (LAB_LANG=lang), beside their shell: the
// script sees what they did there. rdmalab.ErrNoTerminal when they have no shell
// open (never opened, exited, or discarded after Idle).
func (t *Terminals) Verify(ctx context.Context, learner string, script []byte, lang string) (rdmalab.TaskVerdict, error) {
	t.init()
	t.mu.Lock()
	s := t.sessions[learner]
	t.mu.Unlock()
	if s == nil {
		return rdmalab.TaskVerdict{}, rdmalab.ErrNoTerminal
	}
	s.mu.Lock()
	term := s.term
	s.lastUse = time.Now()
	s.mu.Unlock()
	if term == nil || isDone(term.done) {
		return rdmalab.TaskVerdict{}, rdmalab.ErrNoTerminal
	}
	s.hold() // a paused guest runs the check
	defer s.release()
	g, err := s.backend.WaitReady(ctx)
	if err != nil {
		return rdmalab.TaskVerdict{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, (vmproto.VerifyTimeoutS+15)*time.Second)
	defer cancel()
	return verifyIn(ctx, g, script, lang)
}
