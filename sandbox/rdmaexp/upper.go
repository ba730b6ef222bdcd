package rdmaexp

import "github.com/rdmalab/rdmalab/sandbox"

// registerUpper adds lesson 08's experiments ("upper layers: who uses
// RDMA") and their helper processes.
func registerUpper(reg *sandbox.Registry) {
	reg.Register(NVMeoF())
	reg.RegisterHelper(helperNVMeoFGuard, nvmeofGuardHelper)
	reg.Register(NFSRDMA())
	reg.RegisterHelper(helperNFSGuard, nfsGuardHelper)
}
