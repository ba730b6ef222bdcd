package terminal

import (
	"fmt"
	"runtime"

	"github.com/rdmalab/rdmalab/machines/vm"
)

// Sizing learner terminals to the machine (`serve --terminals auto`).
// Figures from make bench (BenchmarkTerminal, BenchmarkTerminalClass,
// TCG) and docs/operations.md "How many terminals a machine holds": an
// idle learner guest's QEMU holds 224–296 MiB, a paused spare 330–334 MiB
// (20 measured; 340 with room), an experiment guest about 500 MiB with its
// translation cache, and an idle shell with its tab open about 2 % of a
// core (1.9 % measured; a detached one is paused and costs nothing).
const (
	termGuestMiB   = 340 // one learner guest, rounded up from the largest measured
	poolGuestMiB   = 512 // one experiment guest (faults/ measured 482 MiB)
	termHeadroom   = 512 // left to the system, labserver and page cache
	termIdleCPUPct = 2   // % of a core per idle learner guest with a tab open
)

// TermSizing is how AutoTerminals chose its figure.
type TermSizing struct {
	Max            int   // learner terminals at once
	AvailableMiB   int64 // MemAvailable when chosen (0: unknown)
	CPUs           int
	PoolGuests     int // experiment guests reserved for
	ByMemory       int // what memory allows
	ByCPU          int // what CPUs allow: idle tabs on half of every core
	PerGuestMiB    int
	PoolGuestMiB   int
	HeadroomMiB    int
	IdleCPUPerCent int
}

// String is the sizing for a log line and the /lab page.
func (s TermSizing) String() string {
	return fmt.Sprintf("%d (memory: (%d MiB available − %d − %d experiment guests × %d − a spare) / %d MiB = %d; CPUs: %d × 50 %% / %d %% = %d)",
		s.Max, s.AvailableMiB, s.HeadroomMiB, s.PoolGuests, s.PoolGuestMiB, s.PerGuestMiB, s.ByMemory,
		s.CPUs, s.IdleCPUPerCent, s.ByCPU)
}

// AutoTerminals is how many learner terminals this machine holds beside
// poolGuests experiment guests: what its available memory allows for
// learner guests (one kept as the paused spare), bounded by idle tabs on
// half of every CPU; at least 1.
func AutoTerminals(poolGuests int) TermSizing {
	s := TermSizing{AvailableMiB: vm.MemAvailableMiB(), CPUs: runtime.NumCPU(), PoolGuests: poolGuests,
		PerGuestMiB: termGuestMiB, PoolGuestMiB: poolGuestMiB, HeadroomMiB: termHeadroom, IdleCPUPerCent: termIdleCPUPct}
	s.ByCPU = s.CPUs * 50 / termIdleCPUPct
	s.ByMemory = s.ByCPU
	if s.AvailableMiB > 0 {
		free := s.AvailableMiB - termHeadroom - int64(poolGuests*poolGuestMiB) - termGuestMiB // the spare
		s.ByMemory = int(max(free, 0) / termGuestMiB)
	}
	s.Max = max(1, min(s.ByMemory, s.ByCPU))
	return s
}

// AutoRoom is Terminals.Room sized to this machine: how many more learner
// guests its available memory holds now, leaving what AutoTerminals
// leaves (the headroom and poolGuests experiment guests, whose translation
// caches grow after they boot). Unknown memory: no bound.
func AutoRoom(poolGuests int) func() int {
	return func() int {
		avail := vm.MemAvailableMiB()
		if avail <= 0 {
			return unbounded
		}
		free := avail - termHeadroom - int64(poolGuests*poolGuestMiB)
		if free < 0 {
			return int(free/termGuestMiB) - 1
		}
		return int(free / termGuestMiB)
	}
}
