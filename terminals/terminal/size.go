package terminal

import (
	"fmt"
	"runtime"

	"github.com/rdmalab/rdmalab/machines/vm"
)

// Sizing learner terminals to the machine (`serve --terminals auto`),
// by what a guest really costs: its PSS (/proc/PID/smaps_rollup), which
// divides a page among the guests that share it, not its RSS, which
// counts the snapshot's shared RAM once per guest.
//
// Figures from make bench (BenchmarkTerminal, BenchmarkSharedRAM, TCG)
// and docs/architecture.md "Guests share the snapshot's memory". Each
// guest holding its whole RAM (vm.Config.PrivateRAM): an idle learner
// guest's QEMU held 224–296 MiB, a paused spare 330–334 MiB (20 measured;
// 340 with room). Sharing the snapshot's RAM file copy-on-write, a guest
// holds privately only what it wrote since the restore and QEMU's own
// memory: USS 193 → 50 MiB after the restore and 210 → 67 MiB after a
// shell ran (three guests); the 143 MiB sharing saves after a shell,
// taken from the largest idle guest measured before (296 MiB), leaves
// 153 MiB: 160 with room. The snapshot's RAM (at most the guest's
// memory, 256 MiB; some 60 MiB of it mapped) is counted once.
// An experiment guest costs about 500 MiB with its translation cache. An
// idle shell with its tab open costs 0.5–1.7 % of a core (0.53 % over
// 30 s settled, BenchmarkTerminal, in one run, 1.47 % in another; 1.2–1.5 %
// in the minute after a class of 100 opened, BenchmarkClassOfHundred), and nothing once it is paused: a
// detached one at once, one with its tab open after IdlePause (idle.go).
// So CPUs bound the tabs idle for less than IdlePause, not the guests
// open; they are counted at 1 % each, on half of every core.
const (
	termGuestMiB       = 340 // one learner guest holding all its RAM, rounded up from the largest measured
	termSharedGuestMiB = 160 // one learner guest sharing the snapshot's RAM: its own part (PSS → USS as guests add up)
	termSharedOnceMiB  = 256 // the snapshot's RAM in the page cache, once for all guests: the guest's memory
	poolGuestMiB       = 512 // one experiment guest (faults/ measured 482 MiB)
	termHeadroom       = 512 // left to the system, labserver and page cache
	termIdleCPUPct     = 1   // % of a core per idle learner guest with a tab open, until it is paused
)

// guestCost is what one more learner guest and what all of them together
// cost once (MiB), sharing the snapshot's RAM or not.
func guestCost(sharedRAM bool) (perGuest, once int) {
	if sharedRAM {
		return termSharedGuestMiB, termSharedOnceMiB
	}
	return termGuestMiB, 0
}

// TermSizing is how AutoTerminals chose its figure.
type TermSizing struct {
	Max            int   // learner terminals at once
	AvailableMiB   int64 // MemAvailable when chosen (0: unknown)
	CPUs           int
	PoolGuests     int  // experiment guests reserved for
	ByMemory       int  // what memory allows
	ByCPU          int  // what CPUs allow: idle tabs on half of every core
	PerGuestMiB    int  // one learner guest's PSS (its own part when they share)
	SharedMiB      int  // the snapshot's RAM, counted once for all learner guests (0: not shared)
	SharedRAM      bool // guests share the snapshot's RAM (vm.Config.PrivateRAM off)
	PoolGuestMiB   int
	HeadroomMiB    int
	IdleCPUPerCent int
}

// String is the sizing for a log line and the /lab page.
func (s TermSizing) String() string {
	return fmt.Sprintf("%d (memory: (%d MiB available − %d − %d experiment guests × %d − %d shared snapshot RAM − a spare) / %d MiB PSS per learner guest = %d; CPUs: %d × 50 %% / %d %% = %d)",
		s.Max, s.AvailableMiB, s.HeadroomMiB, s.PoolGuests, s.PoolGuestMiB, s.SharedMiB, s.PerGuestMiB, s.ByMemory,
		s.CPUs, s.IdleCPUPerCent, s.ByCPU)
}

// AutoTerminals is how many learner terminals this machine holds beside
// poolGuests experiment guests: what its available memory allows for
// learner guests (one kept as the paused spare; with sharedRAM the
// snapshot's RAM counted once), bounded by idle tabs on half of every
// CPU; at least 1.
func AutoTerminals(poolGuests int, sharedRAM bool) TermSizing {
	per, once := guestCost(sharedRAM)
	s := TermSizing{AvailableMiB: vm.MemAvailableMiB(), CPUs: runtime.NumCPU(), PoolGuests: poolGuests,
		PerGuestMiB: per, SharedMiB: once, SharedRAM: sharedRAM, PoolGuestMiB: poolGuestMiB, HeadroomMiB: termHeadroom,
		IdleCPUPerCent: termIdleCPUPct}
	s.ByCPU = s.CPUs * 50 / termIdleCPUPct
	s.ByMemory = s.ByCPU
	if s.AvailableMiB > 0 {
		free := s.AvailableMiB - termHeadroom - int64(poolGuests*poolGuestMiB) - int64(once) - int64(per) // the spare
		s.ByMemory = int(max(free, 0) / int64(per))
	}
	s.Max = max(1, min(s.ByMemory, s.ByCPU))
	return s
}

// AutoRoom is Terminals.Room sized to this machine: how many more learner
// guests its available memory holds now, leaving what AutoTerminals
// leaves (the headroom and poolGuests experiment guests, whose translation
// caches grow after they boot). The guests running already are in
// MemAvailable as they are; the snapshot's shared RAM is in the page
// cache, which MemAvailable counts as free, so it is left aside too.
// Unknown memory: no bound.
func AutoRoom(poolGuests int, sharedRAM bool) func() int {
	per, once := guestCost(sharedRAM)
	return func() int {
		avail := vm.MemAvailableMiB()
		if avail <= 0 {
			return unbounded
		}
		free := avail - termHeadroom - int64(poolGuests*poolGuestMiB) - int64(once)
		if free < 0 {
			return int(free/int64(per)) - 1
		}
		return int(free / int64(per))
	}
}
