package rdmaexp

import (
	"fmt"
	"strings"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/netshape"
)

// The preamble of the experiments that shape the lab's link with tc
// (loss-sweep, retry-budget, dscp-ecn): one helper, so every one of them
// refuses a link that is not the lab's own and starts from a clean link.

// shapedLink is the client's link of the lab's veth pair, which an
// experiment may shape with tc (loss, ECN marks) for the length of a run.
type shapedLink struct {
	top   topology
	dev   string // the client's netdev, the one shaped
	clean bool   // no shaping was left over from an earlier run
}

// shapeLink is the opening the experiments that shape a link share: two
// Soft-RoCE devices on a veth pair (need says why, in both languages,
// when they are not), links that are the lab's own (a host's real NIC
// never gets shaped), the devices said, and any shaping left over from an
// earlier run reported and removed. The caller defers l.reset.
func shapeLink(emit sandbox.Emitter, need sandbox.Text) (*shapedLink, error) {
	top, err := pickTopology()
	if err != nil {
		return nil, err
	}
	if !top.Wire() {
		return nil, explained(emit, need)
	}
	if err := shapeable(emit, top); err != nil {
		return nil, err
	}
	note(emit, "info", top.describe())
	l := &shapedLink{top: top, dev: top.Client.GID.Netdev}
	l.clean = linksClean(emit, l.dev, top.Server.GID.Netdev)
	return l, nil
}

// reset takes the shaping off the client's link; with tell it says so in
// the run's log (and warns when it could not).
func (l *shapedLink) reset(emit sandbox.Emitter, tell bool) {
	err := netshape.Reset(l.dev)
	switch {
	case !tell:
	case err != nil:
		note(emit, "warn", say("could not remove the loss: "+err.Error(), "无法撤销丢包设置："+quoteZh(err)))
	default:
		note(emit, "info", say("loss removed: the link is as it was before the run", "已撤销丢包：链路恢复到运行前的状态"))
	}
}

// shapeable refuses devices that are not on the lab's own veth links: the
// lesson 02 experiments add loss to a link, and a host's real NIC with an
// rxe device on it must never get that.
func shapeable(emit sandbox.Emitter, top topology) error {
	for _, d := range []string{top.Client.GID.Netdev, top.Server.GID.Netdev} {
		if !netshape.Ours(d) {
			return explained(emit, say(fmt.Sprintf("the RDMA devices sit on %s, which is not one of the lab's own veth links (%v in the guest, %v on a host): this experiment changes the link, so it only runs on those",
				d, netshape.GuestLinks, netshape.HostLinks),
				fmt.Sprintf("RDMA 设备位于 %s 上，它不是实验室自己的 veth 链路（虚拟机里是 %v，主机上是 %v）：这个实验会改动链路，所以只在这些链路上运行",
					d, netshape.GuestLinks, netshape.HostLinks)))
		}
	}
	return nil
}

// linksClean reports (and logs) whether the links carry no shaping left
// over from an earlier run, then resets them anyway.
func linksClean(emit sandbox.Emitter, devs ...string) bool {
	clean := true
	for _, d := range devs {
		s, err := netshape.State(d)
		if err != nil {
			note(emit, "warn", say(fmt.Sprintf("state of %s: %v", d, err), fmt.Sprintf("读取 %s 的状态失败：%s", d, quoteZh(err))))
			continue
		}
		if s != "" {
			clean = false
			note(emit, "warn", say("left over from an earlier run: "+s+" — removing it", "上一次运行遗留的设置："+s+"——正在撤销"))
		}
	}
	if clean {
		note(emit, "info", say(fmt.Sprintf("links %s: no qdisc or GSO limit left over from earlier runs", strings.Join(devs, ", ")),
			fmt.Sprintf("链路 %s：没有以前运行遗留的 qdisc 或 GSO 限制", strings.Join(devs, ", "))))
	}
	_ = netshape.Reset(devs...)
	return clean
}
