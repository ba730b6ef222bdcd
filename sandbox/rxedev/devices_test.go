package rxedev

import (
	"context"
	"os"
	"testing"
)

// Devices on this kernel: a list (possibly empty: these machines' host
// kernels have no RDMA) and never an error for "no devices". The guest
// tests in machines/vm (through the guest) exercise Devices and SetupSoftRoCE on real rxe.
func TestDevicesThisKernel(t *testing.T) {
	devs, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	_, statErr := os.Stat("/sys/class/infiniband")
	if os.IsNotExist(statErr) && len(devs) != 0 {
		t.Fatalf("no /sys/class/infiniband but devices %v", devs)
	}
	for _, d := range devs {
		t.Logf("%s netdev %s gid[%d] %s, %d counters", d.Name, d.Netdev, d.GIDIndex, d.GID, len(d.Counters))
	}
}

// RxeLoadable answers with a reason either way; on a kernel without the
// module the reason names the kernel.
func TestRxeLoadable(t *testing.T) {
	err := RxeLoadable(context.Background())
	t.Logf("rdma_rxe on this kernel: %v", err)
	if err != nil && err.Error() == "" {
		t.Fatal("empty reason")
	}
}

func TestIPv4GIDNoDevice(t *testing.T) {
	if _, _, ok := IPv4GID("no-such-device"); ok {
		t.Fatal("found a GID on a device that does not exist")
	}
}
