package vm

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MemUse is what one process costs in memory, from the kernel's
// /proc/PID/smaps_rollup, in bytes. For guests that share the snapshot's
// RAM (sharedram.go) RSS counts the shared pages in full in every guest
// and overstates the machine's cost N times; PSS divides every page among
// the processes that map it, so the PSS of all guests adds up to what
// they hold together; USS is what stopping this one guest would free.
type MemUse struct {
	RSS    int64 // resident
	PSS    int64 // proportional: shared pages divided among their mappers
	USS    int64 // private (Private_Clean + Private_Dirty): freed when it exits
	Shared int64 // resident and mapped by others too (Shared_Clean + Shared_Dirty)
}

// String is the figures in MiB, for a log line.
func (m MemUse) String() string {
	return fmt.Sprintf("PSS %d MiB, USS %d MiB, RSS %d MiB (shared %d MiB)", m.PSS>>20, m.USS>>20, m.RSS>>20, m.Shared>>20)
}

// ProcessMemory reads process pid's smaps_rollup.
func ProcessMemory(pid int) (MemUse, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return MemUse{}, err
	}
	defer f.Close()
	var m MemUse
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fs := strings.Fields(rest)
		if len(fs) != 2 || fs[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "Rss":
			m.RSS = kb << 10
		case "Pss":
			m.PSS = kb << 10
		case "Private_Clean", "Private_Dirty":
			m.USS += kb << 10
		case "Shared_Clean", "Shared_Dirty":
			m.Shared += kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		return MemUse{}, err
	}
	if m.RSS == 0 {
		return MemUse{}, fmt.Errorf("/proc/%d/smaps_rollup: no Rss line", pid)
	}
	return m, nil
}

// Memory is what the guest's QEMU costs now.
func (g *Guest) Memory() (MemUse, error) { return ProcessMemory(g.PID()) }
