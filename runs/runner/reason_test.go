package runner

import (
	"context"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/sandboxtest"
)

// Every final message and error the runner writes reads in Chinese: no
// backend, a backend's own Reason, the time limit, cancelling before and
// after the start, the server stopping, an idle interactive run.
func TestRunnerReasonsInChinese(t *testing.T) {
	reg := sandboxtest.Registry()
	reg.Register(&sandbox.Experiment{ID: "sleepy", Needs: sandbox.NeedHost, Sharing: sandbox.Shareable, Timeout: 50 * time.Millisecond,
		Run: func(ctx context.Context, _ sandbox.Params, _ sandbox.Emitter) error { <-ctx.Done(); return ctx.Err() }})
	reg.Register(&sandbox.Experiment{ID: "no-guest", Needs: needFailing, Sharing: sandbox.Shareable, Run: func(context.Context, sandbox.Params, sandbox.Emitter) error { return nil }})
	host := sandbox.InProcess{Registry: reg}
	r, rec := newTestRunner(t, Config{Registry: reg, Concurrency: 1, Backend: func(n sandbox.Need) sandbox.Backend {
		switch n {
		case sandbox.NeedRDMA:
			return sandbox.NoBackend{Reason: sandbox.Text{"en": "kernel 6.1 has no RDMA devices", "zh": "内核 6.1 没有 RDMA 设备"}}
		case needFailing:
			return failing{&sandbox.Reason{Kind: "guest-failed", Text: sandbox.Text{"en": "the Soft-RoCE lab guest is not available", "zh": "Soft-RoCE 虚拟机不可用"}}}
		}
		return host
	}})
	var ids []string
	submit := func(learner, exp string, params map[string]any) string {
		t.Helper()
		info, err := r.Submit(learner, exp, params)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
		return info.ID
	}
	submit("a", "needs-rdma", nil)
	rec.Final(ids[0])
	submit("b", "no-guest", nil)
	rec.Final(ids[1])
	submit("c", "sleepy", nil)
	rec.Final(ids[2])
	submit("d", "counter", nil) // idle: 2 s without a command
	rec.Final(ids[3])
	g, open := sandboxtest.NewGate()
	defer open()
	running := submit("e", "gate", map[string]any{"id": g})
	rec.WaitFor(running, "the gate", func(evs []sandbox.Event) bool { return sandboxtest.HasPhase(evs, "waiting") })
	queued := submit("f", "echo", nil)
	if err := r.Cancel(queued); err != nil {
		t.Fatal(err)
	}
	rec.Final(queued)
	if err := r.Cancel(running); err != nil {
		t.Fatal(err)
	}
	rec.Final(running)
	g2, open2 := sandboxtest.NewGate()
	defer open2()
	running2 := submit("g", "gate", map[string]any{"id": g2})
	rec.WaitFor(running2, "the gate", func(evs []sandbox.Event) bool { return sandboxtest.HasPhase(evs, "waiting") })
	submit("h", "echo", nil)
	r.Close() // interrupts one running and one queued run
	for _, id := range ids {
		for _, ev := range rec.Events(id) {
			if ev.Message == "" || (ev.Type != sandbox.EvError && ev.Type != sandbox.EvStatus) {
				continue
			}
			sandboxtest.CheckZh(t, id+" "+string(ev.Type)+" "+string(ev.Status)+" "+ev.Message, ev.Messages)
		}
	}
	finals := map[sandbox.Status]int{}
	for _, id := range ids {
		evs := rec.Events(id)
		finals[evs[len(evs)-1].Status]++
	}
	if finals[sandbox.StatusFailed] != 2 || finals[sandbox.StatusTimedOut] != 2 || finals[sandbox.StatusCancelled] != 2 || finals[sandbox.StatusInterrupted] != 2 {
		t.Errorf("final statuses %v, want 2 failed, 2 timed out, 2 cancelled, 2 interrupted", finals)
	}
	if f := rec.Events(ids[1]); f[len(f)-1].Messages["zh"] != "Soft-RoCE 虚拟机不可用" {
		t.Errorf("a backend's Reason is not the run's Chinese reason: %q", f[len(f)-1].Messages)
	}
}

// failing is a backend whose every run fails with err.
type failing struct{ err error }

func (f failing) Name() string { return "failing" }
func (f failing) Lab(context.Context) sandbox.Lab {
	return sandbox.Lab{Backend: "failing", State: sandbox.LabFailed}
}
func (f failing) Exec(context.Context, *sandbox.Session) error { return f.err }

// needFailing is a need only this test's failing backend serves.
const needFailing sandbox.Need = "failing"
