package terminal

import "testing"

// AutoTerminals follows the machine: at least one, never more than memory
// or CPUs allow, fewer with more experiment guests to leave room for.
func TestAutoTerminals(t *testing.T) {
	s := AutoTerminals(1)
	if s.Max < 1 || s.Max > max(1, min(s.ByMemory, s.ByCPU)) || s.CPUs < 1 {
		t.Fatalf("%+v", s)
	}
	if s.AvailableMiB > 0 {
		more := AutoTerminals(4)
		if more.ByMemory > s.ByMemory {
			t.Errorf("more experiment guests, more room: %d > %d", more.ByMemory, s.ByMemory)
		}
	}
	t.Log(s)
}
