package vm

import (
	"context"
	"github.com/rdmalab/rdmalab/machines/vmimage"
	"strings"
	"testing"
)

// The accelerator record remembers a KVM verdict for the same host kernel
// and QEMU only.
func TestAccelRecord(t *testing.T) {
	dir := t.TempDir()
	saveAccelRecord(dir, accelRecord{Key: "k1", Accel: AccelTCG, Reason: "KVM boot failed: x"})
	if r := loadAccelRecord(dir, "k1"); r == nil || r.Accel != AccelTCG || r.Reason != "KVM boot failed: x" {
		t.Fatalf("record for k1: %+v", r)
	}
	if r := loadAccelRecord(dir, "k2"); r != nil {
		t.Fatalf("record for another QEMU or kernel: %+v", r)
	}
}

// Asking for KVM where it does not work fails the boot at once with QEMU's
// own reason (the backend's auto mode then uses TCG).
func TestKVMUnusable(t *testing.T) {
	if kvmUsable() == nil {
		t.Skip("this machine has a usable /dev/kvm; the KVM boot is exercised by TestWarmGuest")
	}
	cfg := testConfig(t)
	im, err := vmimage.LoadImage(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = StartGuest(context.Background(), cfg, im, AccelKVM, false)
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "kvm") {
		t.Fatalf("KVM boot without KVM: %v", err)
	}
	t.Logf("reason: %v", err)
	accel, why, _ := chooseAccel(cfg.WithDefaults(), "qemu-system-x86_64")
	if accel != AccelTCG || why == "" {
		t.Errorf("auto accel = %s (%q), want tcg with a reason", accel, why)
	}
}
