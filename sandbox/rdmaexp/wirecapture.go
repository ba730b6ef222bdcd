package rdmaexp

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	wirecap "github.com/rdmalab/rdmalab/sandbox/capture"
	"github.com/rdmalab/rdmalab/sandbox/ibt"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// Operations of wire-capture (and the faults of diagnose).
const (
	wireWrite = "write"      // one WRITE spanning three MTUs
	wireSend  = "send"       // SEND/RECV
	wireRead  = "read"       // READ of two MTUs
	wireRNR   = "no-recv"    // SEND with no RECV posted → RNR NAK
	wireRKey  = "wrong-rkey" // WRITE with a wrong rkey → NAK remote access error
	wireDrop  = "drop"       // one packet dropped → NAK PSN sequence error, retransmission
	wireLossy = "lossy"      // diagnose only: 10 % random loss on the link
)

// WireCapture is the experiment "see the wire": one RDMA operation between
// rxe1 and rxe0 while an AF_PACKET socket in the guest records every
// RoCEv2 packet of the two queue pairs; the capture is stored with the run
// (a .pcap) and decoded on the page.
func WireCapture() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "wire-capture",
		Title: say("Capture one RDMA operation on the wire", "抓取一次 RDMA 操作的线上报文"),
		Summary: say(
			"Runs one operation between two Soft-RoCE devices — a WRITE spanning three MTUs, SEND/RECV, READ, a SEND with no RECV posted, a WRITE with a wrong rkey, or a WRITE that loses one packet — while the guest captures every RoCEv2 packet (UDP 4791) of the two queue pairs; the page decodes BTH, RETH, AETH and ICRC and offers the .pcap for Wireshark. Also shows the device counters that moved.",
			"在两个 Soft-RoCE 设备之间执行一次操作——跨三个 MTU 的 WRITE、SEND/RECV、READ、对端没有投递 RECV 的 SEND、rkey 错误的 WRITE，或丢了一个包的 WRITE——同时在虚拟机里抓下这两个 QP 的全部 RoCEv2 报文（UDP 4791）；页面解码 BTH、RETH、AETH 和 ICRC，并提供可用 Wireshark 打开的 .pcap。同时列出变化了的设备计数器。"),
		Needs: sandbox.NeedRDMA,
		// Timing, although it measures no time: its drop filter (a clsact
		// qdisc) is removed by netshape.Reset after any run in the guest,
		// and its counters are device-wide, so it runs alone.
		Sharing: sandbox.Timing,
		Params: []sandbox.Param{
			{Name: "op", Kind: sandbox.ParamEnum, Title: say("Operation", "操作"), Default: wireWrite, Choices: []sandbox.Choice{
				{Value: wireWrite, Title: say("RDMA WRITE spanning three MTUs", "跨三个 MTU 的 RDMA WRITE")},
				{Value: wireSend, Title: say("SEND/RECV", "SEND/RECV")},
				{Value: wireRead, Title: say("RDMA READ", "RDMA READ")},
				{Value: wireRNR, Title: say("SEND with no RECV posted (RNR NAK)", "对端未投递 RECV 的 SEND（RNR NAK）")},
				{Value: wireRKey, Title: say("WRITE with a wrong rkey (NAK)", "rkey 错误的 WRITE（NAK）")},
				{Value: wireDrop, Title: say("WRITE that loses one packet (PSN sequence NAK, retransmission)", "丢了一个包的 WRITE（PSN 序列错误 NAK、重传）")},
			}},
		},
		Presets: []sandbox.Preset{
			{ID: "write", Title: say("WRITE, 3 MTUs", "WRITE，3 个 MTU"), Values: map[string]any{"op": wireWrite}},
			{ID: "send", Title: say("SEND/RECV", "SEND/RECV"), Values: map[string]any{"op": wireSend}},
			{ID: "read", Title: say("READ", "READ"), Values: map[string]any{"op": wireRead}},
			{ID: "no-recv", Title: say("no RECV: RNR NAK", "没有 RECV：RNR NAK"), Values: map[string]any{"op": wireRNR}},
			{ID: "wrong-rkey", Title: say("wrong rkey: NAK", "错误 rkey：NAK"), Values: map[string]any{"op": wireRKey}},
			{ID: "drop", Title: say("one packet lost", "丢一个包"), Values: map[string]any{"op": wireDrop}},
		},
		Timeout: 60 * time.Second,
		Run:     runWireCapture,
	}
}

