package rxedev

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Topology is two Soft-RoCE devices standing for two hosts: an rxe device on
// each end of a veth pair, in the init network namespace (rxe in 6.1 only
// uses init_net, so the ends cannot live in separate namespaces).
type Topology struct {
	Veth   [2]string       // veth pair ends
	Addr   [2]netip.Prefix // address of each end
	Rxe    [2]string       // rxe device on each end
	Tables [2]int          // routing tables for the wire routes (Wire only)
	// Wire adds policy routing so traffic between the two addresses really
	// crosses the veth pair. Without it the kernel short-cuts local
	// addresses through lo and a QP from Rxe[1] to Rxe[0] fails at RTR.
	// It moves the "lookup local" rule from priority 0 to 300.
	Wire bool
}

// GuestTopology is the lab guest's: rxe0 on veth0 (10.0.0.1), rxe1 on veth1
// (10.0.0.2). rxe0 alone also loops back for single-device runs.
var GuestTopology = Topology{
	Veth:   [2]string{"veth0", "veth1"},
	Addr:   [2]netip.Prefix{netip.MustParsePrefix("10.0.0.1/24"), netip.MustParsePrefix("10.0.0.2/24")},
	Rxe:    [2]string{"rxe0", "rxe1"},
	Tables: [2]int{10, 11},
	Wire:   true,
}

// HostTopology is what --setup-softroce creates on a host whose kernel can
// load rdma_rxe; names and addresses that are unlikely to clash with the
// host's own network.
var HostTopology = Topology{
	Veth:   [2]string{"rdmalab0", "rdmalab1"},
	Addr:   [2]netip.Prefix{netip.MustParsePrefix("10.213.70.1/30"), netip.MustParsePrefix("10.213.70.2/30")},
	Rxe:    [2]string{"rxe0", "rxe1"},
	Tables: [2]int{21370, 21371},
	Wire:   true,
}

// SetupSoftRoCE creates the topology; parts that already exist are kept, so
// a restart of the server does not fail. rdma_rxe must be loaded.
func SetupSoftRoCE(ctx context.Context, top Topology) error {
	if lo, err := netlink.LinkByName("lo"); err == nil {
		if err := netlink.LinkSetUp(lo); err != nil {
			return fmt.Errorf("set lo up: %w", err)
		}
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: top.Veth[0]}, PeerName: top.Veth[1]}
	if err := netlink.LinkAdd(veth); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("create veth pair %s/%s: %w", top.Veth[0], top.Veth[1], err)
	}
	links := [2]netlink.Link{}
	for i, name := range top.Veth {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return fmt.Errorf("veth %s: %w", name, err)
		}
		links[i] = l
		addr := &netlink.Addr{IPNet: prefixNet(top.Addr[i])}
		if err := netlink.AddrAdd(l, addr); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("address %s on %s: %w", top.Addr[i], name, err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return fmt.Errorf("set %s up: %w", name, err)
		}
	}
	for i, rxe := range top.Rxe {
		if _, err := netlink.RdmaLinkByName(rxe); err == nil {
			continue
		}
		if err := netlink.RdmaLinkAdd(rxe, "rxe", top.Veth[i]); err != nil {
			return fmt.Errorf("rdma link add %s type rxe netdev %s: %w", rxe, top.Veth[i], err)
		}
	}
	if top.Wire {
		if err := wire(top, links); err != nil {
			return err
		}
	}
	// The IPv4-mapped GID appears asynchronously after the device and the
	// address exist; tools started before that pick the wrong GID.
	deadline := time.Now().Add(10 * time.Second)
	for _, rxe := range top.Rxe {
		for {
			if _, _, ok := IPv4GID(rxe); ok {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s has no IPv4-mapped GID after 10 s", rxe)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

// wire adds the policy routing of Topology.Wire.
func wire(top Topology, links [2]netlink.Link) error {
	for _, dev := range []string{"all", top.Veth[0], top.Veth[1]} {
		for key, val := range map[string]string{"accept_local": "1", "rp_filter": "0"} {
			f := filepath.Join("/proc/sys/net/ipv4/conf", dev, key)
			if err := os.WriteFile(f, []byte(val), 0o644); err != nil {
				return fmt.Errorf("sysctl %s: %w", f, err)
			}
		}
	}
	rule := func(prio int, mod func(r *netlink.Rule)) error {
		r := netlink.NewRule()
		r.Priority = prio
		r.Table = unix.RT_TABLE_LOCAL
		mod(r)
		if err := netlink.RuleAdd(r); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("ip rule add pref %d: %w", prio, err)
		}
		return nil
	}
	// Packets arriving on either end are for us: look them up in local first.
	for i := range 2 {
		iif := top.Veth[i]
		if err := rule(100+i, func(r *netlink.Rule) { r.IifName = iif }); err != nil {
			return err
		}
	}
	// Traffic from one end's address to the other's leaves through its own end.
	for i := range 2 {
		me, peer := top.Addr[i].Addr(), top.Addr[1-i].Addr()
		rt := &netlink.Route{
			LinkIndex: links[i].Attrs().Index,
			Dst:       prefixNet(netip.PrefixFrom(peer, 32)),
			Src:       net.IP(me.AsSlice()),
			Table:     top.Tables[i],
			Scope:     netlink.SCOPE_LINK,
		}
		if err := netlink.RouteAdd(rt); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("route to %s via %s: %w", peer, top.Veth[i], err)
		}
		table := top.Tables[i]
		if err := rule(200+i, func(r *netlink.Rule) {
			r.Src = prefixNet(netip.PrefixFrom(me, 32))
			r.Dst = prefixNet(netip.PrefixFrom(peer, 32))
			r.Table = table
		}); err != nil {
			return err
		}
	}
	// Everything else still finds local addresses, just after our rules.
	if err := rule(300, func(*netlink.Rule) {}); err != nil {
		return err
	}
	r := netlink.NewRule()
	r.Priority = 0
	r.Table = unix.RT_TABLE_LOCAL
	if err := netlink.RuleDel(r); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("ip rule del pref 0 lookup local: %w", err)
	}
	return nil
}

