// Package rxedev finds the RDMA devices of the running kernel (with
// github.com/Mellanox/rdmamap) and sets up Soft-RoCE: a veth pair with an
// rdma_rxe device on each end (with github.com/vishvananda/netlink). The same
// code runs on a host with rdma_rxe (--setup-softroce) and inside the lab
// guest, whose init calls SetupSoftRoCE.
package rxedev

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/Mellanox/rdmamap"

	"github.com/rdmalab/rdmalab/sandbox"
)

// maxGIDScan bounds the GID table scan; rxe has 1024 entries, and the
// IPv4-mapped GID of a freshly configured device is one of the first.
const maxGIDScan = 16

// Devices lists the RDMA devices of this kernel: name, netdev, the
// IPv4-mapped RoCE v2 GID of port 1 and its hw_counters now. An empty list
// (and no error) means the kernel has no RDMA device.
func Devices() ([]sandbox.Device, error) {
	names := rdmamap.GetRdmaDeviceList()
	sort.Strings(names)
	devs := make([]sandbox.Device, 0, len(names))
	for _, name := range names {
		d := sandbox.Device{Name: name, GIDIndex: -1}
		if idx, gid, ok := IPv4GID(name); ok {
			d.GID, d.GIDIndex = gid, idx
		}
		d.Netdev = netdevOf(name, max(d.GIDIndex, 0))
		stats, err := rdmamap.GetRdmaSysfsHwStats(name, 1)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("hw_counters of %s: %w", name, err)
		}
		if len(stats) > 0 {
			d.Counters = make(map[string]int64, len(stats))
			for _, s := range stats {
				if s.Name == "lifespan" {
					continue // the refresh period in ms, not a counter
				}
				d.Counters[s.Name] = int64(s.Value)
			}
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// netdevOf reads which network interface GID index idx of port 1 of dev
// belongs to. (rdmamap's netdev lookup scans every entry of the GID table,
// 1024 sysfs files per device for rxe: seconds under TCG.)
func netdevOf(dev string, idx int) string {
	b, err := os.ReadFile(filepath.Join(rdmamap.RdmaClassDir, dev, rdmamap.RdmaPortsdir, "1",
		rdmamap.RdmaGidAttrDir, rdmamap.RdmaGidAttrNdevDir, strconv.Itoa(idx)))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// IPv4GID finds the first IPv4-mapped GID (::ffff:a.b.c.d) of port 1 of dev:
// the one RoCE v2 tools must use (index 0 is the link-local fe80:: GID).
func IPv4GID(dev string) (index int, gid string, ok bool) {
	dir := filepath.Join(rdmamap.RdmaClassDir, dev, rdmamap.RdmaPortsdir, "1", "gids")
	for i := range maxGIDScan {
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			return 0, "", false
		}
		a, err := netip.ParseAddr(strings.TrimSpace(string(b)))
		if err == nil && a.Is4In6() {
			return i, a.String(), true
		}
	}
	return 0, "", false
}
