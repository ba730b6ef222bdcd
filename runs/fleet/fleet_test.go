package fleet

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/rdmalab/rdmalab/internal/labproc"
	"github.com/rdmalab/rdmalab/internal/syncbuf"
	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/hostexp"
	"github.com/rdmalab/rdmalab/sandbox/rdmaexp"
)

// bin is labserver, built on first use into TestMain's folder.
var bin labproc.Once

// guestCache is the guest image's folder the worker processes with guests
// share (LAB_VM_DIR): the first one builds it, the others restore from it.
var guestCache string

// guestWorkerEnv is the environment of worker processes with guests (the
// shared image, TCG); tests that boot them are skipped with -short (why
// says what they boot) and without QEMU.
func guestWorkerEnv(tb testing.TB, why string) []string {
	tb.Helper()
	if testing.Short() {
		tb.Skip(why + " (-short skips it)")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		tb.Skipf("no QEMU (make deps-test installs it): %v", err)
	}
	return []string{"LAB_VM_DIR=" + guestCache, "LAB_VM_ACCEL=tcg"}
}

// TestMain makes the folder labserver is built into, on first use.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fleet-test-")
	if err != nil {
		panic(err)
	}
	bin.Dir = dir
	guestCache = dir + "/vm"
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// labserverBin builds labserver (or takes $LAB_TEST_LABSERVER) the first
// time a test needs it: the workers are separate `labserver worker`
// processes, as on other machines (labagent beside it: the worker with a
// guest puts it in the image). Under -short such tests skip (the build and
// the processes take minutes on a busy machine); the in-process tests run.
func labserverBin(t testing.TB) string {
	t.Helper()
	return bin.Get(t, "builds labserver and starts worker processes")
}

const token = "s3cret-class-token"

