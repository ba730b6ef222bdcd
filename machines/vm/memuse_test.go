package vm

import (
	"os"
	"testing"
	"time"
)

// ProcessMemory reads this process's figures, and they are ordered as the
// kernel defines them: what is private is part of the proportional share,
// which is part of what is resident; a page mapped twice is shared.
func TestProcessMemory(t *testing.T) {
	m, err := ProcessMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	t.Log(m)
	if m.USS <= 0 || m.USS > m.PSS || m.PSS > m.RSS || m.USS+m.Shared != m.RSS {
		t.Fatalf("figures out of order: %+v", m)
	}
	if _, err := ProcessMemory(-1); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}

// TestProcessCPU: this process's CPU time grows while it spins (however
// busy the machine, within 10 s), and a process that does not exist has
// none.
func TestProcessCPU(t *testing.T) {
	pid := os.Getpid()
	before := ProcessCPU(pid)
	for end := time.Now().Add(10 * time.Second); ProcessCPU(pid)-before < 50*time.Millisecond; {
		if time.Now().After(end) {
			t.Fatalf("10 s of spinning counted as %s of CPU", ProcessCPU(pid)-before)
		}
	}
	if got := ProcessCPU(1 << 30); got != 0 {
		t.Errorf("a process that does not exist used %s", got)
	}
}
