package terminal

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
)

// TestIdlePause: a learner's guest, tab open, is paused once nobody has
// typed for IdlePause and costs no CPU then (its QEMU's /proc/PID/stat);
// keystrokes typed while it is paused, in several writes, resume it and
// reach the shell whole and in order; a command that spins without
// printing keeps its guest running.
func TestIdlePause(t *testing.T) {
	cfg := testConfig(t)
	cfg.Dir = vmtest.OwnCache(t)
	cfg.Accel = vm.AccelTCG
	const after = 2 * time.Second
	terms := &Terminals{Cfg: cfg, Max: 1, Spares: -1, IdlePause: after}
	defer terms.Close()
	ctx := context.Background()
	a, err := terms.Attach(ctx, "learner-a", 24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Detach()
	if err := a.Write([]byte("echo up-$((2+3))\n")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, a, "up-5")
	pid := a.GuestPID()

	// Busy without a word: not idle.
	const spin = 4 * after
	if err := a.Write([]byte(fmt.Sprintf("timeout %d sh -c 'while :; do :; done'; echo spun-$((3*3))\n", int(spin.Seconds())))); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(spin - after/2); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if st := terms.IdleStats(); st.Paused != 0 {
			t.Fatalf("a guest running a busy loop was paused as idle: %+v", st)
		}
	}
	readUntil(t, a, "spun-9")

	// Quiet: paused, tab open, within IdlePause and a few looks.
	deadline := time.Now().Add(after + time.Minute)
	for terms.IdleStats().Paused != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("an idle guest was not paused within %s: %+v", after+time.Minute, terms.IdleStats())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cpu0, at := vm.ProcessCPU(pid), time.Now()
	time.Sleep(5 * time.Second)
	used := vm.ProcessCPU(pid) - cpu0
	share := float64(used) / float64(time.Since(at))
	t.Logf("paused for idleness: QEMU used %s of CPU in %s (%.2f %% of a core)", used, time.Since(at).Round(time.Millisecond), 100*share)
	if share > 0.01 {
		t.Errorf("a guest paused for idleness used %.2f %% of a core (want ~0)", 100*share)
	}
	if terms.IdleStats().Paused != 1 {
		t.Fatalf("the guest was resumed with nobody typing: %+v", terms.IdleStats())
	}

	// Typed while paused, in pieces: resumed, and the shell gets it all.
	start := time.Now()
	for _, k := range []string{"ec", "ho ", "back", "-$((5*5))", "\n"} {
		if err := a.Write([]byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	readUntil(t, a, "back-25")
	st := terms.IdleStats()
	t.Logf("keystroke → echo after the pause: %s; the resume (QMP cont): %s", time.Since(start).Round(time.Millisecond), st.Resume)
	if st.Paused != 0 || st.Resumes != 1 || st.Pauses != 1 || st.Resume <= 0 {
		t.Errorf("after a keystroke: %+v, want one pause and one resume, none paused", st)
	}
}
