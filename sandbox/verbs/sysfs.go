package verbs

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/Mellanox/rdmamap"
	"github.com/vishvananda/netlink"
)

// GID is a 128-bit RoCE/IB global identifier. On RoCE it is an IPv6
// address; an IPv4 address appears IPv4-mapped (::ffff:a.b.c.d).
type GID [16]byte

// String prints the GID like sysfs does ("0000:…:ffff:0a00:0001").
func (g GID) String() string {
	var b strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%02x%02x", g[i], g[i+1])
	}
	return b.String()
}

// IP is the GID as an IP address (IPv4 when it is IPv4-mapped).
func (g GID) IP() net.IP {
	ip := net.IP(g[:])
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	return ip
}

// IsIPv4 reports whether the GID is IPv4-mapped.
func (g GID) IsIPv4() bool { return net.IP(g[:]).To4() != nil && !g.isZero() }

func (g GID) isZero() bool { return g == GID{} }

// ParseGID parses the sysfs form "xxxx:xxxx:…" (8 groups of 4 hex digits).
func ParseGID(s string) (GID, error) {
	var g GID
	h := strings.ReplaceAll(strings.TrimSpace(s), ":", "")
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != 16 {
		return g, fmt.Errorf("parse GID %q: want 8 groups of 4 hex digits", s)
	}
	copy(g[:], b)
	return g, nil
}

// sysfsRoot is where the kernel publishes RDMA devices.
const sysfsRoot = "/sys/class/infiniband"

// DeviceNames lists the RDMA devices the kernel has, sorted (via rdmamap,
// so it needs no libibverbs). An empty list is not an error.
func DeviceNames() []string {
	l := rdmamap.GetRdmaDeviceList()
	sort.Strings(l)
	return l
}

// GIDEntry is one row of a port's GID table.
type GIDEntry struct {
	Index  int
	GID    GID
	Type   string // "RoCE v2", "IB/RoCE v1"
	Netdev string
}

// GIDs reads the non-zero entries of a port's GID table from sysfs.
func GIDs(dev string, port int) ([]GIDEntry, error) {
	dir := filepath.Join(sysfsRoot, dev, "ports", strconv.Itoa(port))
	ents, err := os.ReadDir(filepath.Join(dir, "gids"))
	if err != nil {
		return nil, fmt.Errorf("read GID table of %s port %d: %w", dev, port, err)
	}
	var out []GIDEntry
	for _, e := range ents {
		idx, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, "gids", e.Name()))
		if err != nil {
			continue // unpopulated entries may refuse to be read
		}
		g, err := ParseGID(string(raw))
		if err != nil || g.isZero() {
			continue
		}
		typ, _ := os.ReadFile(filepath.Join(dir, "gid_attrs", "types", e.Name()))
		nd, _ := os.ReadFile(filepath.Join(dir, "gid_attrs", "ndevs", e.Name()))
		out = append(out, GIDEntry{Index: idx, GID: g, Type: strings.TrimSpace(string(typ)), Netdev: strings.TrimSpace(string(nd))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// ErrNoIPv4GID means a port has no IPv4-mapped GID: its netdev has no IPv4
// address, or the address was added moments ago and the table is not filled.
var ErrNoIPv4GID = errors.New("no IPv4-mapped GID")

// IPv4GID finds the GID index whose GID is IPv4-mapped, preferring RoCE v2:
// index 0 is the link-local fe80:: GID, which cannot be routed, so perftest
// users pass -x 1; we look it up instead of assuming.
func IPv4GID(dev string, port int) (GIDEntry, error) {
	ents, err := GIDs(dev, port)
	if err != nil {
		return GIDEntry{}, err
	}
	var found *GIDEntry
	for i := range ents {
		e := &ents[i]
		if !e.GID.IsIPv4() {
			continue
		}
		if found == nil || (e.Type == "RoCE v2" && found.Type != "RoCE v2") {
			found = e
		}
	}
	if found == nil {
		return GIDEntry{}, fmt.Errorf("%s port %d: %w (GIDs: %d entries)", dev, port, ErrNoIPv4GID, len(ents))
	}
	return *found, nil
}

// Counters reads a port's hw_counters (and counters) via rdmamap, e.g.
// "rcvd_pkts", "rcvd_rnr_err". Soft-RoCE keeps them in hw_counters.
func Counters(dev string, port int) (map[string]int64, error) {
	st, err := rdmamap.GetRdmaSysfsAllStats(dev, port)
	if err != nil {
		return nil, fmt.Errorf("read counters of %s port %d: %w", dev, port, err)
	}
	if len(st.HwStats) == 0 && len(st.Stats) == 0 {
		return nil, fmt.Errorf("read counters of %s port %d: none found under %s", dev, port, sysfsRoot)
	}
	m := make(map[string]int64, len(st.HwStats)+len(st.Stats))
	for _, e := range st.Stats {
		m[e.Name] = int64(e.Value)
	}
	for _, e := range st.HwStats {
		m[e.Name] = int64(e.Value)
	}
	return m, nil
}

// Resources returns what `rdma resource` prints: per device, how many PDs,
// CQs, QPs, MRs, contexts… exist right now (the kernel's resource tracking,
// read over RDMA netlink). Tests use it to prove every run freed everything.
func Resources() (map[string]map[string]uint64, error) {
	l, err := netlink.RdmaResourceList()
	if err != nil {
		return nil, fmt.Errorf("rdma resource (netlink): %w", err)
	}
	out := make(map[string]map[string]uint64, len(l))
	for _, r := range l {
		out[r.Name] = r.RdmaResourceSummaryEntries
	}
	return out, nil
}
