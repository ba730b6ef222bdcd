package fleet

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/sandboxtest"
)

// TestCommandStreamInProcess (quick tier): an interactive run queued on
// the lab's NATS server is claimed by a worker running in this process
// (the real embedded server, the real worker loop, sandboxtest's counter
// experiment in an InProcess backend); the learner's commands reach the
// experiment in order on lab.cmd.<w>.<run>, and the run ends with what
// they did. The guest-tier tests prove the same with worker processes.
func TestCommandStreamInProcess(t *testing.T) {
	s, err := Start(ServerConfig{Listen: "127.0.0.1:0", Token: token, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reg := sandboxtest.Registry()
	ctx, cancel := context.WithCancel(context.Background())
	worked := make(chan error, 1)
	go func() {
		worked <- RunWorker(ctx, WorkerConfig{URL: "nats://" + s.Addr(), Token: token, Name: "w1",
			Backends: map[sandbox.Need]sandbox.Backend{sandbox.NeedHost: sandbox.InProcess{Registry: reg}},
			Slots:    map[sandbox.Need]int{sandbox.NeedHost: 1}, Logger: slog.New(slog.DiscardHandler)})
	}()
	defer func() {
		cancel()
		if err := <-worked; err != nil && ctx.Err() == nil {
			t.Errorf("worker: %v", err)
		}
	}()
	waitWorkers(t, s, 1)

	sk := newSink()
	host := &Mix{Need: sandbox.NeedHost, Fleet: s}
	r := runner.New(runner.Config{Registry: reg, Sink: sk, Concurrency: 4, QueueMax: 10,
		Backend: func(sandbox.Need) sandbox.Backend { return host }})
	defer r.Close()
	info, err := r.Submit("ann", "counter", nil)
	if err != nil {
		t.Fatal(err)
	}
	steps := func() (names []string) {
		for _, ev := range sk.get(info.ID) {
			if ev.Type == sandbox.EvStep {
				names = append(names, ev.Name+":"+ev.Message)
			}
		}
		return names
	}
	waitUntil := func(what string, ok func() bool) {
		t.Helper()
		for i := 0; !ok(); i++ {
			if i > 600 {
				t.Fatalf("%s: never; the run's events: %+v", what, sk.get(info.ID))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitUntil("the experiment's first step on w1", func() bool { return len(steps()) == 1 })
	for i, c := range []string{"add", "add"} {
		if err := r.Command(info.ID, "ann", sandbox.Command{Cmd: c}); err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
		waitUntil("step "+c, func() bool { return len(steps()) == i+2 })
	}
	if err := r.Command(info.ID, "ann", sandbox.Command{Cmd: "done"}); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-sk.final:
		if id != info.ID {
			t.Fatalf("run %s ended, want %s", id, info.ID)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the run never ended: %+v", sk.get(info.ID))
	}
	if want := []string{"start:", "add:n=1", "add:n=2"}; !slices.Equal(steps(), want) {
		t.Errorf("steps %q, want %q", steps(), want)
	}
	evs := sk.get(info.ID)
	logs := []string{}
	var backend string
	for _, ev := range evs {
		if ev.Type == sandbox.EvLog {
			logs = append(logs, ev.Message)
		}
		if ev.Type == sandbox.EvStatus && ev.Backend != "" {
			backend = ev.Backend
		}
	}
	if !slices.Contains(logs, "done at 2") {
		t.Errorf("the experiment's logs %q lack \"done at 2\": the commands did not all arrive in order", logs)
	}
	if backend != "host@w1" {
		t.Errorf("ran on %q, want host@w1", backend)
	}
	if st := last(evs).Status; st != sandbox.StatusDone {
		t.Errorf("the run ended %q, want done", st)
	}
}
