package vm

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// TestPoolRunsSideBySide: a pool of two guests (the second restored from
// the first one's snapshot) runs two requests at the same time, one in
// each guest: each run waits, inside its first event, until the other run
// has emitted too, which cannot happen if the pool ran them one by one.
func TestPoolRunsSideBySide(t *testing.T) {
	cfg := testConfig(t)
	cfg.Dir = ownCache(t)
	cfg.Accel = AccelTCG
	p := NewPool(cfg, 2)
	p.Start()
	defer p.Close()
	ctx := context.Background()
	for i, m := range p.Members() {
		g, err := m.WaitReady(ctx)
		if err != nil {
			t.Fatalf("guest %d: %v", i, err)
		}
		t.Logf("guest %d: restored=%v, ready after %s", i, g.Restored, g.Ready.Sub(g.Started).Round(time.Millisecond))
		if i == 1 && !g.Restored {
			t.Errorf("the second guest booted instead of restoring the first one's snapshot")
		}
	}
	if lab := p.Lab(ctx); lab.Guests != 2 || lab.GuestsReady != 2 || len(lab.Devices) != 2 {
		t.Fatalf("lab: %+v", lab)
	}

	var both sync.WaitGroup
	both.Add(2)
	overlap := make(chan struct{})
	go func() { both.Wait(); close(overlap) }()
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			var once sync.Once
			req := sandbox.Request{RunID: "r", Experiment: "memlock",
				Params: sandbox.Params{"limit": "8388608", "size": int64(1 << 20), "ipc_lock": "drop"}}
			errs <- p.Exec(ctx, sandbox.NewSession(req, nil, func(sandbox.Event) {
				once.Do(func() {
					both.Done()
					select {
					case <-overlap:
					case <-time.After(3 * time.Minute):
						t.Error("the two runs never ran at the same time")
					}
				})
			}))
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// A timing run: the other guest is paused while it goes, running after.
	p.Timing = func(id string) bool { return id == "memlock" }
	statusOf := func(m *Backend) string {
		g, err := m.WaitReady(ctx)
		if err != nil {
			t.Fatal(err)
		}
		q, err := dialQMP(ctx, g.qmpSock, g.exited)
		if err != nil {
			t.Fatal(err)
		}
		defer q.close()
		st, err := q.status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	var during []string
	req := sandbox.Request{RunID: "t", Experiment: "memlock",
		Params: sandbox.Params{"limit": "8388608", "size": int64(1 << 20), "ipc_lock": "drop"}}
	var once sync.Once
	if err := p.Exec(ctx, sandbox.NewSession(req, nil, func(sandbox.Event) {
		once.Do(func() {
			for _, m := range p.Members() {
				if m.paused.Load() {
					g, _ := m.WaitReady(ctx)
					q, err := dialQMP(ctx, g.qmpSock, g.exited)
					if err == nil {
						st, _ := q.status(ctx)
						q.close()
						during = append(during, st)
					}
				}
			}
		})
	})); err != nil {
		t.Fatal(err)
	}
	if len(during) != 1 || during[0] != "paused" {
		t.Fatalf("other guests during a timing run: %v, want one paused", during)
	}
	for i, m := range p.Members() {
		if st := statusOf(m); st != "running" {
			t.Fatalf("guest %d after the timing run: %s, want running", i, st)
		}
	}
	rss := p.IdleRSS()
	if len(rss) != 2 {
		t.Fatalf("idle RSS of %d guests, want 2", len(rss))
	}
	t.Logf("QEMU RSS per guest: %d MiB, %d MiB", rss[0]>>20, rss[1]>>20)
}
