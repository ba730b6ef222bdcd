package netshape

import (
	"context"
	"strings"
	"testing"
)

// TestOnlyLabLinks: the lab shapes its own veth ends and nothing else —
// a host's real NIC with an rxe device must never get packet loss.
func TestOnlyLabLinks(t *testing.T) {
	for _, dev := range []string{"veth0", "veth1", "rdmalab0", "rdmalab1"} {
		if !Ours(dev) {
			t.Errorf("Ours(%q) = false, want true", dev)
		}
	}
	for _, dev := range []string{"eth0", "lo", "ens3", "veth10", "", "rdmalab"} {
		if Ours(dev) {
			t.Errorf("Ours(%q) = true, want false", dev)
		}
		if _, err := Loss(context.Background(), dev, 1, false); err == nil || !strings.Contains(err.Error(), "not one of the lab's own") {
			t.Errorf("Loss(%q) = %v, want a refusal", dev, err)
		}
	}
	if _, err := Loss(context.Background(), "veth1", 101, false); err == nil {
		t.Error("Loss 101 % accepted")
	}
}
