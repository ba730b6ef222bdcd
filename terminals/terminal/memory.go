package terminal

import "github.com/rdmalab/rdmalab/machines/vm"

// GuestMemory is what this machine's learner guests (in use and spares)
// hold now, from each QEMU's /proc/PID/smaps_rollup (vm.ProcessMemory).
// RSS would count the snapshot's RAM, which they share (vm.Config.PrivateRAM
// off), once per guest; PSS divides it among them.
type GuestMemory struct {
	Guests int
	PSS    int64 // bytes, summed: what the guests hold together
	USS    int64 // bytes, summed: what stopping every one of them would free
}

// Shared is the guests' part of the pages they share with others (PSS − USS).
func (m GuestMemory) Shared() int64 { return m.PSS - m.USS }

// GuestMemory measures the learner guests now: a few hundred microseconds
// a guest (the kernel walks its mappings).
func (t *Terminals) GuestMemory() GuestMemory {
	t.init()
	t.mu.Lock()
	var bs []*vm.Backend
	for _, s := range t.sessions {
		bs = append(bs, s.backend)
	}
	for _, s := range t.spares {
		bs = append(bs, s.backend)
	}
	t.mu.Unlock()
	var m GuestMemory
	for _, b := range bs {
		pid := b.GuestPID()
		if pid <= 0 {
			continue
		}
		u, err := vm.ProcessMemory(pid)
		if err != nil {
			continue // it exited meanwhile
		}
		m.Guests++
		m.PSS += u.PSS
		m.USS += u.USS
	}
	return m
}
