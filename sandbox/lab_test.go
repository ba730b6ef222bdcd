package sandbox

import (
	"strings"
	"testing"
)

func TestLabString(t *testing.T) {
	for _, c := range []struct {
		lab  Lab
		want string
	}{
		{Lab{Backend: "vm", State: "ready", Kernel: "6.1.0-56-amd64", Accel: "tcg", Devices: []Device{
			{Name: "rxe0", Netdev: "veth0"}, {Name: "rxe1", Netdev: "veth1"}}},
			"Soft-RoCE lab: ready (rxe0, rxe1 on veth, kernel 6.1.0-56-amd64, TCG)"},
		{Lab{Backend: "host", State: "ready", Kernel: "6.8.0", Devices: []Device{
			{Name: "mlx5_0", Netdev: "eth0"}, {Name: "rxe0", Netdev: "rdmalab0"}}},
			"RDMA lab (this host): ready (mlx5_0 on eth0, rxe0 on rdmalab0, kernel 6.8.0)"},
		{Lab{Backend: "vm", State: "booting", Reason: Same("booting kernel 6.1.0-56-amd64 with TCG")},
			"Soft-RoCE lab: booting… (booting kernel 6.1.0-56-amd64 with TCG)"},
		{Lab{Backend: "vm", State: "failed", Reason: Same("qemu exited; console:\nKernel panic")},
			"Soft-RoCE lab: failed — qemu exited; console:\nKernel panic"},
		{Lab{Backend: "none", State: "none", Reason: Same("missing qemu-system-x86_64; fix: apt-get install -y qemu-system-x86")},
			"Soft-RoCE lab: none — missing qemu-system-x86_64; fix: apt-get install -y qemu-system-x86"},
	} {
		if got := c.lab.String(); got != c.want {
			t.Errorf("Lab(%+v).String()\n got %q\nwant %q", c.lab, got, c.want)
		}
	}
}

func TestDeviceTable(t *testing.T) {
	out := DeviceTable([]Device{
		{Name: "rxe0", Netdev: "veth0", GID: "::ffff:10.0.0.1", GIDIndex: 1, Counters: map[string]int64{"sent_pkts": 5, "rcvd_pkts": 0}},
		{Name: "rxe1", Netdev: "veth1", GID: "::ffff:10.0.0.2", GIDIndex: 1, Counters: map[string]int64{"sent_pkts": 0}},
	})
	for _, want := range []string{"rxe0", "::ffff:10.0.0.1", "sent_pkts                5", "all 1 are zero"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
