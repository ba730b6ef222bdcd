package vm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rdmalab/rdmalab/internal/ctxtime"
	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/machines/vmproto"
)

// Snapshot is a ready guest's whole state (RAM and devices) saved with
// QEMU's migration to a file. Restoring it gives a guest whose kernel is
// booted, whose Soft-RoCE devices exist and whose agent waits for work:
// no kernel boot, no module loading, no agent start-up.
//
// A snapshot is valid only for the same image, QEMU, accelerator, memory,
// vCPUs and kernel parameters (the key); the cache keeps one, beside the
// image, replaced when the key changes.
type Snapshot struct {
	Path    string        `json:"-"`
	Key     string        `json:"key"`
	Hello   vmproto.Hello `json:"hello"` // what the snapshotted agent said when it came up
	Accel   string        `json:"accel"`
	Bytes   int64         `json:"bytes"`
	Took    time.Duration `json:"took"` // stop → file complete
	Created time.Time     `json:"created"`

	// A shared-RAM snapshot (sharedram.go): the state file holds only the
	// devices, the RAM is RAMFile, which restored guests map copy-on-write.
	// Both are named by key (StateName, RAMName, beside the slot's json);
	// empty: the state holds the RAM too (PrivateRAM).
	StateName string `json:"state,omitempty"`
	RAMName   string `json:"ram,omitempty"`
	RAMFile   string `json:"-"`

	// kept: a learner's machine (keep.go), zstd-compressed, streamed into
	// QEMU by this process; keptBase is the RAM file it holds the
	// differences from ("": all its RAM); nextID and terms are its
	// connection's (keptMeta).
	kept     bool
	keptBase string
	nextID   uint64
	terms    []uint64
}

const snapshotFormat = 4 // bump when the QEMU command line changes (3: the on-demand disk; 4: RAM named "ram", shared)

// snapshotSlot names the cache's snapshot files for guests of cfg's shape
// (slot + ".state", slot + ".json"). Guests with another vCPU count do not
// restore from the same state, and both shapes run side by side (the
// experiment pool with 2, learner terminals with 1: package terminal), so
// each has its own slot; within a slot a new key replaces the old state.
func snapshotSlot(cfg Config) string {
	if cfg.CPUs == defaultCPUs {
		return "snapshot"
	}
	return fmt.Sprintf("snapshot-%dcpu", cfg.CPUs)
}

