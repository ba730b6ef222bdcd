package rdmaexp

import "github.com/rdmalab/rdmalab/sandbox"

// registerBeyond adds lesson 07's experiments ("beyond SEND and WRITE").
func registerBeyond(reg *sandbox.Registry) {
	reg.Register(Atomics())
	reg.Register(WriteImm())
	reg.Register(SRQ())
	reg.Register(MemWindow())
	reg.Register(AsyncEvents())
	reg.Register(Multicast())
	reg.Register(RxeLimits())
}
