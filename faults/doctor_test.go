package faults

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorTellsTheAccelerator boots a guest the way the lab does (`labserver
// vm boot`: KVM tried first, the verdict remembered in the image cache),
// then asks `labserver doctor`: its accelerator line must agree with the
// real boot. On a host where KVM cannot boot the guest (this project's
// machines: /dev/kvm opens, the guest makes no progress) that is TCG, a
// warning that quotes the probe's cause and how to get KVM.
func TestDoctorTellsTheAccelerator(t *testing.T) {
	bin := labserver(t) // skips under -short
	dir := t.TempDir()
	vmDir := filepath.Join(dir, "vm")
	if out, err := exec.Command(bin, "vm", "build", "--dir", vmDir).CombinedOutput(); err != nil {
		t.Fatalf("labserver vm build: %v\n%s", err, out)
	}
	boot := exec.Command(bin, "vm", "boot", "--dir", vmDir, "--accel", "auto")
	if out, err := boot.CombinedOutput(); err != nil {
		t.Fatalf("labserver vm boot: %v\n%s", err, out)
	}
	doc := exec.Command(bin, "doctor", "--db", filepath.Join(dir, "lab.db"), "--backend", "vm", "--addr", "127.0.0.1:0")
	doc.Env = append(os.Environ(), "LAB_VM_DIR="+vmDir, "LANG=C", "LC_ALL=", "LC_MESSAGES=", "LAB_VM_ACCEL=auto")
	out, err := doc.Output()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "accelerator:") {
			line = l
		}
	}
	b, err := os.ReadFile(filepath.Join(vmDir, "accel.json"))
	if err != nil {
		// No verdict remembered: /dev/kvm itself refused, decided without a boot.
		if !strings.HasPrefix(line, "WARN  accelerator: guests run under TCG") || !strings.Contains(line, "/dev/kvm") {
			t.Errorf("no KVM probe was needed (no usable /dev/kvm), doctor says %q\n%s", line, out)
		}
		return
	}
	var verdict struct{ Accel, Reason string }
	if err := json.Unmarshal(b, &verdict); err != nil {
		t.Fatal(err)
	}
	switch verdict.Accel {
	case "tcg":
		if !strings.HasPrefix(line, "WARN  accelerator: guests run under TCG") || !strings.Contains(line, verdict.Reason) {
			t.Errorf("the boot fell back to TCG (%s); doctor says %q\n%s", verdict.Reason, line, out)
		}
		if !strings.Contains(string(out), "fix: for KVM:") {
			t.Errorf("the TCG warning comes without its fix:\n%s", out)
		}
	case "kvm":
		if !strings.HasPrefix(line, "ok    accelerator: KVM") {
			t.Errorf("the guest booted with KVM; doctor says %q\n%s", line, out)
		}
	default:
		t.Errorf("accel.json says %q", verdict.Accel)
	}
	t.Logf("doctor on this machine:\n%s", out)
}
