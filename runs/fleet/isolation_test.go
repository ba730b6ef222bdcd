package fleet

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rdmalab/rdmalab/sandbox"
)

// TestOneWorkerCannotFailAnother is issue 43, fall 4: the server had one
// subscription, with one pending limit, for every worker's events and
// one for every worker's heartbeats; worker A flooding its own subjects
// made the server drop worker B's events and heartbeats, and B's honest
// runs failed in B's name ("broke a bound", "stopped answering"). Here B
// is a real `labserver worker` process and A, with its own valid nkey,
// floods its own heartbeat and event subjects as fast as it can (512 KiB
// events, beats back to back) while three runs go to B: each ends done
// on B, and B stays listed throughout.
func TestOneWorkerCannotFailAnother(t *testing.T) {
	labserverBin(t) // the worker process: built first, skipped under -short
	seedA, ka := newKey(t, "noisy")
	seedB, kb := newKey(t, "honest")
	s, err := Start(ServerConfig{Listen: "127.0.0.1:0", Workers: []WorkerKey{ka, kb}, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	startNkeyWorker(t, s.Addr(), "honest", seedB)
	waitWorkers(t, s, 1)

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
	if lost > 0 {
		t.Errorf("B was not listed alive after %d of 3 runs during A's flood", lost)
	}
	if sent.Load() < 64<<20 {
		t.Logf("A sent only %d MiB: the flood was weaker than the issue's", sent.Load()>>20)
	}
}
