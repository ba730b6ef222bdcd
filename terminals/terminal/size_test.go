package terminal

import "testing"

// AutoTerminals follows the machine: at least one, never more than memory
// or CPUs allow, fewer with more experiment guests to leave room for.
func TestAutoTerminals(t *testing.T) {
	for _, shared := range []bool{false, true} {
		s := AutoTerminals(1, shared)
		if s.Max < 1 || s.Max > max(1, min(s.ByMemory, s.ByCPU)) || s.CPUs < 1 {
			t.Fatalf("%+v", s)
		}
		if s.AvailableMiB > 0 {
			more := AutoTerminals(4, shared)
			if more.ByMemory > s.ByMemory {
				t.Errorf("more experiment guests, more room: %d > %d", more.ByMemory, s.ByMemory)
			}
		}
		t.Log(s)
	}
}

// Guests that share the snapshot's RAM are counted at their own part
// (PSS), the shared RAM once: the sizing says so, and where memory bounds
// the terminals the same machine holds more of them than of guests that
// each hold all of their RAM.
func TestAutoTerminalsSharedRAM(t *testing.T) {
	private, shared := AutoTerminals(1, false), AutoTerminals(1, true)
	if private.SharedMiB != 0 || private.PerGuestMiB != termGuestMiB {
		t.Errorf("private: %+v", private)
	}
	if !shared.SharedRAM || shared.SharedMiB != termSharedOnceMiB || shared.PerGuestMiB != termSharedGuestMiB {
		t.Errorf("shared: %+v", shared)
	}
	if shared.AvailableMiB > 0 {
		want := (shared.AvailableMiB - termHeadroom - poolGuestMiB - termSharedOnceMiB - termSharedGuestMiB) / termSharedGuestMiB
		if int64(shared.ByMemory) != max(want, 0) {
			t.Errorf("shared ByMemory %d, want %d (%+v)", shared.ByMemory, want, shared)
		}
		if shared.ByMemory < private.ByMemory {
			t.Errorf("sharing holds fewer guests: %d < %d", shared.ByMemory, private.ByMemory)
		}
	}
	if AutoRoom(1, true)() < AutoRoom(1, false)() {
		t.Errorf("room with sharing below room without")
	}
	t.Log(private)
	t.Log(shared)
}
