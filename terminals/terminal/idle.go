package terminal

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/rdmalab/rdmalab/machines/vm"
)

// Cheaper idle (issue 45). A learner's guest already pauses when no tab
// shows it (unuse). A tab left open on a shell nobody types in cost its
// guest 0.5 % of a core under TCG for nothing; a hundred of them half a
// core. Such a guest is paused too, tab open, after IdlePause without a
// keystroke, and resumed by the next one: the keystroke waits for the
// resume (a QMP cont, milliseconds) and then goes to the shell as typed,
// so nothing typed is lost or reordered. A guest that is doing something
// is not idle: output from its shell, a program or check run in it, or
// its QEMU using more than idleCPU of a core, or wanting more than
// busyDemand, keeps it running. Wanting: on a loaded lab a guest at nice
// 10 that runs a command may get under 5 % of a core, and paused then it
// would hang mid-command until the next keystroke (TestIdlePause beside
// stress-ng); vm.ProcessDemand counts the time its threads waited for a
// CPU too.
//
// A command that sleeps quietly (sleep 600; echo done) looks idle and is
// paused with its guest: its guest's clock stops with it, and it ends
// that much later, when the learner comes back.

// DefaultIdlePause is how long a learner's shell goes without a keystroke
// or output before its guest is paused with the tab open (Terminals.IdlePause).
//
// 30 s: a class of 100 whose 90 idle guests run (1.2–1.5 % of a core
// each) leaves the 10 who type an echo p95 of 52 ms on 2 quiet cores and
// 403 ms beside other work, against 23 and 14 ms once those are paused
// (BenchmarkClassOfHundred), so the sooner the better; what it costs a
// learner is the resume at their next keystroke, 2–15 ms.
const DefaultIdlePause = 30 * time.Second

// DefaultIdle is how long a learner's machine may go without a keystroke
// (or a check or program run) before it is reclaimed (Terminals.Idle).
const DefaultIdle = 10 * time.Minute

// idleCPU is the share of a core above which a guest counts as busy: an
// idle learner guest under TCG uses 0.5 %, a shell running anything a few
// tens of percent.
const idleCPU = 0.05

// busyDemand is the share of a core a guest's QEMU uses and waits for
// above which it counts as busy however little it got: a guest running a
// command is runnable the whole time (measured beside stress-ng and guest
// tests: 7–10 % used, 78–99 % waited), while an idle one only wakes now
// and then (0–1 % used, 8–12 % waited on that machine, ~0.5 % on a quiet
// one).
const busyDemand = 0.5

// IdleStats is the learner guests paused for idleness with a tab open,
// and how long resuming them took.
type IdleStats struct {
	Paused  int           // guests paused for idleness now
	Pauses  int           // since the start
	Resumes int           // since the start
	Resume  time.Duration // the last resume (QMP cont), keystroke to running
	Longest time.Duration // the longest resume since the start
}

// IdleStats reports the guests paused for idleness.
func (t *Terminals) IdleStats() IdleStats {
	t.init()
	t.mu.Lock()
	ss := slices.Collect(maps.Values(t.sessions))
	st := t.idle
	t.mu.Unlock()
	for _, s := range ss {
		s.pmu.Lock()
		if s.idlePaused {
			st.Paused++
		}
		s.pmu.Unlock()
	}
	return st
}

// pauseIdle pauses the guests of learners who have not typed for
// IdlePause and whose guest is doing nothing (reap calls it).
func (t *Terminals) pauseIdle() {
	if t.IdlePause < 0 {
		return
	}
	t.mu.Lock()
	ss := slices.Collect(maps.Values(t.sessions))
	t.mu.Unlock()
	for _, s := range ss {
		if s.pauseIfIdle(t.IdlePause) {
			t.mu.Lock()
			t.idle.Pauses++
			t.mu.Unlock()
			s.log.Debug("a learner's guest paused: no keystroke or output", "owner", s.owner, "for", t.IdlePause)
		}
	}
}

// pauseIfIdle pauses s's guest when a tab shows it, nothing else uses it,
// and for after nobody typed, its shell printed nothing and its QEMU
// used no more than idleCPU and wanted no more than busyDemand. It
// reports whether it paused it.
func (s *termSession) pauseIfIdle(after time.Duration) bool {
	now := time.Now()
	pid := s.backend.GuestPID()
	cpu, demand := vm.ProcessCPU(pid), vm.ProcessDemand(pid)
	if !s.cpuAt.IsZero() && cpu > 0 {
		span := float64(now.Sub(s.cpuAt))
		if float64(cpu-s.cpuSeen) > idleCPU*span || float64(demand-s.demandSeen) > busyDemand*span {
			s.active() // busy: a command runs that prints nothing
		}
	}
	s.cpuSeen, s.demandSeen, s.cpuAt = cpu, demand, now
	s.mu.Lock()
	quiet := now.Sub(s.lastActive)
	s.mu.Unlock()
	if quiet < after {
		return false
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if s.users == 0 || s.busy > 0 || s.idlePaused || s.backend.Paused() {
		return false // not shown (paused already), running a program, or paused
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	s.backend.Pause(ctx)
	cancel()
	s.idlePaused = s.backend.Paused() // a guest not up is left alone
	return s.idlePaused
}

// active notes that the learner or their shell did something now.
func (s *termSession) active() {
	s.mu.Lock()
	s.lastActive = time.Now()
	s.mu.Unlock()
}

// wake resumes s's guest if it was paused for idleness, before a
// keystroke, a resize or a run reaches it; callers wait here, in order.
// It reports how long the resume took (0: it was running).
func (s *termSession) wake() time.Duration {
	s.active()
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if !s.idlePaused {
		return 0
	}
	start := time.Now()
	s.backend.Resume()
	s.idlePaused = false
	d := time.Since(start)
	if s.resumed != nil {
		s.resumed(d)
	}
	return d
}

// noteResume counts a resume of a guest paused for idleness.
func (t *Terminals) noteResume(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.idle.Resumes++
	t.idle.Resume = d
	t.idle.Longest = max(t.idle.Longest, d)
}
