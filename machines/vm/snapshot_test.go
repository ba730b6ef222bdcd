package vm

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/sandbox"

	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
)

// ownCache is a cache directory with the shared test image linked in (vmtest.OwnCache).
func ownCache(t testing.TB) string { return vmtest.OwnCache(t) }

// linkImage links the shared test image's files into dir (vmtest.LinkImage).
func linkImage(t testing.TB, dir string) { vmtest.LinkImage(t, dir) }

// TestRestoreFromSnapshot: the first Restore boots a guest and snapshots
// it; two guests restored from that snapshot run side by side, each with
// its own Soft-RoCE devices, and a run in each works; events carry the
// host's time, not the snapshot's.
func TestRestoreFromSnapshot(t *testing.T) {
	cfg := testConfig(t)
	cfg.Dir = ownCache(t)
	cfg.Accel = AccelTCG
	cfg.Append = os.Getenv("SNAPTEST_APPEND")
	ctx := context.Background()
	first, err := Restore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Stop()
	if !first.Restored || first.Hello.Kernel == "" {
		t.Fatalf("restored guest: restored=%v hello=%+v", first.Restored, first.Hello)
	}
	qemu, _ := vmimage.CheckQEMU("qemu-system-x86_64")
	snap := loadSnapshot(cfg.Dir, snapshotSlot(cfg.WithDefaults()), snapshotKey(cfg.WithDefaults(), qemu, mustImage(t, cfg.Dir), AccelTCG))
	if snap == nil {
		t.Fatalf("no snapshot saved in %s", cfg.Dir)
	}
	t.Logf("snapshot %d bytes, saved in %s; first restore → ready %s", snap.Bytes, snap.Took, first.Ready.Sub(first.Started))
	second, err := Restore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Stop()
	t.Logf("second restore → ready %s", second.Ready.Sub(second.Started))

	for i, g := range []*Guest{first, second} {
		lab, err := g.Lab(ctx)
		if err != nil || len(lab.Devices) != 2 {
			t.Fatalf("guest %d lab: %+v, %v", i, lab, err)
		}
	}
	errs := make(chan error, 2)
	before := time.Now().Add(-time.Second)
	for _, g := range []*Guest{first, second} {
		go func() {
			var events []sandbox.Event
			err := g.Run(ctx, sandbox.NewSession(sandbox.Request{RunID: "r", Experiment: "memlock",
				Params: sandbox.Params{"limit": "8388608", "size": int64(1 << 20), "ipc_lock": "drop"}},
				nil, func(ev sandbox.Event) { events = append(events, ev) }))
			if err == nil && len(events) == 0 {
				err = errNoEvents
			}
			for _, ev := range events {
				if ev.Time.Before(before) {
					t.Errorf("event time %s is from before the run (the snapshot's clock?)", ev.Time)
					break
				}
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

var errNoEvents = os.ErrNotExist

func mustImage(t *testing.T, dir string) *vmimage.Image {
	t.Helper()
	im, err := vmimage.LoadImage(dir)
	if err != nil {
		t.Fatal(err)
	}
	return im
}
