package rdmaexp

import "github.com/rdmalab/rdmalab/sandbox"

// registerUpperLibs adds lesson 08's library experiments: UCX, libfabric
// and MPI over Soft-RoCE.
func registerUpperLibs(reg *sandbox.Registry) {
	reg.Register(UCX())
	reg.Register(Fabric())
	reg.Register(MPI())
}
