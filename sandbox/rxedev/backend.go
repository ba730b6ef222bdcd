package rxedev

import (
	"context"

	"github.com/rdmalab/rdmalab/machines/agentproc"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/netshape"
)

// Backend is the host backend on a kernel that has RDMA devices: runs go to
// a host agent child like any host run, and the lab state lists the
// devices with their counters now.
type Backend struct {
	Host *agentproc.Agent
	// Note says how the devices came to be (e.g. "Soft-RoCE set up by
	// labserver"), in both languages.
	Note sandbox.Text
}

// Name implements sandbox.Backend.
func (b *Backend) Name() string { return "host" }

// Exec implements sandbox.Backend.
func (b *Backend) Exec(ctx context.Context, s *sandbox.Session) error {
	// Lesson 02's experiments shape the lab's own veth links; a run that
	// was killed could not undo it itself.
	defer netshape.Reset(netshape.HostLinks...)
	return b.Host.Exec(ctx, s)
}

// Lab implements sandbox.Backend.
func (b *Backend) Lab(ctx context.Context) sandbox.Lab {
	lab := b.Host.Lab(ctx)
	lab.Reason = b.Note
	devs, err := Devices()
	switch {
	case err != nil:
		lab.State, lab.Reason = sandbox.LabFailed, sandbox.Detail("cannot read RDMA devices", "无法读取 RDMA 设备", err.Error())
	case len(devs) == 0:
		lab.State, lab.Reason = sandbox.LabFailed, sandbox.Text{"en": "the RDMA devices of this kernel are gone", "zh": "本机内核的 RDMA 设备不见了"}
	default:
		lab.Devices = devs
	}
	return lab
}
