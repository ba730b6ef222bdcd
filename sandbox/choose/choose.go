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

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/rxedev"
	"github.com/rdmalab/rdmalab/sandbox/vmimage"
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

// Decision is where RDMA experiments run and why.
type Decision struct {
	Backend string // host|vm|none
	Reason  string // why this backend; for none, what is missing
	Fix     string // for none: the command that fixes it, if there is one
	SetUp   bool   // Soft-RoCE devices were created on this host
}

// String is one line for logs and the terminal.
func (d Decision) String() string {
	s := d.Backend + ": " + d.Reason
	if d.Fix != "" {
		s += "; fix: " + d.Fix
	}
	return s
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
		return Decision{Backend: None, Reason: "RDMA experiments are turned off (--backend none)", Fix: "start labserver with --backend auto"}, nil
	case Auto, Host, VM:
	default:
		return Decision{}, fmt.Errorf("unknown --backend %q (want auto, host, vm or none)", o.Mode)
	}
	var why []string
	if o.Mode != VM {
		d, reason := decideHost(ctx, o)
		if d != nil {
			return *d, nil
		}
		why = append(why, reason)
		if o.Mode == Host {
			fix := ""
			if !o.SetupSoftRoCE {
				fix = "start labserver as root with --setup-softroce on a kernel with rdma_rxe, or use --backend vm"
			}
			return Decision{Backend: None, Reason: strings.Join(why, "; "), Fix: fix}, nil
		}
	}
	err := o.VMReady(ctx, o.Agent)
	if err == nil {
		return Decision{Backend: VM, Reason: strings.Join(append(why, "using the Soft-RoCE guest (QEMU)"), "; ")}, nil
	}
	d := Decision{Backend: None}
	var me *vmimage.MissingError
	if errors.As(err, &me) {
		why = append(why, "the Soft-RoCE guest cannot be built: missing "+me.What)
		d.Fix = me.Fix()
	} else {
		why = append(why, "the Soft-RoCE guest cannot be built: "+err.Error())
	}
	d.Reason = strings.Join(why, "; ")
	return d, nil
}

// decideHost returns a host decision, or nil and why not.
func decideHost(ctx context.Context, o Options) (*Decision, string) {
	devs, err := o.HostDevices()
	if err != nil {
		return nil, "cannot list this kernel's RDMA devices: " + err.Error()
	}
	if len(devs) > 0 {
		names := make([]string, len(devs))
		for i, d := range devs {
			names[i] = d.Name
		}
		return &Decision{Backend: Host, Reason: "this kernel has RDMA devices: " + strings.Join(names, ", ")}, ""
	}
	reason := "kernel " + kernelRelease() + " has no RDMA devices"
	if !o.SetupSoftRoCE {
		return nil, reason
	}
	if err := o.RxeLoadable(ctx); err != nil {
		return nil, reason + " and cannot get Soft-RoCE: " + err.Error()
	}
	if err := o.SetupHost(ctx); err != nil {
		return nil, reason + " and setting up Soft-RoCE failed: " + err.Error()
	}
	return &Decision{Backend: Host, Reason: "Soft-RoCE devices created on this host (--setup-softroce)", SetUp: true}, ""
}

func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}