func prefixNet(p netip.Prefix) *net.IPNet {
	a := p.Addr()
	return &net.IPNet{IP: net.IP(a.AsSlice()), Mask: net.CIDRMask(p.Bits(), a.BitLen())}
}

// RxeLoadable reports whether the running kernel can provide rdma_rxe
// (loaded, built in, or a module modprobe can find) and whether we may set
// it up (network admin rights). The error says why not and how to fix it.
func RxeLoadable(ctx context.Context) error {
	if _, err := os.Stat("/sys/module/rdma_rxe"); err == nil {
		return needAdmin()
	}
	out, err := exec.CommandContext(ctx, "modprobe", "-n", "-q", "rdma_rxe").CombinedOutput()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return errors.New("modprobe not found; fix: apt-get install -y kmod")
		}
		var uts unix.Utsname
		_ = unix.Uname(&uts)
		return fmt.Errorf("kernel %s has no rdma_rxe module (%s)", unix.ByteSliceToString(uts.Release[:]), strings.TrimSpace(string(out)))
	}
	return needAdmin()
}

func needAdmin() error {
	if os.Geteuid() != 0 {
		return errors.New("setting up Soft-RoCE needs root (CAP_NET_ADMIN); run labserver as root")
	}
	return nil
}

// LoadRxe loads rdma_rxe on the host, crc32_generic first: rdma_rxe asks the
// crypto API for "crc32", a dependency modules.dep does not record.
func LoadRxe(ctx context.Context) error {
	_ = exec.CommandContext(ctx, "modprobe", "-q", "crc32_generic").Run() // may be built in
	if out, err := exec.CommandContext(ctx, "modprobe", "rdma_rxe").CombinedOutput(); err != nil {
		return fmt.Errorf("modprobe rdma_rxe: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// LoadModuleFile loads one kernel module file with finit_module(2). The guest
// init uses it: the guest has no kmod, and the load order is decided when
// the image is built. A module that is already loaded is not an error.
func LoadModuleFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.FinitModule(int(f.Fd()), "", 0); err != nil && !errors.Is(err, syscall.EEXIST) {
		return fmt.Errorf("load module %s: %w", filepath.Base(path), err)
	}
	return nil
}
