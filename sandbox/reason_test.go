package sandbox_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/sandboxtest"
)

func TestReasonHelpers(t *testing.T) {
	if got := sandbox.Detail("cannot read RDMA devices", "无法读取 RDMA 设备", "EIO"); got["en"] != "cannot read RDMA devices: EIO" || got["zh"] != "无法读取 RDMA 设备：EIO" {
		t.Errorf("Detail: %q", got)
	}
	if got := sandbox.Detail("not started", "尚未启动", ""); got["en"] != "not started" || got["zh"] != "尚未启动" {
		t.Errorf("Detail without a diagnostic: %q", got)
	}
	got := sandbox.JoinReasons(sandbox.Text{"en": "a", "zh": "甲"}, nil, sandbox.Text{"en": "b", "zh": "乙"})
	if got["en"] != "a; b" || got["zh"] != "甲；乙" {
		t.Errorf("JoinReasons: %q", got)
	}
	if sandbox.JoinReasons(nil) != nil {
		t.Error("JoinReasons of nothing is not nil")
	}
	r := sandbox.Because("guest-failed", "the guest failed", "虚拟机失败了")
	if r.Error() != "the guest failed" || r.Kind != "guest-failed" {
		t.Errorf("Reason %+v reads %q", r, r.Error())
	}
}

// Every state of the lab reads in Chinese in its one status line.
func TestLabStatusInChinese(t *testing.T) {
	reason := sandbox.Text{"en": "booting kernel 6.1.0-56-amd64 with TCG", "zh": "用 TCG 启动内核 6.1.0-56-amd64"}
	for _, l := range []sandbox.Lab{
		{Backend: "vm", State: sandbox.LabReady, Kernel: "6.1.0-56-amd64", Accel: "tcg", Devices: []sandbox.Device{{Name: "rxe0", Netdev: "veth0"}, {Name: "rxe1", Netdev: "veth1"}}},
		{Backend: "vm", State: sandbox.LabReady, Reason: sandbox.Text{"en": "runs go to the workers", "zh": "实验交给其他机器（worker）运行"}},
		{Backend: "host", State: sandbox.LabReady, Devices: []sandbox.Device{{Name: "mlx5_0", Netdev: "eth0"}}},
		{Backend: "vm", State: sandbox.LabBooting, Reason: reason},
		{Backend: "vm", State: sandbox.LabFailed, Reason: reason},
		{Backend: "none", State: sandbox.LabNone, Reason: reason},
		{Backend: "vm"},
	} {
		sandboxtest.CheckZh(t, "status of "+string(l.State), l.Status())
		if l.Status()["en"] != l.String() {
			t.Errorf("String %q is not the English status %q", l.String(), l.Status()["en"])
		}
	}
}

// A parameter's bounds read in both languages from one place.
func TestBoundsText(t *testing.T) {
	for _, p := range []sandbox.Param{
		{Name: "n", Kind: sandbox.ParamInt, Min: 1, Max: 10, Unit: "iterations"},
		{Name: "size", Kind: sandbox.ParamBytes, Min: 1, Max: 1 << 20},
		{Name: "mode", Kind: sandbox.ParamEnum, Choices: []sandbox.Choice{{Value: "a"}, {Value: "b"}}},
		{Name: "on", Kind: sandbox.ParamBool},
	} {
		b := p.BoundsText()
		sandboxtest.CheckZh(t, "bounds of "+p.Name, b, p.Unit)
		if b["en"] != p.Bounds() {
			t.Errorf("Bounds %q is not the English of BoundsText %q", p.Bounds(), b["en"])
		}
	}
}

// A Reason crosses a hop (agent → host, guest → host, worker → server) in
// the one End encoding and comes out with its Chinese.
func TestReasonCrossesEnd(t *testing.T) {
	why := sandbox.Because("worker-lost", "worker lab-2 stopped answering", "worker 机器 lab-2 不再应答")
	for _, kind := range []sandbox.EndKind{sandbox.EndFailed, sandbox.EndError} {
		e := sandbox.EndOf(fmt.Errorf("run: %w", why), false)
		e.Kind = kind
		b, err := json.Marshal(sandbox.Frame{End: &e})
		if err != nil {
			t.Fatal(err)
		}
		var f sandbox.Frame
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		got := sandbox.FailureText(f.End.Err())
		if got["zh"] != why.Text["zh"] || got["en"] != "run: worker lab-2 stopped answering" {
			t.Errorf("%s: %s came out as %q", kind, b, got)
		}
	}
	if got := sandbox.FailureText(sandbox.End{Kind: sandbox.EndError, Error: "EIO"}.Err()); got["zh"] != "原因：EIO" {
		t.Errorf("a plain error: %q", got)
	}
}
