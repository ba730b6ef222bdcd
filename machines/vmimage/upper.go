package vmimage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
)

// Lesson 08 ("upper layers") runs the libraries most programs reach RDMA
// through: UCX (ucx_info, ucx_perftest), libfabric (fi_info, fi_pingpong)
// and Open MPI (mpirun, a small MPI program compiled in the guest with
// tcc). Each loads parts of itself with dlopen(), which ldd never sees, so
// those parts are listed here by directory. All of it goes onto the
// on-demand disk (disk.go): 16 MB that only lesson 08's experiments read.

// upperPrograms are the lesson's tools. orterun is Open MPI's launcher;
// the guest also calls it mpirun, the name everyone types.
var upperPrograms = []string{"ucx_info", "ucx_perftest", "fi_info", "fi_pingpong", "orterun"}

// upperPackages name the Debian packages behind upperPrograms and the
// MPI header (mpi.h is in libopenmpi-dev).
var upperPackages = map[string]string{
	"ucx_info":     "ucx-utils",
	"ucx_perftest": "ucx-utils",
	"fi_info":      "libfabric-bin",
	"fi_pingpong":  "libfabric-bin",
	"orterun":      "openmpi-bin",
}

const (
	// ucxModuleDir holds UCX's transports (libuct_ib: rc_verbs, ud_verbs;
	// libuct_rdmacm; libuct_cma): libuct loads them from the directory
	// beside itself by their .so.0 names.
	ucxModuleDir = "/usr/lib/x86_64-linux-gnu/ucx"
	// ompiComponentDir holds Open MPI's MCA components (pml ucx, btl tcp,
	// the launcher's plm/odls/oob…), found by opal_install_dirs.
	ompiComponentDir = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"
	// ompiInclude is where mpi.h lives (Debian's openmpi include dir).
	ompiInclude = "/usr/lib/x86_64-linux-gnu/openmpi/include"
)

// ompiDataFiles are the text files Open MPI reads at run time: its help
// messages (every error it prints comes from these) and the system MCA
// parameters (Debian's file turns pml ucx off, which lesson 08 shows).
var ompiDataFiles = []string{"/usr/share/openmpi/*.txt", "/etc/openmpi/openmpi-mca-params.conf",
	"/usr/lib/x86_64-linux-gnu/pmix2/share/pmix/*.txt", "/usr/lib/x86_64-linux-gnu/pmix2/share/pmix-mca-params.conf"}

// ompiSkip are component families two ranks on one node never load:
// MPI-IO, OpenSHMEM, the matching transports of other vendors (psm, psm2,
// ofi; the lesson runs pml ucx or ob1), message logging, checkpointing,
// the debugger's message queue.
var ompiSkip = []string{"mca_io_", "mca_fcoll_", "mca_fbtl_", "mca_fs_", "mca_sharedfp_",
	"mca_atomic_", "mca_memheap_", "mca_scoll_", "mca_spml_", "mca_sshmem_",
	"mca_mtl_", "mca_vprotocol_", "mca_crs_", "libompi_dbg_msgq"}

// addUpper puts lesson 08's tools, their dlopen()ed parts, Open MPI's data
// files and mpi.h onto the on-demand disk.
func (p *plan) addUpper(ctx context.Context) error {
	var missing []*MissingError
	for _, name := range upperPrograms {
		if err := p.diskProgram(ctx, name, upperPackages[name]); err != nil {
			if me, ok := err.(*MissingError); ok {
				missing = append(missing, me)
				continue
			}
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(ompiInclude, "mpi.h")); err != nil {
		missing = append(missing, &MissingError{What: "mpi.h (lesson 08 compiles an MPI program in the guest)", Packages: []string{"libopenmpi-dev"}})
	}
	if m := mergeMissing(missing); m != nil {
		return m
	}
	p.disk.symlink("usr/bin/mpirun", "orterun")
	for _, f := range upperLibraries() {
		if err := p.diskLibrary(ctx, f); err != nil {
			return err
		}
	}
	for _, g := range ompiDataFiles {
		files, _ := filepath.Glob(g)
		for _, f := range files {
			p.diskFile(f)
		}
	}
	// mpi.h and what it includes from its own directory; tcc links -lmpi
	// through the development name.
	for _, h := range []string{"mpi.h", "mpi_portable_platform.h"} {
		p.diskFile(filepath.Join(ompiInclude, h))
	}
	p.disk.symlink("usr/lib/x86_64-linux-gnu/libmpi.so", "libmpi.so.40")
	return nil
}

// upperLibraries are the shared objects nothing links but something
// loads: UCX's transports, PMIx's and Open MPI's components, and libmpi
// itself (the MPI program compiled in the guest links it; no tool does).
func upperLibraries() []string {
	mods, _ := filepath.Glob(ucxModuleDir + "/*.so.0")
	pmix, _ := filepath.Glob("/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so")
	comps, _ := filepath.Glob(ompiComponentDir + "/*.so")
	libs := append(mods, pmix...)
	if _, err := os.Stat(libmpi); err == nil {
		libs = append(libs, libmpi)
	}
	for _, f := range comps {
		if !skipComponent(filepath.Base(f)) {
			libs = append(libs, f)
		}
	}
	return libs
}

const libmpi = "/usr/lib/x86_64-linux-gnu/libmpi.so.40"

func skipComponent(name string) bool {
	for _, s := range ompiSkip {
		if strings.HasPrefix(name, s) {
			return true
		}
	}
	return false
}
