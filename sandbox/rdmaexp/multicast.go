package rdmaexp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// Multicast is the experiment "one send, every member receives": two UD
// QPs on the server attach to a multicast group with ibv_attach_mcast; the
// client sends one datagram to the group's GID (remote QPN 0xFFFFFF). On
// RoCE v2 the group is an IPv4 multicast group, so the receiving netdev
// must also be a member at the IP layer: the run sends once before and
// once after joining it.
func Multicast() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "multicast",
		Title: say("UD multicast: one send, two receivers", "UD 组播：发送一次，两个接收方"),
		Summary: say(
			"Two UD QPs attach to one multicast group (ibv_attach_mcast); the client sends one datagram to the group. On RoCE v2 the group is an IP multicast address, so the run sends once before the receiving netdev joins the IP group and once after.",
			"两个 UD QP 挂到同一个组播组上（ibv_attach_mcast）；客户端向该组发送一个数据报。在 RoCE v2 上组就是一个 IP 组播地址，所以本实验在接收网卡加入 IP 组之前和之后各发送一次。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Shareable,
		Params: []sandbox.Param{
			{Name: "members", Kind: sandbox.ParamInt, Title: say("QPs attached to the group", "挂到组上的 QP 数"), Default: 2, Min: 2, Max: 4},
		},
		Presets: []sandbox.Preset{{ID: "default", Title: say("two members", "两个成员"), Values: map[string]any{"members": 2}}},
		Timeout: 2 * time.Minute,
		Run:     runMulticast,
	}
}

const (
	mcastQKey = 0x11111111
	mcastQPN  = 0xFFFFFF // the multicast QPN: "every QP attached to the destination GID"
	mcastLen  = 64
)

// udEnd is one UD QP with its own CQ and buffer.
type udEnd struct {
	qp  *verbs.QP
	cq  *verbs.CQ
	buf *verbs.Buffer
	mr  *verbs.MR
}

func (u *udEnd) Close() {
	if u == nil {
		return
	}
	u.qp.Close()
	u.mr.Close()
	u.buf.Close()
	u.cq.Close()
}

