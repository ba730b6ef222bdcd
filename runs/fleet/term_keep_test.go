package fleet

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/terminals/placement"
)

// TestKeptMachineOnWorker: a learner's terminal machine on a real
// `labserver worker --terminals 1` process is kept on that worker's disk:
// the worker stopped (SIGTERM) saves the machine in use, and the same
// worker started again restores it at the learner's next attach — the
// file they made is there, and the attach says so ("restored").
func TestKeptMachineOnWorker(t *testing.T) {
	env := guestWorkerEnv(t, "boots Soft-RoCE guests in worker processes")
	s := startServer(t, "127.0.0.1:0")
	defer s.Close()
	args := []string{"--host-slots", "0", "--terminals", "1", "--keep-dir", t.TempDir(), "--keep-stop-wait", "3m"}
	w := startWorkerEnv(t, env, s.Addr(), "ka", token, args...)
	waitTermWorker(t, s, "ka")
	p := &placement.Placement{Fleet: s}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute) // the image may be built first
	defer cancel()

	c, err := p.Attach(ctx, "ann", 24, 80, nil)
	if err != nil {
		t.Fatalf("attach on worker ka: %v\n%s", err, w.out.String())
	}
	sc := watch(c)
	_ = c.Write([]byte("echo $((6*7)) > ~/mark; echo made-$(cat ~/mark)\r"))
	sc.waitFor(t, "made-42")

	// The worker stops as systemd stops it: the machine in use is saved.
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- w.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(5 * time.Minute):
		t.Fatalf("the worker did not stop within 5 min of SIGTERM:\n%s", w.out.String())
	}
	if out := w.out.String(); !strings.Contains(out, "learners' machines saved before stopping") || !strings.Contains(out, "saved=1") {
		t.Fatalf("the stopping worker did not save the machine in use:\n%s", out)
	}
	select {
	case <-sc.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the terminal on the stopped worker did not end")
	}

	// The same worker again: the learner's next attach restores their machine.
	w = startWorkerEnv(t, env, s.Addr(), "ka", token, args...)
	waitTermWorker(t, s, "ka")
	c, err = p.Attach(ctx, "ann", 24, 80, nil)
	if err != nil {
		t.Fatalf("attach after the restart: %v\n%s", err, w.out.String())
	}
	defer c.Detach()
	if note := c.KeptNote(); note != "restored" {
		t.Errorf("kept note %q after the restart, want restored", note)
	}
	sc = watch(c)
	_ = c.Write([]byte("echo back-$(cat ~/mark 2>/dev/null || echo none)\r"))
	sc.waitFor(t, "back-42")
	if v, err := p.Verify(ctx, "ann", []byte("grep -qx 42 /home/learner/mark"), "en"); err != nil || !v.Passed {
		t.Fatalf("check on the restored machine: %+v, %v", v, err)
	}
}
