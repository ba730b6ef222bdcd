package main

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/runs/fleet"
	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/sandboxtest"
)

// startedSink records, per run, the backend named by the run's last
// status, once the "hold" experiment says it is holding: the runner's
// running status names the Mix ("host"), the worker's its own ("host@w1").
type startedSink struct {
	mu      sync.Mutex
	last    map[string]string
	backend map[string]string
}

func (s *startedSink) RunEvent(id string, ev sandbox.Event) {
	if ev.Type == sandbox.EvStatus && ev.Backend != "" {
		s.mu.Lock()
		s.last[id] = ev.Backend
		s.mu.Unlock()
	}
	if ev.Type == sandbox.EvPhase && ev.Name == "holding" {
		s.mu.Lock()
		s.backend[id] = s.last[id]
		s.mu.Unlock()
	}
}

func (s *startedSink) running() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, v := range s.backend {
		out[k] = v
	}
	return out
}

// TestHostRunsReachWorkers (quick tier): on a lab with workers, host runs
// beyond this machine's slots go to a worker. serve's slot count for the
// host backend once ignored the fleet.Mix wrapping it, so four host runs
// at once on a two-CPU lab ran two at a time here and never on a worker.
// Here this machine has 1 host slot and a worker (the real embedded NATS
// server and worker loop, in this process) has 2: three shareable runs
// that hold their slot until the test lets them go must all run at once.
func TestHostRunsReachWorkers(t *testing.T) {
	const token = "test-token-for-host-runs"
	fl, err := fleet.Start(fleet.ServerConfig{Listen: "127.0.0.1:0", Token: token, StoreDir: t.TempDir(),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	reg := sandboxtest.Registry()
	release := make(chan struct{})
	reg.Register(&sandbox.Experiment{ID: "hold", Needs: sandbox.NeedHost, Timeout: time.Minute, Sharing: sandbox.Shareable,
		Run: func(ctx context.Context, _ sandbox.Params, emit sandbox.Emitter) error {
			emit.Emit(sandbox.Event{Type: sandbox.EvPhase, Name: "holding"})
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	worked := make(chan error, 1)
	go func() {
		worked <- fleet.RunWorker(ctx, fleet.WorkerConfig{URL: "nats://" + fl.Addr(), Token: token, Name: "w1",
			Backends: map[sandbox.Need]sandbox.Backend{sandbox.NeedHost: sandbox.InProcess{Registry: reg}},
			Slots:    map[sandbox.Need]int{sandbox.NeedHost: 2}, Logger: slog.New(slog.DiscardHandler)})
	}()
	defer func() {
		cancel()
		if err := <-worked; err != nil && ctx.Err() == nil {
			t.Errorf("worker: %v", err)
		}
	}()
	for i := 0; fl.Slots(sandbox.NeedHost) < 2; i++ {
		if i > 600 {
			t.Fatalf("the worker's 2 host slots never showed: %d", fl.Slots(sandbox.NeedHost))
		}
		time.Sleep(50 * time.Millisecond)
	}

	var local sandbox.Backend = sandbox.InProcess{Registry: reg}
	host := &fleet.Mix{Need: sandbox.NeedHost, Local: local, Slots0: 1, Fleet: fl}
	slots := runSlots(host, 1)
	if got := slots(host); got != 3 {
		t.Errorf("the host backend's slots: %d, want 3 (1 here + 2 on the worker)", got)
	}
	if got := runSlots(local, 4)(local); got != 4 {
		t.Errorf("without workers the host backend's slots: %d, want 4 (one per CPU)", got)
	}

	sk := &startedSink{last: map[string]string{}, backend: map[string]string{}}
	r := runner.New(runner.Config{Registry: reg, Sink: sk, Concurrency: 1 << 16, QueueMax: 10, Slots: slots,
		Backend: func(sandbox.Need) sandbox.Backend { return host }})
	defer r.Close()
	defer close(release)
	for _, who := range []string{"ann", "bob", "cat"} {
		if _, err := r.Submit(who, "hold", nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; len(sk.running()) < 3; i++ {
		if i > 600 {
			t.Fatalf("after 30 s, %d of 3 host runs were running (%v): the rest waited for this machine's one slot", len(sk.running()), sk.running())
		}
		time.Sleep(50 * time.Millisecond)
	}
	onWorker := 0
	for _, b := range sk.running() {
		if b == "host@w1" {
			onWorker++
		}
	}
	if onWorker != 2 {
		t.Errorf("%d runs on the worker, want 2: %v", onWorker, sk.running())
	}
}
