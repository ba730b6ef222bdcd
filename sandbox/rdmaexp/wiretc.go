package rdmaexp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// A wire fault: a tc filter on the responder's netdev (ingress, clsact)
// that drops RoCEv2 packets to one queue pair only, so runs that share the
// guest are not hit. Ingress, not the sender's egress: a packet dropped by
// the sender's own qdisc is reported back to rxe, which counts send_err
// and sends it again at once — nothing like a loss on the wire. Dropped
// at the receiver's door, the packet has left the sender (a capture on
// the sender's netdev shows it) and never arrives, as if a switch lost it. Two kinds, both from the gact action (act_gact):
//
//   - "determ": drop every n-th matching packet (the n-th, 2n-th, …):
//     deterministic, for "one packet is lost";
//   - "netrand": drop each matching packet with probability 1/n (the
//     kernel's gact_net_rand; tc's man page suggests n/10000, but 1000
//     dropped nothing in 90 packets here): a lossy link.
//
// The u32 match reads the BTH at the fixed offset of an option-less IPv4
// header (20) + UDP (8): opcode at 28, DestQP at 33–35.
type wireFault struct {
	Iface  string
	DestQP uint32
	Opcode int    // match only this BTH opcode; -1 any
	Kind   string // "determ" or "netrand"
	N      int
}

// errNoTC: the guest image lacks tc or the kernel lacks the modules.
var errNoTC = errors.New("tc (iproute2) is not available here, so the lab cannot drop a packet on purpose")

// faultError explains a run's error to the learner in both languages
// when it is errNoTC; anything else goes to verbsError.
func faultError(emit sandbox.Emitter, err error) error {
	if errors.Is(err, errNoTC) {
		return explained(emit, say(errNoTC.Error(), "这里没有 tc（iproute2），实验室无法有意丢掉一个报文"))
	}
	return verbsError(emit, err)
}

// install adds the filter and returns the function that removes it. The
// clsact qdisc is removed with it (and with it every filter on it); a
// clsact left behind by a killed run is removed first.
func (f wireFault) install(ctx context.Context) (func(), error) {
	tc, err := exec.LookPath("tc")
	if err != nil {
		return nil, errNoTC
	}
	run := func(args ...string) error {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(cctx, tc, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("tc %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	waitModules(ctx, 10*time.Second, "sch_ingress", "cls_u32", "act_gact")
	_ = run("qdisc", "del", "dev", f.Iface, "clsact") // a leftover; "no such qdisc" is the usual answer
	if err := run("qdisc", "add", "dev", f.Iface, "clsact"); err != nil {
		return nil, err
	}
	undo := func() { _ = run("qdisc", "del", "dev", f.Iface, "clsact") }
	args := []string{"filter", "add", "dev", f.Iface, "ingress", "protocol", "ip", "prio", "1", "u32",
		"match", "ip", "protocol", "17", "0xff",
		"match", "ip", "dport", "4791", "0xffff",
		"match", "u32", fmt.Sprintf("0x%08x", f.DestQP&0xffffff), "0x00ffffff", "at", "32"}
	if f.Opcode >= 0 {
		args = append(args, "match", "u8", fmt.Sprintf("0x%02x", f.Opcode), "0xff", "at", "28")
	}
	args = append(args, "action", "gact", "ok", "random", f.Kind, "drop", strconv.Itoa(f.N))
	if err := run(args...); err != nil {
		undo()
		return nil, err
	}
	return undo, nil
}

// waitModules waits (at most limit) until the kernel modules are loaded:
// the guest loads them just after it says it is ready (vmimage's
// lateModules) and has no modprobe for tc to load them on demand, so a run
// right after boot could otherwise find no gact action. A module built
// into the kernel, or one that never comes, only costs the wait.
func waitModules(ctx context.Context, limit time.Duration, names ...string) {
	deadline := time.Now().Add(limit)
	for _, n := range names {
		for {
			if _, err := os.Stat("/sys/module/" + n); err == nil || time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
