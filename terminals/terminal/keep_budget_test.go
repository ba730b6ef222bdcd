package terminal

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
)

// TestKeepTotalBudget: kept machines over TotalMax together lose the
// oldest first until they fit; each learner whose machine went is told
// at their next attach (KeepEvicted); a machine being restored (its note
// taken) is left alone; without TotalMax nothing is deleted.
func TestKeepTotalBudget(t *testing.T) {
	k := &Keep{Dir: t.TempDir(), Logger: vmtest.Logger(t)}
	const mib = 1 << 20
	now := time.Now()
	// Five learners' machines of 3 MiB, saved an hour apart (learner-0 oldest).
	for i := range 5 {
		stem := k.name(fmt.Sprint("learner-", i))
		if err := os.WriteFile(stem+".zst", make([]byte, 3*mib), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := k.writeMeta(stem, keptMeta{Key: "k", Bytes: 3 * mib, Created: now}); err != nil {
			t.Fatal(err)
		}
		mod := now.Add(time.Duration(i-5) * time.Hour)
		if err := os.Chtimes(stem+".zst", mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	k.Enforce() // no budget: nothing goes
	if bytes, n := k.Usage(); n != 5 || bytes != 15*mib {
		t.Fatalf("without a budget: %d machines, %d bytes; want all 5", n, bytes)
	}
	// learner-1's machine is being restored: its note was taken.
	os.Remove(k.name("learner-1") + ".json")

	k.TotalMax = 8 * mib
	k.Enforce()
	if bytes, n := k.Usage(); n != 3 || bytes-3*mib > k.TotalMax {
		t.Fatalf("budget 8 MiB: %d machines, %d bytes left; want the one being restored and 2 within the budget", n, bytes)
	}
	if _, err := os.Stat(k.name("learner-1") + ".zst"); err != nil {
		t.Errorf("the machine being restored was deleted: %v", err)
	}
	if k.Evicted() != 2 {
		t.Errorf("evicted %d, want 2 (learner-0 and learner-2: the oldest not being restored)", k.Evicted())
	}
	for _, i := range []int{0, 2} {
		if _, note := k.take(fmt.Sprint("learner-", i), "k"); note != KeepEvicted {
			t.Errorf("learner-%d (older): note %q, want evicted", i, note)
		}
	}
	for _, i := range []int{3, 4} {
		if _, note := k.take(fmt.Sprint("learner-", i), "k"); note != KeepRestored {
			t.Errorf("learner-%d (newer): note %q, want restored", i, note)
		}
	}
}