// snapshotKey names everything the saved state depends on.
func snapshotKey(cfg Config, qemu string, im *vmimage.Image, accel string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\n%s\n%s\n%s\n%s\n%d\n%d\n%s\n%v\n", snapshotFormat, im.Hash, qemu, qemuVersionCached(qemu), accel, cfg.MemoryMiB, cfg.CPUs, cfg.Append, cfg.PrivateRAM)
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// loadSnapshot returns the cache's snapshot in slot if its key matches.
func loadSnapshot(dir, slot, key string) *Snapshot {
	b, err := os.ReadFile(filepath.Join(dir, slot+".json"))
	if err != nil {
		return nil
	}
	var s Snapshot
	if json.Unmarshal(b, &s) != nil || s.Key != key {
		return nil
	}
	s.Path = filepath.Join(dir, slot+".state")
	if s.RAMName != "" {
		s.Path, s.RAMFile = filepath.Join(dir, s.StateName), filepath.Join(dir, s.RAMName)
		if fi, err := os.Stat(s.RAMFile); err != nil || fi.Size() == 0 {
			return nil
		}
	}
	fi, err := os.Stat(s.Path)
	if err != nil || fi.Size() != s.Bytes {
		return nil
	}
	return &s
}

// SaveSnapshot saves g's state into the cache dir's slot under key. The guest is
// paused while QEMU writes the file (a fraction of a second for an idle
// guest) and then continues where it was; the host's connection to its
// agent stays open. Take it while no run is in flight, holding the
// cache's snapshot lock (lockSnapshots).
//
// A guest whose RAM is a shared file (booted to become the snapshot,
// sharedram.go) does not continue: its file becomes the snapshot's RAM,
// which nothing may write again, so the guest is stopped for good once
// saved (its Exited channel is closed) and the caller restores a new one.
func (g *Guest) SaveSnapshot(ctx context.Context, dir, slot, key string) (*Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	q, err := dialQMP(ctx, g.qmpSock, g.exited)
	if err != nil {
		return nil, err
	}
	defer q.close()
	f, err := os.CreateTemp(dir, slot+".state.*.tmp")
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	tmp := f.Name()
	f.Close()
	defer os.Remove(tmp) // after a failure; renamed away on success
	begin := time.Now()
	if _, err := q.do(ctx, "stop", nil); err != nil {
		return nil, err
	}
	shared := g.ram != nil && g.ram.shared
	saved := false
	defer func() {
		// The guest continues whatever happened (postmigrate → running),
		// but one whose RAM became the snapshot's.
		if !(shared && saved) {
			_, _ = q.do(context.Background(), "cont", nil)
		}
	}()
	// The default limit is 32 MiB/s (for live migration over a network).
	if _, err := q.do(ctx, "migrate-set-parameters", map[string]any{"max-bandwidth": int64(1) << 40}); err != nil {
		return nil, err
	}
	if shared {
		// The RAM stays in its file: the stream carries the devices.
		if err := q.setCapability(ctx, "x-ignore-shared", true); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
	}
	if _, err := q.do(ctx, "migrate", map[string]any{"uri": "exec:cat > " + shellQuote(tmp)}); err != nil {
		return nil, err
	}
	for {
		raw, err := q.do(ctx, "query-migrate", nil)
		if err != nil {
			return nil, err
		}
		var st struct {
			Status    string `json:"status"`
			ErrorDesc string `json:"error-desc"`
		}
		_ = json.Unmarshal(raw, &st)
		if st.Status == "completed" {
			break
		}
		if st.Status == "failed" || st.Status == "cancelled" {
			return nil, fmt.Errorf("snapshot: migration %s: %s", st.Status, st.ErrorDesc)
		}
		if err := ctxtime.Sleep(ctx, 10*time.Millisecond); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
	}
	fi, err := os.Stat(tmp)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	s := &Snapshot{Path: filepath.Join(dir, slot+".state"), Key: key, Hello: g.Hello, Accel: g.Accel,
		Bytes: fi.Size(), Took: time.Since(begin), Created: time.Now().UTC()}
	if shared {
		// QEMU exits before the file gets its name: from here on nothing
		// writes it (its pages are in the page cache; no sync is needed
		// for other processes to map them).
		saved = true
		ram := g.bootRAM
		g.bootRAM = "" // Stop would remove it
		g.Stop()
		s.StateName, s.RAMName = sharedNames(slot, key)
		s.Path, s.RAMFile = filepath.Join(dir, s.StateName), filepath.Join(dir, s.RAMName)
		if err := os.Rename(ram, s.RAMFile); err != nil {
			os.Remove(ram)
			return nil, fmt.Errorf("snapshot: %w", err)
		}
	}
	if err := os.Rename(tmp, s.Path); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	b, _ := json.Marshal(s)
	if err := os.WriteFile(tmp+".json", b, 0o644); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if err := os.Rename(tmp+".json", filepath.Join(dir, slot+".json")); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if shared {
		removeStaleSnapshots(dir, slot, s.StateName, s.RAMName)
		os.Remove(filepath.Join(dir, slot+".state")) // a state that held its RAM
	} else {
		removeStaleSnapshots(dir, slot)
	}
	g.log.Info("guest snapshot saved", "bytes", s.Bytes, "ram_file", s.RAMName, "took", s.Took.Round(time.Millisecond))
	return s, nil
}

// qmpDo runs one QMP command without arguments (stop, cont).
func (g *Guest) qmpDo(ctx context.Context, cmd string) error {
	q, err := dialQMP(ctx, g.qmpSock, g.exited)
	if err != nil {
		return err
	}
	defer q.close()
	_, err = q.do(ctx, cmd, nil)
	return err
}

// resume finishes a restore: QEMU reads the snapshot, the VM continues,
// and the agent answers a ping.
func (g *Guest) resume(ctx context.Context, snap *Snapshot) error {
	q, err := dialQMP(ctx, g.qmpSock, g.exited)
	if err != nil {
		return err
	}
	defer q.close()
	if snap.RAMFile != "" && !snap.kept {
		// -incoming defer: the capability must be set before the stream
		// is read (it adds each RAM block's address to the stream).
		if err := q.setCapability(ctx, "x-ignore-shared", true); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		if _, err := q.do(ctx, "migrate-incoming", map[string]any{"uri": "exec:cat " + shellQuote(snap.Path)}); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
	}
	for {
		st, err := q.status(ctx)
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		if st == "running" {
			break
		}
		if st != "inmigrate" {
			// The snapshot was taken from a paused guest: continue it.
			if _, err := q.do(ctx, "cont", nil); err != nil {
				return fmt.Errorf("restore: %w", err)
			}
			break
		}
		select {
		case <-g.exited:
			return g.exitError()
		case <-ctx.Done():
			return fmt.Errorf("restore: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := g.Ping(ctx); err != nil {
		return fmt.Errorf("restored guest does not answer: %w", err)
	}
	g.Hello, g.Ready, g.Restored = snap.Hello, time.Now(), true
	return nil
}

// Restore starts a guest from the snapshot in cfg.Dir, taking the snapshot
// first (one cold boot) when there is none for this image and QEMU. It is
// the way to get a fresh, private, ready guest in well under a second
// (e.g. a learner's terminal): the caller owns the guest and Stops it.
func Restore(ctx context.Context, cfg Config) (*Guest, error) {
	cfg = cfg.WithDefaults()
	im, err := vmimage.LoadImage(cfg.Dir)
	if err != nil {
		return nil, err
	}
	qemu, err := vmimage.CheckQEMU(cfg.QEMU)
	if err != nil {
		return nil, err
	}
	accel, _, probe := chooseAccel(cfg, qemu)
	if probe {
		accel = AccelTCG // the backend probes KVM; a restore does not risk it
	}
	snap, err := EnsureSnapshot(ctx, cfg, qemu, im, accel)
	if err != nil {
		return nil, err
	}
	return startGuest(ctx, cfg, im, accel, false, snap)
}

// EnsureSnapshot returns the cache's snapshot for this image, QEMU and
// accelerator, booting a guest and saving one when there is none.
func EnsureSnapshot(ctx context.Context, cfg Config, qemu string, im *vmimage.Image, accel string) (*Snapshot, error) {
	cfg = cfg.WithDefaults()
	key := snapshotKey(cfg, qemu, im, accel)
	// One cold boot per cache, however many ask at once.
	unlock, err := lockSnapshots(cfg.Dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if s := loadSnapshot(cfg.Dir, snapshotSlot(cfg), key); s != nil {
		return s, nil
	}
	g, err := startGuest(ctx, cfg, im, accel, false, nil)
	if err != nil {
		return nil, err
	}
	defer g.Stop()
	return g.SaveSnapshot(ctx, cfg.Dir, snapshotSlot(cfg), key)
}

// lockSnapshots takes the cache dir's snapshot lock (an flock: other
// processes too), held while a snapshot is taken and its files renamed
// into place, so that two saves never mix their files.
func lockSnapshots(dir string) (unlock func(), err error) {
	lock, err := os.OpenFile(filepath.Join(dir, "snapshot.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("snapshot lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return nil, fmt.Errorf("snapshot lock: %w", err)
	}
	return func() { lock.Close() }, nil
}

// shellQuote quotes s for sh (QEMU runs exec: migration URIs with sh -c).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
