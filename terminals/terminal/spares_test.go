package terminal

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vm"
)

// TestSpareTarget: the spares kept are the class less the learners in, at
// least one, within the places left; -1 keeps none.
func TestSpareTarget(t *testing.T) {
	for _, c := range []struct {
		name            string
		spares, max, in int
		want            int
	}{
		{"default one", 0, 2, 0, 1},
		{"class of 20, nobody in", 20, 50, 0, 20},
		{"class of 20, 15 in", 20, 50, 15, 5},
		{"class in: one for the next", 20, 50, 25, 1},
		{"places bound the class", 20, 8, 3, 5},
		{"full: one for after a reclaim", 20, 8, 8, 1},
		{"none", -1, 8, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			terms := &Terminals{Max: c.max, Spares: c.spares}
			terms.init()
			defer terms.Close()
			terms.mu.Lock()
			for i := range c.in {
				terms.sessions[fmt.Sprint("l", i)] = &termSession{}
			}
			got := terms.spareTarget()
			terms.sessions = map[string]*termSession{}
			terms.mu.Unlock()
			if got != c.want {
				t.Errorf("spareTarget = %d, want %d", got, c.want)
			}
		})
	}
}

// TestClassFromSpares: with spares warm for a class of three, three
// learners pressing open at once are each served from a paused spare (no
// restore on demand), each in a guest of their own that answers; after
// them one spare is kept for the next. Free memory bounds the spares:
// with room for one more guest only one is started.
func TestClassFromSpares(t *testing.T) {
	const class = 3
	cfg := testConfig(t)
	cfg.Accel = vm.AccelTCG
	terms := &Terminals{Cfg: cfg, Max: class + 1, Spares: class}
	defer terms.Close()
	terms.Warm()
	ready := waitSpares(t, terms, class)
	pids := map[int]bool{}
	terms.mu.Lock()
	for _, s := range terms.spares {
		pids[s.backend.GuestPID()] = true
	}
	terms.mu.Unlock()
	if len(pids) != class {
		t.Fatalf("%d spares in %d QEMUs: %v", class, len(pids), pids)
	}
	t.Logf("spares ready: %+v", ready)

	ctx := context.Background()
	var wg sync.WaitGroup
	got := make([]int, class)
	for i := range class {
		wg.Go(func() {
			a, err := terms.Attach(ctx, fmt.Sprint("learner-", i), 24, 80)
			if err != nil {
				t.Error(err)
				return
			}
			defer a.Detach()
			if err := a.Write(fmt.Appendf(nil, "echo hi-$((%d*7))\n", i+1)); err != nil {
				t.Error(err)
				return
			}
			readUntil(t, a, fmt.Sprintf("hi-%d", (i+1)*7))
			got[i] = a.GuestPID()
		})
	}
	wg.Wait()
	st := terms.SpareStats()
	if st.FromSpare != class || st.Started != 0 {
		t.Errorf("served from spares %d, started on demand %d; want %d and 0", st.FromSpare, st.Started, class)
	}
	seen := map[int]bool{}
	for i, pid := range got {
		if !pids[pid] || seen[pid] {
			t.Errorf("learner %d is in QEMU %d: not one of the spares %v, or shared", i, pid, pids)
		}
		seen[pid] = true
	}
	// The class is in: one spare for the next learner, started in the
	// background after them.
	after := waitSpares(t, terms, 1)
	if after.Target != 1 {
		t.Errorf("after the class: target %d spares, want 1", after.Target)
	}

	// Memory bounds the spares: room for one more guest starts one, not
	// the class.
	bounded := &Terminals{Cfg: cfg, Max: class, Spares: class}
	defer bounded.Close()
	var limit atomic.Int64 // learner guests memory holds, spares included
	limit.Store(1)
	bounded.Room = func() int {
		bounded.mu.Lock()
		defer bounded.mu.Unlock()
		return int(limit.Load()) - len(bounded.spares)
	}
	bounded.Warm()
	waitSpares(t, bounded, 1)
	bounded.kickRefill()
	time.Sleep(time.Second) // a refiller that ignored the room would start a second now
	if st := bounded.SpareStats(); st.Ready+st.Starting != 1 {
		t.Errorf("with room for one guest: %+v, want one spare", st)
	}
	limit.Store(0) // something else took the memory: the spare goes
	bounded.kickRefill()
	for deadline := time.Now().Add(time.Minute); ; {
		st := bounded.SpareStats()
		if st.Ready+st.Starting == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("memory short for a minute, the spare is kept: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitSpares waits until n spares are paused and ready.
func waitSpares(t *testing.T, terms *Terminals, n int) SpareStats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		st := terms.SpareStats()
		if st.Ready >= n {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("spares not ready after 5 minutes: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHungSpareNotKept: a spare whose guest hangs after its restore (seen
// under TCG: a vCPU spinning a core, no prompt, no answer to pings) is not
// kept as ready; it is given up and another restored, and the learner who
// opens a terminal gets a shell that answers. The hang is made here by
// stopping the first spare's QEMU (SIGSTOP) before its shell opens.
func TestHungSpareNotKept(t *testing.T) {
	cfg := testConfig(t)
	cfg.Accel = vm.AccelTCG
	var hung atomic.Int64
	terms := &Terminals{Cfg: cfg, Max: 2, Spares: 1, SpareRetry: time.Second}
	terms.spareUp = func(s *termSession) {
		pid := s.backend.GuestPID()
		if hung.CompareAndSwap(0, int64(pid)) {
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Error(err)
			}
		}
	}
	defer terms.Close()
	defer func() {
		if pid := hung.Load(); pid > 0 {
			_ = syscall.Kill(int(pid), syscall.SIGCONT) // if it outlived the test
		}
	}()
	// The first learner guest makes the snapshot spares restore from.
	a, err := terms.Attach(context.Background(), "first", 24, 80)
	if err != nil {
		t.Fatal(err)
	}
	a.Detach()
	st := waitSpares(t, terms, 1)
	if hung.Load() == 0 {
		t.Fatal("no spare was hung")
	}
	terms.mu.Lock()
	var pids []int
	for _, s := range terms.spares {
		if s.backend.Paused() {
			pids = append(pids, s.backend.GuestPID())
			s.mu.Lock()
			if len(s.scroll) == 0 {
				t.Errorf("a spare is ready (paused) without its prompt: QEMU %d", s.backend.GuestPID())
			}
			s.mu.Unlock()
		}
	}
	terms.mu.Unlock()
	if slices.Contains(pids, int(hung.Load())) {
		t.Fatalf("the hung guest (QEMU %d) is kept as a ready spare: %v", hung.Load(), pids)
	}
	t.Logf("spares %+v; ready in QEMUs %v, the hung one was %d", st, pids, hung.Load())
	b, err := terms.Attach(context.Background(), "learner", 24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Detach()
	if err := b.Write([]byte("echo up-$((6*7))\n")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, b, "up-42")
	if b.GuestPID() == int(hung.Load()) {
		t.Errorf("the learner got the hung guest")
	}
}
