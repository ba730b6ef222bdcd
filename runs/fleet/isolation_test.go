package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/attackcost"
	"github.com/rdmalab/rdmalab/internal/syncbuf"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/terminals/placement"
)

// TestOneWorkerCannotFailAnother is issue 43, fall 4: the server had one
// subscription, with one pending limit, for every worker's events and
// one for every worker's heartbeats; worker A flooding its own subjects
// made the server drop worker B's events and heartbeats, and B's honest
// runs failed in B's name ("broke a bound", "stopped answering"). Here B
// is a real `labserver worker` process and A, with its own valid nkey,
// floods its own heartbeat and event subjects as fast as it can (512 KiB
// events, beats back to back) while three runs go to B: each ends done
// on B, and B stays listed throughout. What the flood cost is measured
// twice: the test process, which holds the server (its fleet and NATS
// server, as in labserver, and A's own publishers), and B's process.
func TestOneWorkerCannotFailAnother(t *testing.T) {
	labserverBin(t) // the worker process: built first, skipped under -short
	seedA, ka := newKey(t, "noisy")
	seedB, kb := newKey(t, "honest")
	var logs syncbuf.Buffer
	s, err := Start(ServerConfig{Listen: "127.0.0.1:0", Workers: []WorkerKey{ka, kb}, StoreDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	wb := startNkeyWorker(t, s.Addr(), "honest", seedB)
	waitWorkers(t, s, 1)
	server := attackcost.WatchSelf(logs.Len)
	worker := attackcost.Watch(wb.cmd.Process.Pid, wb.out.Len)

	flood, stop := context.WithCancel(t.Context())
	defer stop()
	var sent atomic.Int64
	beat, _ := json.Marshal(Worker{Backends: map[string]int{"host": 1}, Backend: "none"})
	small := forged(1, sandbox.Frame{Event: &sandbox.Event{Type: sandbox.EvLog, Message: "x"}})
	big := forged(1, sandbox.Frame{Event: &sandbox.Event{Type: sandbox.EvLog, Message: strings.Repeat("x", 512<<10)}})
	// Four connections of A's (one credential may open several), each
	// publishing as fast as it can.
	for range 4 {
		rg := connectRogue(t, s.Addr(), "noisy", nkeyOpt(t, seedA))
		for _, f := range []func(){
			func() { _ = rg.nc.Publish(subjHeartbeat+"noisy", beat); sent.Add(int64(len(beat))) },
			func() { _ = rg.nc.Publish(subjEvents+"noisy.r-none", small); sent.Add(int64(len(small))) },
			func() { _ = rg.nc.Publish(subjEvents+"noisy.r-none", big); sent.Add(int64(len(big))) },
		} {
			go func() {
				for flood.Err() == nil {
					f()
				}
			}()
		}
	}

	sk := newSink()
	r := newRunner(s, sk)
	defer r.Close()
	lost := 0
	for i := range 3 {
		info, err := r.Submit("ann", "memlock", memlock())
		if err != nil {
			t.Fatal(err)
		}
		for id := range sk.final {
			if id == info.ID {
				break
			}
		}
		f := last(sk.get(info.ID))
		t.Logf("run %d during A's flood (%d MiB sent so far): %s on %s %s", i, sent.Load()>>20, f.Status, f.Backend, f.Message)
		if f.Status != sandbox.StatusDone || f.Backend != "host@honest" {
			t.Errorf("B's run %d during A's flood: %s on %s (%s), want done on host@honest", i, f.Status, f.Backend, f.Message)
		}
		if !s.alive("honest") {
			lost++
		}
	}
	stop()
	server.Stop().Check(t, "fall 4 worker A floods its subjects: the server")
	worker.Stop().Check(t, "fall 4 worker A floods its subjects: worker B's process")
	if lost > 0 {
		t.Errorf("B was not listed alive after %d of 3 runs during A's flood", lost)
	}
	if sent.Load() < 64<<20 {
		t.Logf("A sent only %d MiB: the flood was weaker than the issue's", sent.Load()>>20)
	}
}

// TestOneWorkerCannotDrownAnothersTerminals: the terminals' output of
// every worker came through one server subscription with one pending
// limit, so worker A flooding its own terminal-output subject made the
// server drop worker B's: the answers to B's opens (the learner's attach
// then waited until B was blamed for not answering) and B's shells'
// output. Each nkey worker's terminal output now has its own connection
// and pending limit. A, with its own valid nkey, floods from four
// connections while learners attach to B's shells and B writes numbered
// lines into each: every attach is answered, every line arrives, and B
// is never blamed.
func TestOneWorkerCannotDrownAnothersTerminals(t *testing.T) {
	if testing.Short() {
		t.Skip("floods gigabytes through the embedded NATS server for seconds: not in the quick tier")
	}
	defer func(d time.Duration) { termOpenWait = d }(termOpenWait)
	termOpenWait = 20 * time.Second
	seedA, ka := newKey(t, "noisy")
	seedB, kb := newKey(t, "honest")
	var logs syncbuf.Buffer
	s, err := Start(ServerConfig{Listen: "127.0.0.1:0", Workers: []WorkerKey{ka, kb}, StoreDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := connectRogue(t, s.Addr(), "honest", nkeyOpt(t, seedB))
	const lines = 200
	handWorker(t, b, "honest", 64, func(id string) {
		for i := range lines {
			_ = b.nc.Publish(subjTermOut+"honest."+id+".out", fmt.Appendf(nil, "line-%03d\n", i))
			time.Sleep(2 * time.Millisecond) // well within a terminal's rate
		}
		_ = b.nc.Publish(subjTermOut+"honest."+id+".out", []byte("END-OF-LINES\n"))
	})
	waitTermWorker(t, s, "honest")

	cost := attackcost.WatchSelf(logs.Len)
	flood, stop := context.WithCancel(t.Context())
	defer stop()
	var sent atomic.Int64
	big := make([]byte, 1<<20)
	for range 4 {
		rg := connectRogue(t, s.Addr(), "noisy", nkeyOpt(t, seedA))
		go func() {
			for i := 0; flood.Err() == nil; i++ {
				if rg.nc.Publish(subjTermOut+"noisy.x"+strconv.Itoa(i%64)+".out", big) == nil {
					sent.Add(int64(len(big)))
				}
			}
		}()
	}
	for sent.Load() < 64<<20 {
		time.Sleep(10 * time.Millisecond)
	}
	p := &placement.Placement{Fleet: s}
	for i := range termTrustStart {
		start := time.Now()
		c, err := p.Attach(t.Context(), fmt.Sprint("learner-", i), 24, 80, nil)
		if err != nil {
			t.Fatalf("attach %d to B during A's flood (%d MiB sent): %v", i, sent.Load()>>20, err)
		}
		sc := watch(c)
		for deadline := time.Now().Add(15 * time.Second); !strings.Contains(sc.buf.String(), "END-OF-LINES") && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		c.Detach()
		got := sc.buf.String()
		missing := 0
		for n := range lines {
			if !strings.Contains(got, fmt.Sprintf("line-%03d\n", n)) {
				missing++
			}
		}
		t.Logf("attach %d: answered, %d of %d lines in %s, A had sent %d MiB", i, lines-missing, lines, time.Since(start).Round(time.Millisecond), sent.Load()>>20)
		if missing > 0 || !strings.Contains(got, "END-OF-LINES") {
			t.Errorf("attach %d: %d of B's %d lines never reached the learner during A's flood", i, missing, lines)
		}
	}
	stop()
	cost.Stop().Check(t, "fall 4 worker A floods its terminal output (in-process server)")
	if !s.TermUsable("honest") {
		t.Error("B was blamed for A's flood: it is no longer offered terminals")
	}
}
