package faults

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/labproc"
	"github.com/rdmalab/rdmalab/internal/testwait"
	"github.com/rdmalab/rdmalab/sandbox"
)

// startLongRun starts longRun for a new learner and returns once its
// agent runs and has had a moment to emit events.
func startLongRun(t *testing.T, srv *labproc.Server) (*learner, string, int) {
	t.Helper()
	l := newLearner(t, srv.URL)
	l.must("GET", "/", "", 200)
	id := l.submit(longRun)
	agent := waitChild(t, srv.Pid, "agent", 30*time.Second) // labagent, or `labserver agent` without one beside
	l.waitRun(id, 30*time.Second, "running", func(v runView) bool { return v.Status == sandbox.StatusRunning })
	// Let it emit: the events before the fault must survive it.
	time.Sleep(1500 * time.Millisecond)
	return l, id, agent
}

// alive reports whether pid still exists (and is not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

func waitGone(t *testing.T, pid int, timeout time.Duration, what string) {
	t.Helper()
	if !testwait.For(timeout, 20*time.Millisecond, func() bool { return !alive(pid) }) {
		t.Fatalf("%s (pid %d) still running %s later", what, pid, timeout)
	}
}

// checkKept replays a final run and checks that the events from before
// the fault are there and the last one is the final status.
func checkKept(t *testing.T, l *learner, id string, want sandbox.Status) []sandbox.Event {
	t.Helper()
	evs := l.replay(id)
	if len(evs) < 3 {
		t.Fatalf("run %s: only %d events kept: %+v", id, len(evs), evs)
	}
	emitted := 0
	for _, ev := range evs {
		if ev.Type != sandbox.EvStatus {
			emitted++
		}
	}
	if emitted == 0 {
		t.Errorf("run %s: none of the experiment's own events were kept", id)
	}
	last := evs[len(evs)-1]
	if last.Type != sandbox.EvStatus || last.Status != want {
		t.Errorf("run %s: last event %+v, want status %s", id, last, want)
	}
	return evs
}

// killFails SIGKILLs pid (the agent or the guest running the run) and
// waits for the run to fail with a reason that contains word.
func killFails(t *testing.T, l *learner, id string, pid int, timeout time.Duration, word string) runView {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	v := l.waitRun(id, timeout, "a final status", final)
	if v.Status != sandbox.StatusFailed {
		t.Errorf("status %s, want failed", v.Status)
	}
	if !strings.Contains(strings.ToLower(v.Error), word) {
		t.Errorf("the failure reason does not say %q: %q", word, v.Error)
	}
	return v
}

// restartInterrupted starts a new server on dir's database, moves the
// learner to it and checks the run is interrupted with a reason.
func restartInterrupted(t *testing.T, dir string, l *learner, id string) {
	t.Helper()
	srv := start(t, labproc.Options{Dir: dir})
	l.moveTo(srv.URL)
	if v := l.run(id); v.Status != sandbox.StatusInterrupted || v.Error == "" {
		t.Errorf("after the restart: status %s, error %q; want interrupted with a reason", v.Status, v.Error)
	}
}

// TestKillAgentMidRun: the agent running a learner's experiment is killed
// from outside. The run fails with a reason that says so, its events up
// to then are kept, nothing of it keeps running, and the server goes on
// serving and running experiments.
func TestKillAgentMidRun(t *testing.T) {
	srv := start(t, labproc.Options{})
	l, id, agent := startLongRun(t, srv)

	v := killFails(t, l, id, agent, 30*time.Second, "kill")
	checkKept(t, l, id, sandbox.StatusFailed)
	waitGone(t, agent, 5*time.Second, "the killed agent")
	if left := children(srv.Pid, "agent"); len(left) > 0 {
		t.Errorf("agents left running: %v", left)
	}

	// The server is fine: healthy, and the same learner runs again.
	l.must("GET", "/healthz", "", 200)
	next := l.submit(quickRun)
	if v := l.waitRun(next, 30*time.Second, "a final status", final); v.Status != sandbox.StatusDone {
		t.Errorf("the next run ended %s (%s)", v.Status, v.Error)
	}
	t.Logf("killed agent's run: %s, %q", v.Status, v.Error)
}

// TestServerStopMidRun: SIGTERM while a run is going. The server stops
// within its shutdown grace, taking the agent with it; after a restart on
// the same database the run is interrupted with a reason, its events are
// kept and its replay ends; the learner (same cookie) runs again.
func TestServerStopMidRun(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, labproc.Options{Dir: dir})
	l, id, agent := startLongRun(t, srv)

	stopStart := time.Now()
	if err := srv.Stop(30 * time.Second); err != nil {
		t.Fatalf("graceful stop mid-run: %v", err)
	}
	t.Logf("server stopped %s after SIGTERM", time.Since(stopStart).Round(10*time.Millisecond))
	waitGone(t, agent, 5*time.Second, "the agent of the stopped server")

	restartInterrupted(t, dir, l, id)
	checkKept(t, l, id, sandbox.StatusInterrupted)
	next := l.submit(quickRun)
	if v := l.waitRun(next, 30*time.Second, "a final status", final); v.Status != sandbox.StatusDone {
		t.Errorf("a run after the restart ended %s (%s)", v.Status, v.Error)
	}
}

// TestServerKilledMidRun: SIGKILL (no shutdown work at all, like a crash
// or the OOM killer). The orphaned agent ends by itself; the restarted
// server marks the run interrupted with a reason, keeping every event
// stored before the crash.
func TestServerKilledMidRun(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, labproc.Options{Dir: dir})
	l, id, agent := startLongRun(t, srv)
	// What was streamed before the crash: the restart must keep all of it.
	before := len(l.replayLive(id))

	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	// The agent is in its own process group; with its reader gone it must
	// not outlive its run's time limit (tcp-cost: 30 s).
	waitGone(t, agent, 35*time.Second, "the orphaned agent")

	restartInterrupted(t, dir, l, id)
	evs := checkKept(t, l, id, sandbox.StatusInterrupted)
	if len(evs) < before+1 {
		t.Errorf("%d events streamed before the crash, %d kept (with the interrupted status)", before, len(evs))
	}
	l.must("GET", "/healthz", "", 200)
}

// replayLive reads the events a running run has stored so far (the
// stream's backlog up to its ": live" marker).
func (l *learner) replayLive(id string) []sandbox.Event {
	l.t.Helper()
	req, _ := http.NewRequest("GET", l.base+"/api/runs/"+id+"/events", nil)
	res, err := l.c.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	defer res.Body.Close()
	buf := make([]byte, 0, 64<<10)
	tmp := make([]byte, 4096)
	for !strings.Contains(string(buf), "\n: live\n") {
		n, err := res.Body.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if err != nil {
			break
		}
	}
	var evs []sandbox.Event
	for _, line := range strings.Split(string(buf), "\n") {
		if strings.HasPrefix(line, "data: ") {
			evs = append(evs, sandbox.Event{})
		}
	}
	return evs
}
