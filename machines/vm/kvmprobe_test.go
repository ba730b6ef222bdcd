package vm

import (
	"context"
	"github.com/rdmalab/rdmalab/machines/vmimage"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hangingKVM writes a QEMU wrapper that behaves like a KVM which accepts
// the ioctls but cannot run the guest (a nested hypervisor): asked for KVM
// it starts a real QEMU whose CPU never runs (-S), so the console stays
// empty and the agent never answers. Every KVM start is logged to the
// returned file.
func hangingKVM(t *testing.T) (qemu, kvmLog string) {
	t.Helper()
	real, err := vmimage.CheckQEMU("qemu-system-x86_64")
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	qemu, kvmLog = filepath.Join(dir, "qemu-hanging-kvm"), filepath.Join(dir, "kvm.log")
	script := `#!/bin/bash
args=(); kvm=0
for a in "$@"; do
  case "$a" in
    kvm) kvm=1; args+=(tcg);;
    host) args+=(max);;
    *) args+=("$a");;
  esac
done
if [ $kvm = 1 ]; then echo kvm >> ` + kvmLog + `; exec ` + real + ` "${args[@]}" -S; fi
exec ` + real + ` "$@"
`
	if err := os.WriteFile(qemu, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return qemu, kvmLog
}

// TestKVMProbeHang: in auto mode a KVM boot whose guest shows no progress
// is given up after the probe (not the boot timeout), the lab comes up with
// TCG, and the verdict is remembered: the next start does not try KVM.
func TestKVMProbeHang(t *testing.T) {
	if err := kvmUsable(); err != nil {
		t.Skipf("auto mode probes KVM only where /dev/kvm works: %v", err)
	}
	qemu, kvmLog := hangingKVM(t)
	cfg := testConfig(t)
	cfg.QEMU = qemu
	cfg.Dir = t.TempDir()
	// The image in a cache of our own (the verdict file is written there).
	linkImage(t, cfg.Dir)
	boot := func() string {
		b := New(cfg)
		b.Start()
		defer b.Close()
		g, err := b.WaitReady(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return g.Accel
	}
	if accel := boot(); accel != AccelTCG {
		t.Fatalf("first start: accel %s, want tcg", accel)
	}
	r := loadAccelRecord(cfg.Dir, accelKey(qemu))
	if r == nil || r.Accel != AccelTCG || !strings.Contains(r.Reason, "made no progress") {
		t.Fatalf("verdict after a hanging KVM: %+v, want tcg because the guest made no progress", r)
	}
	t.Logf("verdict: %s", r.Reason)
	if accel := boot(); accel != AccelTCG {
		t.Fatalf("second start: accel %s, want tcg", accel)
	}
	b, _ := os.ReadFile(kvmLog)
	if n := strings.Count(string(b), "kvm"); n != 1 {
		t.Fatalf("KVM was tried %d times over two starts, want once (the verdict is remembered)", n)
	}
}
