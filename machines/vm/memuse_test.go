package vm

import (
	"os"
	"testing"
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
