// Package choose decides where RDMA experiments run (--backend
// auto|host|vm|none): on this kernel when it has RDMA devices (or can get
// Soft-RoCE devices, with --setup-softroce), else in the Soft-RoCE guest
// when QEMU and a kernel with rdma_rxe are installed, else nowhere, with the
// reason and the command that fixes it.
package choose

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/rxedev"
)

// Modes of --backend.
const (
	Auto = "auto"
	Host = "host"
	VM   = "vm"
	None = "none"
)

// Options is the command line's say plus the probes; nil probes are the
// real ones (tests replace them with fakes).
type Options struct {
	Mode          string // auto|host|vm|none ("" = auto)
	SetupSoftRoCE bool   // may create rxe devices on this host (root, changes its routing rules)
	Agent         string // labserver binary for the guest image ("" = this executable)

	HostDevices func() ([]sandbox.Device, error)              // rxedev.Devices
	RxeLoadable func(context.Context) error                   // rxedev.RxeLoadable
	SetupHost   func(context.Context) error                   // load rdma_rxe, create rxe0/rxe1
	VMReady     func(ctx context.Context, agent string) error // vmimage.Preflight
}

// Decision is where RDMA experiments run and why, in both languages (an
// admin reads it on /lab and a learner in a failed run, zh or en).
type Decision struct {
	Backend string       // host|vm|none
	Reason  sandbox.Text // why this backend; for none, what is missing
	Fix     sandbox.Text // for none: what fixes it, if anything does
	SetUp   bool         // Soft-RoCE devices were created on this host
}

// String is one line for logs and the terminal.
func (d Decision) String() string {
	return d.Backend + ": " + d.Why().Get("en")
}

// Why is the reason followed by the fix, if there is one.
func (d Decision) Why() sandbox.Text {
	if d.Fix == nil {
		return d.Reason
	}
	return sandbox.JoinReasons(d.Reason, sandbox.Text{"en": "fix: " + d.Fix.Get("en"), "zh": "解决办法：" + d.Fix.Get("zh")})
}

func (o *Options) defaults() {
	if o.Mode == "" {
		o.Mode = Auto
	}
	if o.HostDevices == nil {
		o.HostDevices = rxedev.Devices
	}
	if o.RxeLoadable == nil {
		o.RxeLoadable = rxedev.RxeLoadable
	}
	if o.SetupHost == nil {
		o.SetupHost = func(ctx context.Context) error {
			if err := rxedev.LoadRxe(ctx); err != nil {
				return err
			}
			return rxedev.SetupSoftRoCE(ctx, rxedev.HostTopology)
		}
	}
	if o.VMReady == nil {
		o.VMReady = vmimage.Preflight
	}
}

// Decide picks the backend for RDMA experiments. It has side effects only
// with SetupSoftRoCE (it creates the devices).
func Decide(ctx context.Context, o Options) (Decision, error) {
	o.defaults()
	switch o.Mode {
	case None:
		return Decision{Backend: None,
			Reason: sandbox.Text{"en": "RDMA experiments are turned off (--backend none)", "zh": "RDMA 实验已关闭（--backend none）"},
			Fix:    sandbox.Text{"en": "start labserver with --backend auto", "zh": "用 --backend auto 启动 labserver"}}, nil
	case Auto, Host, VM:
	default:
		return Decision{}, fmt.Errorf("unknown --backend %q (want auto, host, vm or none)", o.Mode)
	}
	var why []sandbox.Text
	if o.Mode != VM {
		d, reason := decideHost(ctx, o)
		if d != nil {
			return *d, nil
		}
		why = append(why, reason)
		if o.Mode == Host {
			var fix sandbox.Text
			if !o.SetupSoftRoCE {
				fix = sandbox.Text{"en": "start labserver as root with --setup-softroce on a kernel with rdma_rxe, or use --backend vm",
					"zh": "在带 rdma_rxe 的内核上以 root 身份加 --setup-softroce 启动 labserver，或改用 --backend vm"}
			}
			return Decision{Backend: None, Reason: sandbox.JoinReasons(why...), Fix: fix}, nil
		}
	}
	err := o.VMReady(ctx, o.Agent)
	if err == nil {
		return Decision{Backend: VM, Reason: sandbox.JoinReasons(append(why, sandbox.Text{"en": "using the Soft-RoCE guest (QEMU)", "zh": "使用 Soft-RoCE 虚拟机（QEMU）"})...)}, nil
	}
	d := Decision{Backend: None}
	var me *vmimage.MissingError
	if errors.As(err, &me) {
		// In Chinese the packages name what is missing (What is English prose).
		why = append(why, sandbox.Text{"en": "the Soft-RoCE guest cannot be built: missing " + me.What,
			"zh": "无法构建 Soft-RoCE 虚拟机：缺少软件包 " + strings.Join(me.Packages, " ") + " 提供的文件"})
		d.Fix = sandbox.Same(me.Fix())
	} else {
		why = append(why, sandbox.Detail("the Soft-RoCE guest cannot be built", "无法构建 Soft-RoCE 虚拟机", err.Error()))
	}
	d.Reason = sandbox.JoinReasons(why...)
	return d, nil
}

// decideHost returns a host decision, or nil and why not.
func decideHost(ctx context.Context, o Options) (*Decision, sandbox.Text) {
	devs, err := o.HostDevices()
	if err != nil {
		return nil, sandbox.Detail("cannot list this kernel's RDMA devices", "无法列出本机内核的 RDMA 设备", err.Error())
	}
	if len(devs) > 0 {
		names := make([]string, len(devs))
		for i, d := range devs {
			names[i] = d.Name
		}
		return &Decision{Backend: Host, Reason: sandbox.Detail("this kernel has RDMA devices", "本机内核有 RDMA 设备", strings.Join(names, ", "))}, nil
	}
	k := kernelRelease()
	if !o.SetupSoftRoCE {
		return nil, sandbox.Text{"en": "kernel " + k + " has no RDMA devices", "zh": "内核 " + k + " 没有 RDMA 设备"}
	}
	if err := o.RxeLoadable(ctx); err != nil {
		return nil, sandbox.Detail("kernel "+k+" has no RDMA devices and cannot get Soft-RoCE", "内核 "+k+" 没有 RDMA 设备，也无法启用 Soft-RoCE", err.Error())
	}
	if err := o.SetupHost(ctx); err != nil {
		return nil, sandbox.Detail("kernel "+k+" has no RDMA devices and setting up Soft-RoCE failed", "内核 "+k+" 没有 RDMA 设备，设置 Soft-RoCE 也失败了", err.Error())
	}
	return &Decision{Backend: Host, Reason: sandbox.Text{"en": "Soft-RoCE devices created on this host (--setup-softroce)", "zh": "已在本机创建 Soft-RoCE 设备（--setup-softroce）"}, SetUp: true}, nil
}

func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}