func startServer(t testing.TB, listen string) *Server {
	t.Helper()
	s, err := Start(ServerConfig{Listen: listen, Token: token, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// workerProc is one `labserver worker` process.
type workerProc struct {
	cmd *exec.Cmd
	out *syncbuf.Buffer
}

func startWorker(t testing.TB, addr, name, tok string, extra ...string) *workerProc {
	t.Helper()
	return startWorkerEnv(t, nil, addr, name, tok, extra...)
}

func startWorkerEnv(t testing.TB, env []string, addr, name, tok string, extra ...string) *workerProc {
	t.Helper()
	args := append([]string{"worker", "--join", "nats://" + addr, "--token", tok, "--name", name, "--backend", "none", "--host-slots", "1"}, extra...)
	return startWorkerArgs(t, env, name, args...)
}

// startWorkerArgs starts `labserver ARGS…` as worker name.
func startWorkerArgs(t testing.TB, env []string, name string, args ...string) *workerProc {
	t.Helper()
	cmd := exec.Command(labserverBin(t), args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &workerProc{cmd: cmd, out: out}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("worker %s said:\n%s", name, out.String())
		}
	})
	return w
}

// waitWorkers waits until the server has heard from n workers.
func waitWorkers(t *testing.T, s *Server, n int) {
	t.Helper()
	for i := 0; ; i++ {
		if len(s.Workers()) >= n {
			return
		}
		if i > 600 {
			t.Fatalf("%d workers joined, want %d", len(s.Workers()), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sink records every run's events.
type sink struct {
	mu     sync.Mutex
	events map[string][]sandbox.Event
	final  chan string
}

func newSink() *sink {
	return &sink{events: map[string][]sandbox.Event{}, final: make(chan string, 1000)}
}

func (s *sink) RunEvent(id string, ev sandbox.Event) {
	s.mu.Lock()
	s.events[id] = append(s.events[id], ev)
	s.mu.Unlock()
	if ev.Type == sandbox.EvStatus && ev.Status.Final() {
		s.final <- id
	}
}

func (s *sink) get(id string) []sandbox.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sandbox.Event(nil), s.events[id]...)
}

func last(evs []sandbox.Event) sandbox.Event { return evs[len(evs)-1] }

// newRunner runs every experiment on the workers only.
func newRunner(s *Server, sk *sink) *runner.Runner {
	reg := sandbox.NewRegistry()
	hostexp.Register(reg)
	rdmaexp.Register(reg)
	host := &Mix{Need: sandbox.NeedHost, Fleet: s}
	rdma := &Mix{Need: sandbox.NeedRDMA, Fleet: s}
	return runner.New(runner.Config{Registry: reg, Sink: sk, Concurrency: 64, QueueMax: 100,
		Backend: func(n sandbox.Need) sandbox.Backend {
			if n == sandbox.NeedRDMA {
				return rdma
			}
			return host
		}})
}

func memlock() map[string]any {
	return map[string]any{"limit": "8388608", "size": 1 << 20, "ipc_lock": "drop"}
}

// TestWorkersBurst: a burst of runs spreads over two worker processes;
// every run ends done, its events stored in order, and its running status
// names the worker it ran on.
func TestWorkersBurst(t *testing.T) {
	labserverBin(t) // worker processes: built first, skipped under -short
	s := startServer(t, "127.0.0.1:0")
	defer s.Close()
	startWorker(t, s.Addr(), "w1", token)
	startWorker(t, s.Addr(), "w2", token)
	waitWorkers(t, s, 2)
	sk := newSink()
	r := newRunner(s, sk)
	defer r.Close()
	var ids []string
	for i := range 8 {
		info, err := r.Submit(fmt.Sprint("learner", i), "memlock", memlock())
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	for range ids {
		<-sk.final
	}
	where := map[string]int{}
	for _, id := range ids {
		evs := sk.get(id)
		if f := last(evs); f.Status != sandbox.StatusDone {
			t.Fatalf("run %s: %s (%s); events %+v", id, f.Status, f.Message, evs)
		}
		for i, ev := range evs {
			if ev.Seq != int64(i+1) {
				t.Fatalf("run %s: event %d has seq %d", id, i, ev.Seq)
			}
			if ev.Type == sandbox.EvStatus && ev.Status == sandbox.StatusRunning && strings.Contains(ev.Backend, "@") {
				where[ev.Backend]++
			}
		}
	}
	if where["host@w1"] == 0 || where["host@w2"] == 0 {
		t.Fatalf("runs per worker %v: want both workers used", where)
	}
	t.Logf("runs per worker: %v", where)
}

// TestWorkerKilledMidRun: the worker running a run is killed; the run
// ends failed with a reason that names the worker, and nothing hangs.
func TestWorkerKilledMidRun(t *testing.T) {
	labserverBin(t) // worker processes: built first, skipped under -short
	s := startServer(t, "127.0.0.1:0")
	defer s.Close()
	w := startWorker(t, s.Addr(), "doomed", token)
	waitWorkers(t, s, 1)
	sk := newSink()
	r := newRunner(s, sk)
	defer r.Close()
	info, err := r.Submit("ann", "tcp-cost", map[string]any{"seconds": 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		started := false
		for _, ev := range sk.get(info.ID) {
			started = started || (ev.Type == sandbox.EvStatus && ev.Backend == "host@doomed")
		}
		if started {
			break
		}
		if i > 600 {
			t.Fatalf("the run never started on the worker: %+v", sk.get(info.ID))
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	<-sk.final
	f := last(sk.get(info.ID))
	if f.Status != sandbox.StatusFailed || !strings.Contains(f.Message, "doomed") || !strings.Contains(f.Message, "stopped answering") {
		t.Fatalf("final %s: %q, want failed naming the worker that stopped answering", f.Status, f.Message)
	}
	t.Logf("reason: %s", f.Message)
}

// TestUnstartedRunGoesToAnotherWorker: a worker takes a job from the
// queue and dies before starting it (never claims it); after the ack wait
// the job goes to another worker and the run ends done there.
func TestUnstartedRunGoesToAnotherWorker(t *testing.T) {
	labserverBin(t) // worker processes: built first, skipped under -short
	s := startServer(t, "127.0.0.1:0")
	defer s.Close()
	// No worker yet: the Mix has no slot, so use the fleet directly.
	done := make(chan error, 1)
	var events []sandbox.Event
	var mu sync.Mutex
	go func() {
		done <- s.Exec(t.Context(), sandbox.NeedHost, sandbox.NewSession(sandbox.Request{RunID: "r-unstarted", Experiment: "memlock",
			Params: sandbox.Params{"limit": "8388608", "size": int64(1 << 20), "ipc_lock": "drop"}}, nil, func(ev sandbox.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() }))
	}()
	// The dying worker: takes the job, then its connection is gone.
	nc, err := Connect(WorkerConfig{URL: "nats://" + s.Addr(), Token: token, Name: "dying"})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	cons, err := js.Consumer(t.Context(), stream, consumerName(sandbox.NeedHost))
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	took := 0
	for range batch.Messages() {
		took++
	}
	nc.Close()
	if took != 1 {
		t.Fatalf("the dying worker took %d jobs, want 1", took)
	}
	startWorker(t, s.Addr(), "heir", token)
	if err := <-done; err != nil {
		t.Fatalf("the run after its first worker died unstarted: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) == 0 || events[0].Backend != "host@heir" {
		t.Fatalf("events %+v: want the run started on heir", events)
	}
}

func TestWrongCredentialsRefused(t *testing.T) {
	labserverBin(t) // worker processes: built first, skipped under -short
	s := startServer(t, "127.0.0.1:0")
	defer s.Close()
	w := startWorker(t, s.Addr(), "intruder", "not-the-token")
	err := w.cmd.Wait()
	if err == nil {
		t.Fatal("a worker with a wrong token kept running")
	}
	if out := strings.ToLower(w.out.String()); !strings.Contains(out, "authorization") {
		t.Fatalf("worker output %q: want an authorization error", out)
	}
	time.Sleep(2 * beatEvery)
	if ws := s.Workers(); len(ws) != 0 {
		t.Fatalf("workers %v joined with a wrong token", ws)
	}
}

// TestServerRestartWithWorkers: the lab server goes away and comes back on
// the same address; its worker reconnects and serves the new server.
func TestServerRestartWithWorkers(t *testing.T) {
	labserverBin(t) // worker processes: built first, skipped under -short
	s := startServer(t, "127.0.0.1:0")
	addr := s.Addr()
	startWorker(t, addr, "steady", token)
	waitWorkers(t, s, 1)
	s.Close()
	s = startServer(t, addr)
	defer s.Close()
	waitWorkers(t, s, 1)
	sk := newSink()
	r := newRunner(s, sk)
	defer r.Close()
	info, err := r.Submit("ann", "memlock", memlock())
	if err != nil {
		t.Fatal(err)
	}
	<-sk.final
	if f := last(sk.get(info.ID)); f.Status != sandbox.StatusDone {
		t.Fatalf("run after the restart: %s (%s)", f.Status, f.Message)
	}
}

// TestBurstOverGuestAndHostWorkers: three workers — one with its own
// Soft-RoCE guest, two on the host backend only — share a burst of RDMA
// and host runs; the RDMA ones can only run in the guest worker's guest.
//
// Then lesson 03's interactive verbs-steps runs on guesty (the only place
// its RDMA can run) and is driven to its end from here, a deliberate
// mistake included: the learner's commands travel runner → fleet server →
// NATS → `labserver worker` → its guest → the agent, and the device's
// answer comes back the same way (the worker path once dropped the command
// stream: "it needs a command stream").
func TestBurstOverGuestAndHostWorkers(t *testing.T) {
	env := guestWorkerEnv(t, "boots a Soft-RoCE guest")
	s := startServer(t, "127.0.0.1:0")
	defer s.Close()
	startWorkerEnv(t, env, s.Addr(), "guesty", token, "--backend", "vm", "--guests", "1")
	startWorker(t, s.Addr(), "h1", token)
	startWorker(t, s.Addr(), "h2", token)
	waitWorkers(t, s, 3)
	// The guest worker lists its guest's devices once the guest is up
	// (built and booted under TCG: minutes on a loaded machine).
	up := func() bool {
		for _, w := range s.Workers() {
			if w.Name == "guesty" && len(w.Devices) > 0 {
				return true
			}
		}
		return false
	}
	for i := 0; !up(); i++ {
		if i > 6000 {
			t.Fatalf("the guest worker's guest never came up; workers %+v", s.Workers())
		}
		time.Sleep(100 * time.Millisecond)
	}
	sk := newSink()
	r := newRunner(s, sk)
	defer r.Close()
	var ids []string
	for i := range 9 {
		exp, params := "memlock", memlock()
		if i%3 == 0 {
			exp, params = "qp-states", nil
		}
		info, err := r.Submit(fmt.Sprint("learner", i), exp, params)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	for range ids {
		<-sk.final
	}
	where := map[string]int{}
	for _, id := range ids {
		evs := sk.get(id)
		if f := last(evs); f.Status != sandbox.StatusDone {
			t.Fatalf("run %s: %s (%s)", id, f.Status, f.Message)
		}
		for _, ev := range evs {
			if ev.Type == sandbox.EvStatus && ev.Status == sandbox.StatusRunning && strings.Contains(ev.Backend, "@") {
				where[ev.Backend]++
			}
		}
	}
	if where["vm@guesty"] != 3 {
		t.Fatalf("runs per place %v: want the 3 RDMA runs in guesty's guest", where)
	}
	t.Logf("runs per place: %v", where)

	driveVerbsSteps(t, r, sk)
}

// driveVerbsSteps walks verbs-steps on a worker as the lesson page does,
// with the post-before-RTS mistake on the way, and checks each step's
// answer and the run's end.
func driveVerbsSteps(t *testing.T, r *runner.Runner, sk *sink) {
	info, err := r.Submit("stepper", "verbs-steps", nil)
	if err != nil {
		t.Fatal(err)
	}
	steps := func() []sandbox.Event {
		var out []sandbox.Event
		for _, ev := range sk.get(info.ID) {
			if ev.Type == sandbox.EvStep {
				out = append(out, ev)
			}
			if ev.Type == sandbox.EvStatus && ev.Status.Final() && ev.Status != sandbox.StatusDone {
				t.Fatalf("verbs-steps on the worker ended %s: %s; events %+v", ev.Status, ev.Message, sk.get(info.ID))
			}
		}
		return out
	}
	waitStep := func(n int) sandbox.Event {
		t.Helper()
		for i := 0; ; i++ {
			if s := steps(); len(s) >= n {
				return s[n-1]
			}
			if i > 3000 {
				t.Fatalf("step %d never came; events %+v", n, sk.get(info.ID))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if ev := waitStep(1); ev.Name != "start" {
		t.Fatalf("first step %q, want start", ev.Name)
	}
	walk := []struct{ cmd, step, status string }{
		{"next", "open", ""}, {"next", "pd", ""}, {"next", "mr", ""}, {"next", "cq", ""}, {"next", "qp", ""},
		{"next", "init", ""}, {"next", "exchange", ""}, {"next", "rtr", ""},
		{"post-early", "rts", "EINVAL"}, // the mistake: the device refuses a SEND before RTS
		{"next", "rts", ""}, {"next", "write", ""}, {"next", "poll-write", ""},
		{"next", "send", ""}, {"next", "poll-send", ""}, {"next", "teardown", ""},
	}
	for i, w := range walk {
		if err := r.Command(info.ID, "stepper", sandbox.Command{Cmd: w.cmd}); err != nil {
			t.Fatalf("command %s: %v", w.cmd, err)
		}
		ev := waitStep(i + 2)
		if ev.Name != w.step || ev.ErrnoName != w.status || ev.OK == nil || *ev.OK != (w.status == "") {
			t.Fatalf("%s → step %s status %q ok %v, want step %s status %q", w.cmd, ev.Name, ev.ErrnoName, ev.OK, w.step, w.status)
		}
		t.Logf("%-10s → %-10s %s", w.cmd, ev.Name, ev.ErrnoName)
	}
	for i := 0; ; i++ {
		evs := sk.get(info.ID)
		if f := last(evs); f.Type == sandbox.EvStatus && f.Status.Final() {
			if f.Status != sandbox.StatusDone || f.Backend != "vm@guesty" {
				t.Fatalf("verbs-steps ended %s on %q: %s", f.Status, f.Backend, f.Message)
			}
			return
		}
		if i > 600 {
			t.Fatalf("verbs-steps did not end after teardown; events %+v", evs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
