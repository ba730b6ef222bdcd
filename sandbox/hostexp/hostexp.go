// Package hostexp holds the experiments that run on the host kernel and
// need no RDMA device: tcp-cost (what moving data through the kernel costs
// in CPU) and memlock (why pinning memory fails with plenty free).
//
// Learner-facing text travels in two languages: an Event's Message is the
// English text and Messages carries {"zh", "en"}; the widget picks the
// page's language.
package hostexp

import (
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/expkit"
)

// Register adds this package's experiments and helpers to reg.
func Register(reg *sandbox.Registry) {
	reg.Register(TCPCost())
	reg.Register(Memlock())
	reg.RegisterHelper(memlockHelperName, memlockHelper)
}

// Short names for the shared helpers, used on almost every line of the
// experiments.
var (
	say   = expkit.Say
	phase = expkit.Phase
	logf  = expkit.Logf
	note  = expkit.Note
	human = expkit.Human
	b2f   = expkit.B2F
)
