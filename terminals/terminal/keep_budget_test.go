package terminal

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/attackcost"
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

// TestKeepClientShare: one address that makes fresh cookies and has each
// one's machine kept (issue 43: ~64 cookies) must not evict the machines
// of learners on other addresses. Over TotalMax the client holding the
// most loses its oldest first, even when the other learners' machines
// are older; with ClientMax that client never holds more than its share.
func TestKeepClientShare(t *testing.T) {
	const mib = 1 << 20
	now := time.Now()
	// put saves a 3 MiB machine for learner from client, as save does
	// (its note with the client's tag, then Enforce).
	put := func(k *Keep, learner, client string, age time.Duration) {
		t.Helper()
		stem := k.name(learner)
		if err := os.WriteFile(stem+".zst", make([]byte, 3*mib), 0o600); err != nil {
			t.Fatal(err)
		}
		b := fmt.Sprintf(`{"key":"k","bytes":%d,"created":%q,"client":%q}`, 3*mib, now.Format(time.RFC3339Nano), clientTag(client))
		if err := os.WriteFile(stem+".json", []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
		mod := now.Add(-age)
		if err := os.Chtimes(stem+".zst", mod, mod); err != nil {
			t.Fatal(err)
		}
		k.Enforce()
	}
	for _, tc := range []struct {
		name      string
		clientMax int64
	}{
		{"total budget only", 0},
		{"with a per-client share", 12 * mib},
		{"with a share below one machine", 1 * mib}, // counts as one machine (MaxBytes)
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger, logs := countedLogger(t)
			k := &Keep{Dir: t.TempDir(), Logger: logger, TotalMax: 30 * mib, ClientMax: tc.clientMax, MaxBytes: 4 * mib}
			cost := attackcost.WatchSelf(logs.Len)
			// Three honest learners, each on an address of their own,
			// kept hours ago (older than anything the attacker saves).
			for i := range 3 {
				put(k, fmt.Sprint("honest-", i), fmt.Sprint("198.51.100.", i+1), time.Duration(10-i)*time.Hour)
			}
			// One address, 64 fresh cookies, each machine kept.
			for i := range 64 {
				put(k, fmt.Sprint("cookie-", i), "203.0.113.9", time.Duration(64-i)*time.Minute)
			}
			cost.Stop().Check(t, "fall 10 64 kept machines from one address ("+tc.name+")")
			if bytes, _ := k.Usage(); bytes > k.TotalMax {
				t.Errorf("kept %d MiB, over the budget of %d MiB", bytes>>20, k.TotalMax>>20)
			}
			var attacker int64
			for i := range 64 {
				if fi, err := os.Stat(k.name(fmt.Sprint("cookie-", i)) + ".zst"); err == nil {
					attacker += fi.Size()
				}
			}
			if share := max(tc.clientMax, k.MaxBytes); tc.clientMax > 0 && attacker > share {
				t.Errorf("one address keeps %d MiB, over its share of %d MiB", attacker>>20, share>>20)
			}
			for i := range 3 {
				if _, note := k.take(fmt.Sprint("honest-", i), "k"); note != KeepRestored {
					t.Errorf("honest learner %d (own address): note %q, want restored — one address's cookies evicted them", i, note)
				}
			}
			// The attacker's newest survives; its oldest went, each told why.
			if _, note := k.take("cookie-63", "k"); note != KeepRestored {
				t.Errorf("the address's newest machine: note %q, want restored", note)
			}
			want := KeepEvicted
			if tc.clientMax > 0 {
				want = KeepShare
			}
			if _, note := k.take("cookie-0", "k"); note != want {
				t.Errorf("the address's oldest machine: note %q, want %q", note, want)
			}
		})
	}
}

// TestKeepBudgetCountsOrphanBase: a base RAM file that only the keep
// directory still holds (its snapshot was replaced) takes disk, so
// Enforce counts it toward TotalMax as Usage does, and the machines
// naming it go (oldest first) until the budget holds; once none names
// it, the base goes too. A base the snapshot still links takes no disk
// and is not counted.
func TestKeepBudgetCountsOrphanBase(t *testing.T) {
	const mib = 1 << 20
	now := time.Now()
	for _, tc := range []struct {
		name   string
		linked bool // the snapshot still holds the base
	}{{"orphan base", false}, {"base the snapshot still links", true}} {
		t.Run(tc.name, func(t *testing.T) {
			k := &Keep{Dir: t.TempDir(), Logger: vmtest.Logger(t)}
			base := "base-801-2a.ram"
			if err := os.WriteFile(filepath.Join(k.Dir, base), make([]byte, 6*mib), 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.linked {
				if err := os.Link(filepath.Join(k.Dir, base), filepath.Join(t.TempDir(), "snapshot.ram")); err != nil {
					t.Fatal(err)
				}
			}
			// Three learners' 1 MiB diffs against it, an hour apart.
			for i := range 3 {
				stem := k.name(fmt.Sprint("learner-", i))
				if err := os.WriteFile(stem+".zst", make([]byte, mib), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := k.writeMeta(stem, keptMeta{Key: "k", Bytes: mib, Created: now, Base: base}); err != nil {
					t.Fatal(err)
				}
				mod := now.Add(time.Duration(i-3) * time.Hour)
				if err := os.Chtimes(stem+".zst", mod, mod); err != nil {
					t.Fatal(err)
				}
			}
			k.TotalMax = 8 * mib
			k.Enforce()
			bytes, n := k.Usage()
			if tc.linked {
				if n != 3 || k.Evicted() != 0 {
					t.Fatalf("a linked base: %d machines left, %d evicted; want all 3 kept (3 MiB of 8)", n, k.Evicted())
				}
				return
			}
			// 6 MiB base + 3 × 1 MiB = 9 MiB: the oldest goes, 8 MiB left.
			if bytes > k.TotalMax || n != 2 || k.Evicted() != 1 {
				t.Fatalf("orphan base: %d MiB in %d machines, %d evicted; want 8 MiB in 2, 1 evicted", bytes>>20, n, k.Evicted())
			}
			if _, note := k.take("learner-0", "k"); note != KeepEvicted {
				t.Errorf("the oldest machine: note %q, want evicted", note)
			}
			// A budget below the base alone: every machine naming it goes,
			// and then the base.
			k.TotalMax = 2 * mib
			k.Enforce()
			if bytes, n := k.Usage(); n != 0 || bytes != 0 {
				t.Errorf("budget 2 MiB: %d MiB in %d machines left; want nothing (the base went with its last machine)", bytes>>20, n)
			}
			if _, err := os.Stat(filepath.Join(k.Dir, base)); !os.IsNotExist(err) {
				t.Errorf("the orphan base is still there: %v", err)
			}
		})
	}
}
