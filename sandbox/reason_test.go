package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
)

// checkZh fails when t has no Chinese or its Chinese holds English prose
// (a reason that would reach a zh page in English). diag are the
// diagnostics the test put in (an error from the system stays as it is).
func checkZh(tb testing.TB, where string, t Text, diag ...string) {
	tb.Helper()
	zh := t["zh"]
	if zh == "" {
		tb.Errorf("%s: no Chinese in %q", where, t)
		return
	}
	for _, d := range diag {
		zh = strings.ReplaceAll(zh, d, "")
	}
	if p := zhcheck.Prose(zh); len(p) > 0 {
		tb.Errorf("%s: English prose %q in the Chinese %q", where, p, t["zh"])
	}
	if t["en"] == "" {
		tb.Errorf("%s: no English in %q", where, t)
	}
}

func TestReasonHelpers(t *testing.T) {
	if got := Detail("cannot read RDMA devices", "无法读取 RDMA 设备", "EIO"); got["en"] != "cannot read RDMA devices: EIO" || got["zh"] != "无法读取 RDMA 设备：EIO" {
		t.Errorf("Detail: %q", got)
	}
	if got := Detail("not started", "尚未启动", ""); got["en"] != "not started" || got["zh"] != "尚未启动" {
		t.Errorf("Detail without a diagnostic: %q", got)
	}
	got := JoinReasons(Text{"en": "a", "zh": "甲"}, nil, Text{"en": "b", "zh": "乙"})
	if got["en"] != "a; b" || got["zh"] != "甲；乙" {
		t.Errorf("JoinReasons: %q", got)
	}
	if JoinReasons(nil) != nil {
		t.Error("JoinReasons of nothing is not nil")
	}
	r := Because("guest-failed", "the guest failed", "虚拟机失败了")
	if r.Error() != "the guest failed" || r.Kind != "guest-failed" {
		t.Errorf("Reason %+v reads %q", r, r.Error())
	}
}

// Every state of the lab reads in Chinese in its one status line.
func TestLabStatusInChinese(t *testing.T) {
	reason := Text{"en": "booting kernel 6.1.0-56-amd64 with TCG", "zh": "用 TCG 启动内核 6.1.0-56-amd64"}
	for _, l := range []Lab{
		{Backend: "vm", State: LabReady, Kernel: "6.1.0-56-amd64", Accel: "tcg", Devices: []Device{{Name: "rxe0", Netdev: "veth0"}, {Name: "rxe1", Netdev: "veth1"}}},
		{Backend: "vm", State: LabReady, Reason: Text{"en": "runs go to the workers", "zh": "实验交给其他机器（worker）运行"}},
		{Backend: "host", State: LabReady, Devices: []Device{{Name: "mlx5_0", Netdev: "eth0"}}},
		{Backend: "vm", State: LabBooting, Reason: reason},
		{Backend: "vm", State: LabFailed, Reason: reason},
		{Backend: "none", State: LabNone, Reason: reason},
		{Backend: "vm"},
	} {
		checkZh(t, "status of "+string(l.State), l.Status())
		if l.Status()["en"] != l.String() {
			t.Errorf("String %q is not the English status %q", l.String(), l.Status()["en"])
		}
	}
}