func newUDEnd(pd *verbs.PD) (u *udEnd, err error) {
	u = &udEnd{}
	defer func() {
		if err != nil {
			u.Close()
		}
	}()
	if u.cq, err = pd.Context().NewCQ(16, nil); err != nil {
		return nil, err
	}
	if u.buf, err = verbs.NewBuffer(4096); err != nil {
		return nil, err
	}
	if u.mr, err = pd.RegMR(u.buf, 0, 4096, verbs.AccessLocalWrite); err != nil {
		return nil, err
	}
	if u.qp, err = pd.NewQP(u.cq, u.cq, verbs.QPCaps{MaxSendWR: 8, MaxRecvWR: 8, Type: verbs.QPTypeUD}); err != nil {
		return nil, err
	}
	a := verbs.QPAttr{Port: 1, QKey: mcastQKey}
	for _, s := range []verbs.QPState{verbs.StateInit, verbs.StateRTR, verbs.StateRTS} {
		if err = u.qp.Modify(s, a); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// pollFor polls u's CQ until a completion or wait passes.
func (u *udEnd) pollFor(wait time.Duration) (verbs.WC, bool, error) {
	wc := make([]verbs.WC, 1)
	deadline := time.Now().Add(wait)
	for {
		n, err := u.cq.Poll(wc)
		if err != nil || n == 1 {
			return wc[0], n == 1, err
		}
		if time.Now().After(deadline) {
			return verbs.WC{}, false, nil
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// joinIPGroup makes netdev a member of the IPv4 group (IP_ADD_MEMBERSHIP
// on a socket kept open until the returned func is called): what
// rdma_join_multicast does for a RoCE v2 group before it attaches the QP.
func joinIPGroup(netdev string, group net.IP) (func(), error) {
	ifc, err := net.InterfaceByName(netdev)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	mreq := &unix.IPMreqn{Ifindex: int32(ifc.Index)}
	copy(mreq.Multiaddr[:], group.To4())
	if err := unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, mreq); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("IP_ADD_MEMBERSHIP %s on %s: %w", group, netdev, err)
	}
	return func() { unix.Close(fd) }, nil
}

func runMulticast(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	members := int(p["members"].(int64))
	top, err := pickTopology()
	if err != nil {
		return err
	}
	note(emit, "info", top.describe())
	// A group of its own per run (239.0.0.0/8 is administratively scoped).
	group := net.IPv4(239, byte(1+rand.IntN(254)), byte(rand.IntN(256)), byte(1+rand.IntN(254)))
	var mgid verbs.GID
	copy(mgid[:], group.To16()) // IPv4-mapped: ::ffff:239.x.y.z
	figs := map[string]float64{"members": float64(members)}

	phase(emit, "attach", say(fmt.Sprintf("%d UD QPs on %s attach to group %s", members, top.Server.Dev, mgid), fmt.Sprintf("%s 上的 %d 个 UD QP 挂到组 %s", top.Server.Dev, members, mgid)))
	sctx, err := verbs.Open(top.Server.Dev)
	if err != nil {
		return verbsError(emit, err)
	}
	defer sctx.Close()
	spd, err := sctx.AllocPD()
	if err != nil {
		return verbsError(emit, err)
	}
	defer spd.Close()
	var recv []*udEnd
	defer func() {
		for _, u := range recv {
			u.qp.DetachMcast(mgid)
			u.Close()
		}
	}()
	for range members {
		u, err := newUDEnd(spd)
		if err != nil {
			return verbsError(emit, err)
		}
		recv = append(recv, u)
		if err := u.qp.AttachMcast(mgid); err != nil {
			return verbsError(emit, err)
		}
		note(emit, "info", say(fmt.Sprintf("ibv_attach_mcast(QP 0x%x, %s)", u.qp.Num(), mgid), fmt.Sprintf("ibv_attach_mcast（QP 0x%x，%s）", u.qp.Num(), mgid)))
	}

	cctx, err := verbs.Open(top.Client.Dev)
	if err != nil {
		return verbsError(emit, err)
	}
	defer cctx.Close()
	cpd, err := cctx.AllocPD()
	if err != nil {
		return verbsError(emit, err)
	}
	defer cpd.Close()
	snd, err := newUDEnd(cpd)
	if err != nil {
		return verbsError(emit, err)
	}
	defer snd.Close()
	ah, err := cpd.NewAH(1, top.Client.GID.Index, mgid, 64)
	if err != nil {
		return verbsError(emit, err)
	}
	defer ah.Close()

	tab := sandbox.NewTable(say("one datagram to the group", "向组发送一个数据报"), say("send", "发送"), say("sender's completion", "发送方的完成"), say("member", "成员"), say("received", "收到"))
	round := func(id string, title sandbox.Text) (int, error) {
		for _, u := range recv {
			if err := u.qp.PostRecv(1, u.mr, 0, verbs.GRHBytes+mcastLen); err != nil {
				return 0, err
			}
		}
		copy(snd.buf.Bytes(), fmt.Sprintf("%-64s", "one datagram for group "+mgid.String()+" ("+id+")"))
		if err := snd.qp.PostSendUD(verbs.SendWR{ID: 1, Flags: verbs.SendSignaled, MR: snd.mr, Length: mcastLen}, ah, mcastQPN, mcastQKey); err != nil {
			return 0, err
		}
		swc, ok, err := snd.pollFor(10 * time.Second)
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, fmt.Errorf("the UD send to %s never completed: %w", mgid, errCompletionTimeout)
		}
		got := 0
		for i, u := range recv {
			wc, ok, err := u.pollFor(time.Second)
			if err != nil {
				return got, err
			}
			cell := say("nothing within 1 s", "1 秒内什么也没收到")
			if ok && wc.Status == verbs.WCSuccess {
				got++
				body := string(u.buf.Bytes()[verbs.GRHBytes : verbs.GRHBytes+24])
				cell = say(fmt.Sprintf("%d bytes from QP 0x%x: “%s…”", wc.ByteLen-verbs.GRHBytes, wc.SrcQP, body), fmt.Sprintf("%d 字节，来自 QP 0x%x：“%s…”", wc.ByteLen-verbs.GRHBytes, wc.SrcQP, body))
			} else if ok {
				cell = wcText(wc.Status)
			}
			tab.AddRow(title, sandbox.Same(swc.Status.String()), sandbox.Same(fmt.Sprintf("%d: QP 0x%x", i+1, u.qp.Num())), cell)
		}
		metric(emit, "mcast_received", say("members that received the datagram", "收到数据报的成员数"), float64(len(tab.Rows)/members), float64(got), "members")
		return got, nil
	}

	phase(emit, "before-join", say("send before "+top.Server.GID.Netdev+" joins the IP group", "在 "+top.Server.GID.Netdev+" 加入 IP 组之前发送"))
	before, err := round("before", say("before the IP join", "加入 IP 组之前"))
	if err != nil {
		return verbsError(emit, err)
	}
	figs["received_before_join"] = float64(before)
	// a datagram the members did not get leaves their RECVs posted; the
	// next round posts one more each, enough room either way

	phase(emit, "after-join", say(top.Server.GID.Netdev+" joins "+group.String()+", send again", top.Server.GID.Netdev+" 加入 "+group.String()+"，再发送一次"))
	leave, err := joinIPGroup(top.Server.GID.Netdev, group)
	if err != nil {
		return fmt.Errorf("join the IP multicast group: %w", err)
	}
	defer leave()
	note(emit, "info", say(fmt.Sprintf("setsockopt(IP_ADD_MEMBERSHIP, %s on %s)", group, top.Server.GID.Netdev), fmt.Sprintf("setsockopt（IP_ADD_MEMBERSHIP，%s，网卡 %s）", group, top.Server.GID.Netdev)))
	after, err := round("after", say("after the IP join", "加入 IP 组之后"))
	if err != nil {
		return verbsError(emit, err)
	}
	figs["received"] = float64(after)
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: tab})

	ok := after == members
	var v sandbox.Text
	if ok {
		v = say(fmt.Sprintf("One UD send to group %s reached all %d attached QPs (%d of %d before %s joined the IP group %s). The sender posted once; the copies were made on the receiving side — here by Soft-RoCE's kernel, on an InfiniBand fabric by the switches, on RoCE by the IP multicast routing of the network.", mgid, after, before, members, top.Server.GID.Netdev, group),
			fmt.Sprintf("向组 %s 的一次 UD 发送到达了全部 %d 个挂在组上的 QP（%s 加入 IP 组 %s 之前是 %d/%d）。发送方只投递了一次；副本是在接收一侧产生的——这里由 Soft-RoCE 的内核产生，在 InfiniBand 网络中由交换机产生，在 RoCE 中由网络的 IP 组播路由产生。", mgid, after, top.Server.GID.Netdev, group, before, members))
	} else {
		v = say(fmt.Sprintf("Only %d of %d attached QPs received the datagram after the IP join (%d before).", after, members, before),
			fmt.Sprintf("加入 IP 组之后只有 %d/%d 个挂在组上的 QP 收到了数据报（之前 %d 个）。", after, members, before))
	}
	result(emit, ok, v, figs)
	return nil
}