// wirePair is a connected requester (client, rxe1) and responder (server,
// rxe0) in this process.
type wirePair struct {
	top      topology
	req, rsp *rc
	mtu      int
}

const wireBuf = 64 << 10

func openWirePair(top topology, rnrRetry int) (*wirePair, error) {
	rw := verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead
	rsp, err := openRC(rcOpts{Side: top.Server, BufSize: wireBuf, Access: rw, SendWR: 16, RecvWR: 16, RNRRetry: 7})
	if err != nil {
		return nil, err
	}
	req, err := openRC(rcOpts{Side: top.Client, BufSize: wireBuf, Access: rw, SendWR: 16, RecvWR: 16, RNRRetry: rnrRetry})
	if err != nil {
		rsp.Close()
		return nil, err
	}
	p := &wirePair{top: top, req: req, rsp: rsp, mtu: req.port.ActiveMTU.Bytes()}
	if err := rsp.connect(req.local()); err != nil {
		p.Close()
		return nil, err
	}
	if err := req.connect(rsp.local()); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// filter keeps this pair's packets: requests to the responder's QP and
// responses to the requester's.
func (p *wirePair) filter() func([]byte) bool {
	return wirecap.QPFilter(wirecap.QP{IP: p.top.Server.GID.GID.IP(), QPN: p.rsp.qp.Num()},
		wirecap.QP{IP: p.top.Client.GID.GID.IP(), QPN: p.req.qp.Num()})
}

func (p *wirePair) Close() {
	p.req.Close()
	p.rsp.Close()
}

// wc is one completion and whose it is.
type wireWC struct {
	Who string
	WC  verbs.WC
}

// do performs op and returns the completions it produced.
func (p *wirePair) do(ctx context.Context, op string, messages int) ([]wireWC, error) {
	t := p.rsp.local()
	const wait = 20 * time.Second
	post := func(wr verbs.SendWR) (verbs.WC, error) {
		if err := p.req.qp.PostSend(wr); err != nil {
			return verbs.WC{}, err
		}
		return p.req.waitCQ(ctx, p.req.sendCQ, wait)
	}
	src := p.req.buf.Bytes()
	for i := range src {
		src[i] = byte('a' + i%26)
	}
	var out []wireWC
	switch op {
	case wireWrite, wireDrop, wireLossy:
		n := 3 * p.mtu
		if op == wireDrop {
			n = 4 * p.mtu // First, Middle, Middle (dropped), Last
		}
		for i := 0; i < messages; i++ {
			wc, err := post(verbs.SendWR{ID: uint64(i + 1), Op: verbs.OpWrite, Flags: verbs.SendSignaled, MR: p.req.mr, Length: n, RemoteAddr: t.Addr, RKey: t.RKey})
			if err != nil {
				return out, err
			}
			out = append(out, wireWC{"requester", wc})
			if wc.Status != verbs.WCSuccess {
				break
			}
		}
	case wireSend:
		if err := p.rsp.qp.PostRecv(1, p.rsp.mr, 0, wireBuf); err != nil {
			return nil, err
		}
		wc, err := post(verbs.SendWR{ID: 1, Op: verbs.OpSend, Flags: verbs.SendSignaled, MR: p.req.mr, Length: 64})
		if err != nil {
			return nil, err
		}
		out = append(out, wireWC{"requester", wc})
		rwc, err := p.rsp.waitCQ(ctx, p.rsp.recvCQ, wait)
		if err != nil {
			return out, err
		}
		out = append(out, wireWC{"responder", rwc})
	case wireRead:
		wc, err := post(verbs.SendWR{ID: 1, Op: verbs.OpRead, Flags: verbs.SendSignaled, MR: p.req.mr, Length: 2 * p.mtu, RemoteAddr: t.Addr, RKey: t.RKey})
		if err != nil {
			return nil, err
		}
		out = append(out, wireWC{"requester", wc})
	case wireRNR:
		wc, err := post(verbs.SendWR{ID: 1, Op: verbs.OpSend, Flags: verbs.SendSignaled, MR: p.req.mr, Length: 64})
		if err != nil {
			return nil, err
		}
		out = append(out, wireWC{"requester", wc})
	case wireRKey:
		wc, err := post(verbs.SendWR{ID: 1, Op: verbs.OpWrite, Flags: verbs.SendSignaled, MR: p.req.mr, Length: 64, RemoteAddr: t.Addr, RKey: t.RKey ^ 0x5a5a00})
		if err != nil {
			return nil, err
		}
		out = append(out, wireWC{"requester", wc})
	default:
		return nil, fmt.Errorf("unknown operation %q", op)
	}
	return out, nil
}

// fault installs the tc filter an operation needs (drop, lossy).
func (p *wirePair) fault(ctx context.Context, op string) (func(), error) {
	f := wireFault{Iface: p.top.Server.GID.Netdev, DestQP: p.rsp.qp.Num(), Opcode: -1}
	switch op {
	case wireDrop:
		// The second RDMA WRITE Middle of the first attempt is dropped
		// (gact determ drops every N-th match); its retransmission is the
		// third Middle and passes.
		f.Opcode, f.Kind, f.N = int(ibt.RCWriteMiddle), "determ", 2
	case wireLossy:
		f.Kind, f.N = "netrand", 10 // the kernel drops with probability 1/N: 10 %
	default:
		return func() {}, nil
	}
	return f.install(ctx)
}

// counterSnap is every counter of both devices.
type counterSnap map[string]map[string]int64

func (p *wirePair) counters() counterSnap {
	s := counterSnap{}
	for _, d := range []string{p.top.Client.Dev, p.top.Server.Dev} {
		if c, err := verbs.Counters(d, 1); err == nil {
			s[d] = c
		}
	}
	return s
}

// counterMove is a counter that changed.
type counterMove struct {
	Dev, Name string
	Delta     int64
}

func counterDelta(before, after counterSnap) []counterMove {
	var out []counterMove
	for dev, a := range after {
		for name, v := range a {
			if d := v - before[dev][name]; d != 0 {
				out = append(out, counterMove{dev, name, d})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Dev != out[j].Dev {
			return out[i].Dev < out[j].Dev
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// countersTable lists the counters that moved, before and after; title
// prefixes the table's title (may be nil).
func countersTable(moves []counterMove, before, after counterSnap, roles map[string]sandbox.Text, title sandbox.Text) *sandbox.Table {
	t := sandbox.NewTable(say(title["en"]+"counters that moved (rdma statistic / hw_counters; device-wide)", title["zh"]+"变化了的计数器（rdma statistic / hw_counters；整台设备）"),
		say("device", "设备"), say("counter", "计数器"), say("before", "之前"), say("after", "之后"), say("change", "变化"))
	for _, m := range moves {
		t.AddRow(sandbox.Text{"en": m.Dev + " " + roles[m.Dev]["en"], "zh": m.Dev + " " + roles[m.Dev]["zh"]}, sandbox.Same(m.Name),
			sandbox.Same(strconv.FormatInt(before[m.Dev][m.Name], 10)), sandbox.Same(strconv.FormatInt(after[m.Dev][m.Name], 10)),
			sandbox.Same(fmt.Sprintf("%+d", m.Delta)))
	}
	return t
}

// wireRoles names the two devices in both languages.
func wireRoles(top topology) map[string]sandbox.Text {
	return map[string]sandbox.Text{top.Client.Dev: say("(requester)", "（请求方）"), top.Server.Dev: say("(responder)", "（响应方）")}
}

func runWireCapture(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	op := p["op"].(string)
	top, err := pickTopology()
	if err != nil {
		return err
	}
	if !top.Wire() || top.Server.GID.Netdev == "" {
		return explained(emit, say("wire-capture needs two Soft-RoCE devices on two netdevs (the lab's guest has rxe0 and rxe1 on a veth pair): a device that loops back to itself sends nothing a capture could see",
			"wire-capture 需要位于两个网络设备上的两个 Soft-RoCE 设备（实验室虚拟机里是 veth 对上的 rxe0 和 rxe1）：环回到自身的设备不会发出任何可供抓包的报文"))
	}
	note(emit, "info", top.describe())
	rnrRetry := 7
	if op == wireRNR {
		rnrRetry = 1 // one retry, then IBV_WC_RNR_RETRY_EXC_ERR
	}
	phase(emit, "connect", say("Connect two RC queue pairs: rxe1 (requester) → rxe0 (responder)", "连接两个 RC QP：rxe1（请求方）→ rxe0（响应方）"))
	pair, err := openWirePair(top, rnrRetry)
	if err != nil {
		return verbsError(emit, err)
	}
	defer pair.Close()
	note(emit, "info", say(fmt.Sprintf("requester QP 0x%06x on %s, responder QP 0x%06x on %s, path MTU %d bytes",
		pair.req.qp.Num(), top.Client.Dev, pair.rsp.qp.Num(), top.Server.Dev, pair.mtu),
		fmt.Sprintf("请求方 QP 0x%06x 在 %s 上，响应方 QP 0x%06x 在 %s 上，路径 MTU %d 字节",
			pair.req.qp.Num(), top.Client.Dev, pair.rsp.qp.Num(), top.Server.Dev, pair.mtu)))
	undo, err := pair.fault(ctx, op)
	if err != nil {
		return faultError(emit, err)
	}
	defer undo()
	if op == wireDrop {
		note(emit, "info", say(fmt.Sprintf("A tc filter at the door of %s (ingress) drops the second RDMA WRITE Middle packet to this QP once — as if a switch lost one frame. The capture is taken at the requester's side (%s), so it shows the packet leaving; the responder never gets it.", top.Server.GID.Netdev, top.Client.GID.Netdev),
			fmt.Sprintf("%s 入口（ingress）的 tc 过滤器会丢掉发往这个 QP 的第二个 RDMA WRITE Middle 报文一次——就像交换机丢了一帧。抓包在请求方一侧（%s）进行，所以能看到这个报文发出；响应方却从未收到。", top.Server.GID.Netdev, top.Client.GID.Netdev)))
	}

	before := pair.counters()
	phase(emit, "capture", say("Capture on "+top.Client.GID.Netdev+" (the requester's port) while the operation runs", "在 "+top.Client.GID.Netdev+"（请求方端口）上抓包，同时执行操作"))
	c, err := wirecap.Start(top.Client.GID.Netdev, wirecap.Limits{}, pair.filter())
	if err != nil {
		return err
	}
	wcs, opErr := pair.do(ctx, op, 1)
	res := c.Stop()
	after := pair.counters()
	if opErr != nil {
		return verbsError(emit, opErr)
	}
	if res.Err != nil {
		return explained(emit, say("capture: "+res.Err.Error(), "抓包失败："+res.Err.Error()))
	}
	hosts := map[string]string{top.Client.IP(): top.Client.Dev + " (requester)", top.Server.IP(): top.Server.Dev + " (responder)"}
	ev, err := res.Event(map[string]sandbox.Text{top.Client.IP(): say(hosts[top.Client.IP()], top.Client.Dev+"（请求方）"), top.Server.IP(): say(hosts[top.Server.IP()], top.Server.Dev+"（响应方）")})
	if err != nil {
		return err
	}
	packets, err := wirecap.Decode(ev.Capture.Pcap, hosts)
	if err != nil {
		return err
	}

	phase(emit, "completions", say("What the completion queues said", "完成队列报告了什么"))
	for _, w := range wcs {
		if w.WC.Status == verbs.WCSuccess {
			who := map[string]string{"requester": "请求方", "responder": "响应方"}[w.Who]
			note(emit, "info", say(fmt.Sprintf("%s completion: %s %s, %d bytes", w.Who, w.WC.Opcode, w.WC.Status, w.WC.ByteLen),
				fmt.Sprintf("%s的完成：%s %s，%d 字节", who, w.WC.Opcode, w.WC.Status, w.WC.ByteLen)))
		} else {
			wcError(emit, w.WC, wireWhy(op))
		}
	}
	emit.Emit(ev)
	// the packets themselves are the capture event's list in the page
	// (capture.js): a second, static table of them only repeated it
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: countersTable(counterDelta(before, after), before, after, wireRoles(top), nil)})
	ok, verdict, figs := wireVerdict(op, pair.mtu, packets, wcs)
	figs["packets"] = float64(len(packets))
	result(emit, ok, verdict, figs)
	return nil
}

// wireWhy explains a failed completion of an operation.
func wireWhy(op string) sandbox.Text {
	switch op {
	case wireRNR:
		return say("The responder had no RECV posted: it answered each SEND with an RNR NAK (receiver not ready), the requester retried rnr_retry times and then gave up.",
			"响应方没有投递 RECV：它对每个 SEND 回了 RNR NAK（接收方未就绪），请求方重试了 rnr_retry 次后放弃。")
	case wireRKey:
		return say("The responder's device (here the rxe kernel module; on hardware the NIC) found no memory region for this rkey and answered with a NAK (remote access error); the requester's QP went to the error state.",
			"响应方的设备（这里是 rxe 内核模块，在硬件上是网卡）找不到这个 rkey 对应的内存区域，回了 NAK（远程访问错误）；请求方 QP 进入错误状态。")
	}
	return say("The operation failed; the capture shows what the responder answered.", "操作失败；抓包显示了响应方的回答。")
}

// wireVerdict reads the capture: did the wire show what the operation
// predicts? The text states what was seen, so it changes with the capture.
func wireVerdict(op string, mtu int, ps []wirecap.Packet, wcs []wireWC) (bool, sandbox.Text, map[string]float64) {
	var reqs, resps []wirecap.Packet
	naks, rnr, seqNAK, accNAK := 0, 0, 0, 0
	for _, p := range ps {
		if p.IB == nil {
			continue
		}
		if ibt.Opcode(p.Opcode).IsRequest() {
			reqs = append(reqs, p)
		} else {
			resps = append(resps, p)
		}
		if p.IB.AETH != nil && p.IB.AETH.Syndrome.IsNAK() {
			naks++
			s := p.IB.AETH.Syndrome
			switch {
			case s.Kind() == ibt.KindRNRNAK:
				rnr++
			case s.Value() == ibt.NAKPSNSequenceError:
				seqNAK++
			case s.Value() == ibt.NAKRemoteAccess:
				accNAK++
			}
		}
	}
	retx := retransmissions(reqs)
	figs := map[string]float64{"requests": float64(len(reqs)), "responses": float64(len(resps)), "naks": float64(naks),
		"rnr_naks": float64(rnr), "psn_seq_naks": float64(seqNAK), "access_naks": float64(accNAK), "retransmitted": float64(retx)}
	status := verbs.WCSuccess
	if len(wcs) > 0 {
		status = wcs[0].WC.Status
	}
	ops := func(ps []wirecap.Packet) []string {
		var o []string
		for _, p := range ps {
			o = append(o, p.OpName)
		}
		return o
	}
	consecutive := func(ps []wirecap.Packet) bool {
		for i := 1; i < len(ps); i++ {
			if ps[i].PSN != (ps[i-1].PSN+1)&0xffffff {
				return false
			}
		}
		return len(ps) > 0
	}
	switch op {
	case wireWrite:
		want := []string{"RDMA WRITE First", "RDMA WRITE Middle", "RDMA WRITE Last"}
		ok := slices.Equal(ops(reqs), want) && consecutive(reqs) && status == verbs.WCSuccess && reqs[2].AckReq && len(resps) >= 1
		if ok {
			return true, say(fmt.Sprintf("One WRITE of %d bytes left as three packets of one MTU (%d bytes) each — First (with the RETH: address, rkey, length), Middle, Last — with consecutive PSNs %d, %d, %d; only Last asked for an ACK (AckReq) and %d acknowledgement(s) came back.",
				3*mtu, mtu, reqs[0].PSN, reqs[1].PSN, reqs[2].PSN, len(resps)),
				fmt.Sprintf("一次 %d 字节的 WRITE 拆成了三个各一个 MTU（%d 字节）的报文——First（带 RETH：地址、rkey、长度）、Middle、Last——PSN 连续：%d、%d、%d；只有 Last 请求确认（AckReq），回来了 %d 个确认。",
					3*mtu, mtu, reqs[0].PSN, reqs[1].PSN, reqs[2].PSN, len(resps))), figs
		}
	case wireSend:
		ok := slices.Equal(ops(reqs), []string{"SEND Only"}) && len(resps) >= 1 && status == verbs.WCSuccess
		if ok {
			return true, say("The 64-byte SEND was one SEND Only packet with no address and no rkey: the responder put it into the buffer of the RECV it had posted, and answered with an ACK.",
				"64 字节的 SEND 是一个 SEND Only 报文，不带地址也不带 rkey：响应方把它放进事先投递的 RECV 缓冲区，并回了 ACK。"), figs
		}
	case wireRead:
		ok := len(reqs) == 1 && reqs[0].OpName == "RDMA READ Request" && len(resps) == 2 && consecutive(resps) &&
			resps[0].PSN == reqs[0].PSN && status == verbs.WCSuccess
		if ok {
			return true, say(fmt.Sprintf("The READ was one small request (a RETH, no data) and the responder's device (here rxe in the kernel, on hardware the NIC, with no help from the responder's application) sent the %d bytes back as READ Response First and Last, with PSNs %d and %d counted from the request's PSN — the data crossed the wire towards the requester and no ACK was needed.",
				2*mtu, resps[0].PSN, resps[1].PSN),
				fmt.Sprintf("READ 只是一个小请求（带 RETH，不带数据），响应方的设备（这里是内核里的 rxe，在硬件上是网卡，响应方应用程序不参与）把 %d 字节以 READ Response First 和 Last 发回，PSN %d 和 %d 从请求的 PSN 数起——数据朝请求方流动，不需要单独的 ACK。",
					2*mtu, resps[0].PSN, resps[1].PSN)), figs
		}
	case wireRNR:
		ok := rnr >= 1 && status == verbs.WCRNRRetryExcErr
		if ok {
			return true, say(fmt.Sprintf("The SEND went out %d times and each time the responder answered with an RNR NAK (receiver not ready: no RECV posted); after rnr_retry=1 retry the requester's completion said %s. The wire shows why; the completion only says that.",
				len(reqs), status), fmt.Sprintf("SEND 发出了 %d 次，每次响应方都回 RNR NAK（接收方未就绪：没有投递 RECV）；重试 rnr_retry=1 次后，请求方的完成状态是 %s。线上报文说明了原因，完成状态只说明了结果。", len(reqs), status)), figs
		}
	case wireRKey:
		ok := accNAK >= 1 && status == verbs.WCRemAccessErr
		if ok {
			return true, say("The WRITE carried an rkey the responder never handed out; its device (rxe here, the NIC on hardware) answered with a NAK whose AETH syndrome says Remote Access Error, and the requester's completion became IBV_WC_REM_ACCESS_ERR. No data was written.",
				"这次 WRITE 带着响应方从未给出的 rkey；对方设备（这里是 rxe，在硬件上是网卡）回了 AETH 综合码为“远程访问错误”的 NAK，请求方的完成状态变成 IBV_WC_REM_ACCESS_ERR。没有数据被写入。"), figs
		}
	case wireDrop:
		ok := seqNAK >= 1 && retx >= 1 && status == verbs.WCSuccess
		if ok {
			return true, say(fmt.Sprintf("One RDMA WRITE Middle left the requester (it is in this capture) but never arrived. The next packet's PSN was ahead of the one the responder expected, so it answered with a NAK (PSN Sequence Error) naming the missing PSN, and the requester sent %d packet(s) again from there (go-back-N) — the completion still said success: loss shows in the capture and the counters, not in the completion.", retx),
				fmt.Sprintf("有一个 RDMA WRITE Middle 离开了请求方（在这份抓包里能看到）却没有到达。下一个报文的 PSN 超前于响应方期待的值，于是它回了 NAK（PSN 序列错误）指出缺失的 PSN，请求方从那里起重发了 %d 个报文（回退 N）——完成状态仍然是成功：丢包体现在抓包和计数器里，而不在完成状态里。", retx)), figs
		}
	}
	return false, say(fmt.Sprintf("The capture does not show what this operation predicts (requests %v, %d responses, %d NAKs, completion %s); see the packet list.", ops(reqs), len(resps), naks, status),
		fmt.Sprintf("抓包结果与该操作的预期不符（请求 %v，%d 个响应，%d 个 NAK，完成状态 %s）；请查看报文列表。", ops(reqs), len(resps), naks, status)), figs
}

// retransmissions counts request packets whose PSN was already sent.
func retransmissions(reqs []wirecap.Packet) int {
	seen := map[uint32]bool{}
	n := 0
	for _, p := range reqs {
		if seen[p.PSN] {
			n++
		}
		seen[p.PSN] = true
	}
	return n
}
