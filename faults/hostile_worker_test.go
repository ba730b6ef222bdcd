package faults

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/rdmalab/rdmalab/internal/attackcost"
	"github.com/rdmalab/rdmalab/internal/labproc"
	"github.com/rdmalab/rdmalab/internal/testwait"
	"github.com/rdmalab/rdmalab/sandbox"
)

// workerKey makes a worker's nkey: its seed in a file, its public key.
func workerKey(t *testing.T, name string) (seedFile, pub string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ = kp.PublicKey()
	seedFile = filepath.Join(t.TempDir(), name+".nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return seedFile, pub
}

// freeAddr is a loopback address no one listens on (for the lab's NATS).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestOneWorkerCannotFailAnotherRealServer is issue 43, fall 4, as the
// attack met bin/labserver (runs/fleet's TestOneWorkerCannotFailAnother
// runs the fleet server in the test process): worker B is a `labserver
// worker` process, and A, with its own valid nkey, floods its own
// heartbeat, event and terminal-output subjects from four connections
// (512 KiB events and 1 MiB terminal output, as fast as NATS takes them;
// the one run of 64 MiB of events cost labserver 65 → 302 MB).
// Meanwhile four honest learners each start a 10 s host experiment:
// every run ends done (on the lab's own host slots here: the runs that
// must reach B during the flood are runs/fleet's test), the lab never
// blames B, and labserver stays under attackcost's bounds.
func TestOneWorkerCannotFailAnotherRealServer(t *testing.T) {
	bin := labserver(t)
	seedA, pubA := workerKey(t, "noisy")
	seedB, pubB := workerKey(t, "honest")
	natsAddr := freeAddr(t)
	srv := start(t, labproc.Options{Env: []string{"LAB_WORKERS_LISTEN=" + natsAddr,
		"LAB_NATS_NKEYS=noisy=" + pubA + ",honest=" + pubB}})
	b := exec.Command(bin, "worker", "--join", "nats://"+natsAddr, "--nkey-seed", seedB, "--name", "honest",
		"--backend", "none", "--host-slots", "2")
	bLog := &attackcost.LogCounter{}
	b.Stdout, b.Stderr = bLog, bLog
	b.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-b.Process.Pid, syscall.SIGKILL); _ = b.Wait() })
	// B is listed once the lab's log says it joined.
	if !testwait.For(60*time.Second, 100*time.Millisecond, func() bool {
		return strings.Contains(srv.Logs(), "msg=\"worker joined\" worker=honest")
	}) {
		t.Fatalf("worker B never joined:\n%s", srv.Tail(20))
	}

	server := attackcost.Watch(srv.Pid, srv.LogBytes)
	worker := attackcost.Watch(b.Process.Pid, bLog.Len)
	flood, stop := context.WithCancel(context.Background())
	defer stop()
	var sent atomic.Int64
	opt, err := nats.NkeyOptionFromSeed(seedA)
	if err != nil {
		t.Fatal(err)
	}
	beat, _ := json.Marshal(map[string]any{"name": "noisy", "backends": map[string]int{"host": 1}, "backend": "none"})
	big, _ := json.Marshal(map[string]any{"n": 1, "event": sandbox.Event{Type: sandbox.EvLog, Message: strings.Repeat("x", 512<<10)}})
	out := make([]byte, 1<<20)
	for range 4 {
		nc, err := nats.Connect("nats://"+natsAddr, opt, nats.CustomInboxPrefix("_INBOX.noisy"))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		for subj, msg := range map[string][]byte{"lab.hb.noisy": beat, "lab.ev.noisy.r-none": big, "lab.tout.noisy.x.out": out} {
			go func() {
				for flood.Err() == nil {
					if nc.Publish(subj, msg) == nil {
						sent.Add(int64(len(msg)))
					}
				}
			}()
		}
	}
	for sent.Load() < 64<<20 {
		time.Sleep(10 * time.Millisecond)
	}
	// Four honest learners start a long run each at once: the lab's own
	// host slots (one per CPU, two here) take two, and B the others.
	var ls []*learner
	var ids []string
	for range 4 {
		l := newLearner(t, srv.URL)
		l.must("GET", "/", "", 200)
		ls, ids = append(ls, l), append(ids, l.submit(longRun))
	}
	onB := 0
	for i, l := range ls {
		v := l.waitRun(ids[i], 90*time.Second, "a final status", final)
		t.Logf("honest run %d during A's flood (%d MiB sent so far): %s on %s %s", i, sent.Load()>>20, v.Status, v.Backend, v.Error)
		if v.Status != sandbox.StatusDone {
			t.Errorf("an honest learner's run during A's flood: %s on %s (%s), want done", v.Status, v.Backend, v.Error)
		}
		if v.Backend == "host@honest" {
			onB++
		}
	}
	stop()
	sc, wc := server.Stop(), worker.Stop()
	t.Logf("A sent %d MiB", sent.Load()>>20)
	sc.Check(t, "fall 4 worker A floods its subjects (real labserver)")
	wc.Check(t, "fall 4 worker A floods its subjects: worker B's process")
	// Where the runs went is reported, not required: the lab keeps host
	// runs on its own slots while it has them (runs/fleet's test has B's
	// runs during the flood).
	t.Logf("%d of 4 honest runs on B", onB)
	if logs := srv.Logs(); strings.Contains(logs, `worker=honest`) && (strings.Contains(logs, "broke a bound") || strings.Contains(logs, "stopped answering")) {
		t.Errorf("the lab blamed B for A's flood:\n%s", srv.Tail(40))
	}
}
