package vm

import (
	"github.com/rdmalab/rdmalab/machines/vmimage"
)

// AccelVerdict is what a guest of cfg would boot with now and why, found
// without booting one (labserver doctor): a requested accelerator; TCG
// because /dev/kvm cannot make a VM (why says so); the verdict of the last
// KVM probe boot remembered in the image cache for this host kernel and
// QEMU (remembered true); or KVM with probe true when no boot has tried
// it yet, so the next start's first boot is the real test.
func AccelVerdict(cfg Config, qemu string) (accel, why string, remembered, probe bool) {
	cfg = cfg.WithDefaults()
	switch cfg.Accel {
	case AccelKVM, AccelTCG:
		return cfg.Accel, "requested", false, false
	}
	if err := kvmUsable(); err != nil {
		return AccelTCG, err.Error(), false, false
	}
	if r := loadAccelRecord(cfg.Dir, accelKey(qemu)); r != nil {
		return r.Accel, r.Reason, true, false
	}
	return AccelKVM, "", false, true
}

// SnapshotSaved reports whether the image cache holds a saved guest state
// that a guest of cfg's shape booting im with accel would restore (the
// same image, QEMU, accelerator, memory and vCPUs); without one the next
// start boots the guest from scratch and saves it.
func SnapshotSaved(cfg Config, qemu string, im *vmimage.Image, accel string) bool {
	cfg = cfg.WithDefaults()
	return loadSnapshot(cfg.Dir, snapshotSlot(cfg), snapshotKey(cfg, qemu, im, accel)) != nil
}
