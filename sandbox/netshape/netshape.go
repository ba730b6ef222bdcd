// Package netshape changes and restores what lesson 02's experiments do to
// the lab's links: a netem qdisc that drops (or ECN-marks) packets on one
// veth end, and the GSO limit that makes the loss hit single packets. The
// experiments apply it through `tc` and `ip` (so the log shows the exact
// commands a learner would type) and reset it when they end; the guest's
// agent server resets it again after every run, however that run ended —
// a run killed mid-loss must not leave loss behind for the next learner.
package netshape

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
)

// GuestLinks are the lab guest's veth ends (see rxedev.GuestTopology).
var GuestLinks = []string{"veth0", "veth1"}

// HostLinks are the veth ends `--setup-softroce` creates on a host (see
// rxedev.HostTopology).
var HostLinks = []string{"rdmalab0", "rdmalab1"}

// Ours reports whether dev is one of the lab's own veth ends: the only
// links an experiment may shape. A host's real NIC carrying an rxe device
// must never get a lab's packet loss.
func Ours(dev string) bool {
	for _, l := range append(append([]string{}, GuestLinks...), HostLinks...) {
		if dev == l {
			return true
		}
	}
	return false
}

// gsoDefault is the kernel's GSO_MAX_SEGS, what a veth starts with.
const gsoDefault = 65535

// Loss puts a netem qdisc on dev's egress that drops pct percent of the
// packets (with ecn, packets marked ECN-capable are CE-marked instead of
// dropped), and limits dev's GSO to one segment per packet so TCP's
// segments are dropped one by one like rxe's packets, not 44 at a time.
// It returns the equivalent commands, for the learner's log. Without ecn
// it talks netlink directly (starting tc costs ~0.3 s in the emulated
// guest); with ecn it runs tc, whose netem knows the flag.
func Loss(ctx context.Context, dev string, pct float64, ecn bool) ([]string, error) {
	if pct < 0 || pct > 100 {
		return nil, fmt.Errorf("loss %v%% outside 0–100", pct)
	}
	if !Ours(dev) {
		return nil, fmt.Errorf("%s is not one of the lab's own veth links (%v, %v): the lab never shapes another link", dev, GuestLinks, HostLinks)
	}
	tc := []string{"tc", "qdisc", "replace", "dev", dev, "root", "netem", "loss", strconv.FormatFloat(pct, 'f', -1, 64) + "%"}
	if ecn {
		tc = append(tc, "ecn")
	}
	ran := []string{"ip link set dev " + dev + " gso_max_segs 1", strings.Join(tc, " ")}
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return ran, fmt.Errorf("link %s: %w", dev, err)
	}
	if err := netlink.LinkSetGSOMaxSegs(l, 1); err != nil {
		return ran, fmt.Errorf("%s: %w", ran[0], err)
	}
	if ecn {
		if out, err := exec.CommandContext(ctx, tc[0], tc[1:]...).CombinedOutput(); err != nil {
			return ran, fmt.Errorf("%s: %w: %s", ran[1], err, strings.TrimSpace(string(out)))
		}
		return ran, nil
	}
	q := netlink.NewNetem(netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
		netlink.NetemQdiscAttrs{Loss: float32(pct)})
	if err := netlink.QdiscReplace(q); err != nil {
		return ran, fmt.Errorf("%s: %w", ran[1], err)
	}
	return ran, nil
}

// Reset removes every root netem and clsact qdisc we may have added on devs (the kernel's
// default one comes back) and restores their GSO limit. Links that do not
// exist are skipped. It uses netlink, not tc, so it works even where the
// tc program is missing.
func Reset(devs ...string) error {
	var errs []error
	for _, dev := range devs {
		l, err := netlink.LinkByName(dev)
		if err != nil {
			continue
		}
		qs, err := netlink.QdiscList(l)
		if err != nil {
			errs = append(errs, fmt.Errorf("list qdiscs of %s: %w", dev, err))
			continue
		}
		for _, q := range qs {
			a := q.Attrs()
			// netem: lesson 02's loss; clsact: lesson 05's drop filters
			// (sandbox/rdmaexp/wiretc.go), which match one QP number — a
			// leftover would hit the next QP that gets the same number.
			if a.Parent == netlink.HANDLE_ROOT && q.Type() == "netem" || q.Type() == "clsact" {
				if err := netlink.QdiscDel(q); err != nil {
					errs = append(errs, fmt.Errorf("delete %s qdisc of %s: %w", q.Type(), dev, err))
				}
			}
		}
		if l.Attrs().GSOMaxSegs != 0 && l.Attrs().GSOMaxSegs < gsoDefault {
			if err := netlink.LinkSetGSOMaxSegs(l, gsoDefault); err != nil {
				errs = append(errs, fmt.Errorf("restore gso_max_segs of %s: %w", dev, err))
			}
		}
	}
	return errors.Join(errs...)
}

// State describes what shaping dev has now: "" when none, else e.g.
// "netem loss 1% on veth1" or "gso_max_segs 1 on veth1".
func State(dev string) (string, error) {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return "", err
	}
	qs, err := netlink.QdiscList(l)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, q := range qs {
		if n, ok := q.(*netlink.Netem); ok && q.Attrs().Parent == netlink.HANDLE_ROOT {
			parts = append(parts, fmt.Sprintf("netem loss %.4g%% on %s", float64(n.Loss)*100/float64(^uint32(0)), dev))
		}
	}
	if s := l.Attrs().GSOMaxSegs; s != 0 && s < gsoDefault {
		parts = append(parts, fmt.Sprintf("gso_max_segs %d on %s", s, dev))
	}
	return strings.Join(parts, ", "), nil
}
