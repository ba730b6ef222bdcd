package faults

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/labproc"
	"github.com/rdmalab/rdmalab/sandbox"
)

// guestBoot bounds a Soft-RoCE guest boot: TCG on two shared cores.
const guestBoot = 8 * time.Minute

// longGuestRun is an RDMA-backend experiment that keeps the guest busy
// for many seconds under TCG and emits events as it goes.
const longGuestRun = `{"experiment":"pingpong","params":{"transport":"tcp","iterations":20000}}`

// TestKillGuestMidRun: the QEMU guest running a learner's RDMA experiment
// dies (here: SIGKILL, as the OOM killer would). The vm package's own
// tests check that the backend fails the call and boots a fresh guest;
// this one checks what the server keeps: the run is stored as failed with
// a reason naming the guest, the events from before the crash are kept
// and its replay ends, the server stays healthy, and the lab comes back.
func TestKillGuestMidRun(t *testing.T) {
	dir := t.TempDir()
	vmDir := filepath.Join(dir, "vm")
	bin := labserver(t)
	if out, err := exec.Command(bin, "vm", "build", "--dir", vmDir).CombinedOutput(); err != nil {
		t.Fatalf("labserver vm build: %v\n%s", err, out)
	}
	// One guest: the QEMU child this test kills is then the one running
	// the run (a pool of several would leave the run going in another).
	srv := start(t, labproc.Options{Dir: dir, Env: []string{"LAB_BACKEND=vm", "LAB_VM_DIR=" + vmDir, "LAB_GUESTS=1"}})
	l := newLearner(t, srv.URL)
	l.must("GET", "/?lang=en", "", 200)

	// The run waits for the guest to boot, then streams from it.
	id := l.submit(longGuestRun)
	l.waitRun(id, guestBoot, "running with events from the guest", func(v runView) bool {
		return v.Status == sandbox.StatusRunning && len(l.replayLive(id)) > 3
	})
	qemu := waitChild(t, srv.Pid, "qemu-system", 10*time.Second)
	v := killFails(t, l, id, qemu, 2*time.Minute, "guest")
	if v.Backend != "vm" {
		t.Errorf("backend %q, want vm", v.Backend)
	}
	evs := checkKept(t, l, id, sandbox.StatusFailed)
	t.Logf("run after the guest died: %s, %q, %d events kept", v.Status, v.Error, len(evs))

	// The server is fine and the lab comes back: a fresh guest boots and
	// the same learner's next RDMA run completes in it.
	l.must("GET", "/healthz", "", 200)
	// (pingpong: its 5-minute limit covers the reboot; a run's time limit
	// counts the boot it waits for.)
	next := l.submit(`{"experiment":"pingpong","params":{"transport":"tcp","iterations":10}}`)
	if v := l.waitRun(next, guestBoot, "a final status", final); v.Status != sandbox.StatusDone {
		t.Errorf("the next RDMA run ended %s (%s)", v.Status, v.Error)
	}
	if np := children(srv.Pid, "qemu-system"); len(np) == 0 || np[0] == qemu {
		t.Errorf("no fresh guest after the kill: %v", np)
	}
}