// Every final message and error the runner writes reads in Chinese: no
// backend, a backend's own Reason, the time limit, cancelling before and
// after the start, the server stopping, an idle interactive run.
func TestRunnerReasonsInChinese(t *testing.T) {
	reg := testRegistry()
	reg.Register(&Experiment{ID: "sleepy", Needs: NeedHost, Sharing: Shareable, Timeout: 50 * time.Millisecond,
		Run: func(ctx context.Context, _ Params, _ Emitter) error { <-ctx.Done(); return ctx.Err() }})
	reg.Register(&Experiment{ID: "no-guest", Needs: needFailing, Sharing: Shareable, Run: func(context.Context, Params, Emitter) error { return nil }})
	host := InProcess{Registry: reg}
	r, rec := newTestRunner(t, RunnerConfig{Registry: reg, Concurrency: 1, Backend: func(n Need) Backend {
		switch n {
		case NeedRDMA:
			return NoBackend{Reason: Text{"en": "kernel 6.1 has no RDMA devices", "zh": "内核 6.1 没有 RDMA 设备"}}
		case needFailing:
			return failing{&Reason{Kind: "guest-failed", Text: Text{"en": "the Soft-RoCE lab guest is not available", "zh": "Soft-RoCE 虚拟机不可用"}}}
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
	rec.final(ids[0])
	submit("b", "no-guest", nil)
	rec.final(ids[1])
	submit("c", "sleepy", nil)
	rec.final(ids[2])
	submit("d", "counter", nil) // idle: 2 s without a command
	rec.final(ids[3])
	g, open := newGate()
	defer open()
	running := submit("e", "gate", map[string]any{"id": g})
	rec.waitFor(running, "the gate", func(evs []Event) bool { return hasPhase(evs, "waiting") })
	queued := submit("f", "echo", nil)
	if err := r.Cancel(queued); err != nil {
		t.Fatal(err)
	}
	rec.final(queued)
	if err := r.Cancel(running); err != nil {
		t.Fatal(err)
	}
	rec.final(running)
	g2, open2 := newGate()
	defer open2()
	running2 := submit("g", "gate", map[string]any{"id": g2})
	rec.waitFor(running2, "the gate", func(evs []Event) bool { return hasPhase(evs, "waiting") })
	submit("h", "echo", nil)
	r.Close() // interrupts one running and one queued run
	for _, id := range ids {
		for _, ev := range rec.get(id) {
			if ev.Message == "" || (ev.Type != EvError && ev.Type != EvStatus) {
				continue
			}
			checkZh(t, id+" "+string(ev.Type)+" "+string(ev.Status)+" "+ev.Message, ev.Messages)
		}
	}
	finals := map[Status]int{}
	for _, id := range ids {
		evs := rec.get(id)
		finals[evs[len(evs)-1].Status]++
	}
	if finals[StatusFailed] != 2 || finals[StatusTimedOut] != 2 || finals[StatusCancelled] != 2 || finals[StatusInterrupted] != 2 {
		t.Errorf("final statuses %v, want 2 failed, 2 timed out, 2 cancelled, 2 interrupted", finals)
	}
	if f := rec.get(ids[1]); f[len(f)-1].Messages["zh"] != "Soft-RoCE 虚拟机不可用" {
		t.Errorf("a backend's Reason is not the run's Chinese reason: %q", f[len(f)-1].Messages)
	}
}

// failing is a backend whose every run fails with err.
type failing struct{ err error }

func (f failing) Name() string                         { return "failing" }
func (f failing) Lab(context.Context) Lab              { return Lab{Backend: "failing", State: LabFailed} }
func (f failing) Exec(context.Context, *Session) error { return f.err }

// A parameter's bounds read in both languages from one place.
func TestBoundsText(t *testing.T) {
	for _, p := range []Param{
		{Name: "n", Kind: ParamInt, Min: 1, Max: 10, Unit: "iterations"},
		{Name: "size", Kind: ParamBytes, Min: 1, Max: 1 << 20},
		{Name: "mode", Kind: ParamEnum, Choices: []Choice{{Value: "a"}, {Value: "b"}}},
		{Name: "on", Kind: ParamBool},
	} {
		b := p.BoundsText()
		checkZh(t, "bounds of "+p.Name, b, p.Unit)
		if b["en"] != p.Bounds() {
			t.Errorf("Bounds %q is not the English of BoundsText %q", p.Bounds(), b["en"])
		}
	}
}

// needFailing is a need only this test's failing backend serves.
const needFailing Need = "failing"

// A Reason crosses a hop (agent → host, guest → host, worker → server) in
// the one End encoding and comes out with its Chinese.
func TestReasonCrossesEnd(t *testing.T) {
	why := Because("worker-lost", "worker lab-2 stopped answering", "worker 机器 lab-2 不再应答")
	for _, kind := range []EndKind{EndFailed, EndError} {
		e := EndOf(fmt.Errorf("run: %w", why), false)
		e.Kind = kind
		b, err := json.Marshal(Frame{End: &e})
		if err != nil {
			t.Fatal(err)
		}
		var f Frame
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		got := failureText(f.End.Err())
		if got["zh"] != why.Text["zh"] || got["en"] != "run: worker lab-2 stopped answering" {
			t.Errorf("%s: %s came out as %q", kind, b, got)
		}
	}
	if got := failureText(End{Kind: EndError, Error: "EIO"}.Err()); got["zh"] != "原因：EIO" {
		t.Errorf("a plain error: %q", got)
	}
}
