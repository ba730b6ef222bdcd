package rdmaexp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	wirecap "github.com/rdmalab/rdmalab/sandbox/capture"
	"github.com/rdmalab/rdmalab/sandbox/netshape"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// DSCPECN is lesson 02's "what RoCE puts in the IP header": the client QP's
// traffic class (DSCP << 2 | ECN) is set, WRITEs run, and a packet capture
// on the server's link shows the DSCP and ECN fields of every RoCEv2 packet.
// With marking on, netem CE-marks ECN-capable packets (and drops the others)
// the way a congested switch would, and the capture shows what Soft-RoCE
// does about it: rxe copies the traffic class into the IP header and
// ignores CE on receipt — no CNP, no rate change; it has no DCQCN.
func DSCPECN() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "dscp-ecn",
		Title: say("DSCP and ECN on the wire", "线路上的 DSCP 与 ECN"),
		Summary: say(
			"Sets the client QP's traffic class (DSCP and ECN bits), runs RDMA WRITEs and captures every RoCEv2 packet on the server's link: DSCP and ECN of data packets and ACKs, CE marks, CNPs. Optionally tc netem CE-marks a share of the ECN-capable packets like a congested switch (and drops those that are not ECN-capable).",
			"设置客户端 QP 的 traffic class（DSCP 和 ECN 位），运行 RDMA WRITE，并在服务端网卡上抓下每一个 RoCEv2 报文：数据包和 ACK 的 DSCP、ECN，CE 标记，CNP。可选：让 tc netem 像拥塞的交换机一样给一部分支持 ECN 的报文打上 CE（不支持 ECN 的则被丢弃）。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Timing, // captures the link and may mark or drop on it: nobody else's packets belong there
		Params: []sandbox.Param{
			{Name: "dscp", Kind: sandbox.ParamInt, Title: say("DSCP", "DSCP"), Min: 0, Max: 63, Default: int64(26),
				Help: say("The 6-bit DiffServ code point; 26 is a common choice for the RoCE traffic class, 48 for CNPs.", "6 位的 DiffServ 码点；RoCE 流量常用 26，CNP 常用 48。")},
			{Name: "ecn", Kind: sandbox.ParamEnum, Title: say("ECN bits the sender sets", "发送方设置的 ECN 位"), Default: "ect0", Choices: []sandbox.Choice{
				{Value: "ect0", Title: say("ECT(0) — ECN-capable (10)", "ECT(0)——支持 ECN（10）")},
				{Value: "ect1", Title: say("ECT(1) — ECN-capable (01)", "ECT(1)——支持 ECN（01）")},
				{Value: "not-ect", Title: say("Not-ECT (00)", "Not-ECT（00）")},
			}},
			{Name: "mark", Kind: sandbox.ParamInt, Title: say("Congestion marking", "拥塞标记"), Unit: "%", Min: 0, Max: 10, Default: int64(0),
				Help: say("tc netem … loss N% ecn: N % of the client's packets are CE-marked if ECN-capable, dropped if not.", "tc netem … loss N% ecn：客户端 N % 的报文若支持 ECN 就被打上 CE，否则被丢弃。")},
			{Name: "messages", Kind: sandbox.ParamInt, Title: say("WRITEs of 4 KiB", "4 KiB 的 WRITE 次数"), Min: 10, Max: 400, Default: int64(100)},
		},
		Presets: []sandbox.Preset{
			{ID: "bits", Title: say("DSCP 26, ECT(0)", "DSCP 26，ECT(0)"), Values: map[string]any{"dscp": 26, "ecn": "ect0", "mark": 0}},
			{ID: "marked", Title: say("… and a congested switch marks 5 %", "……再让拥塞的交换机标记 5 %"), Values: map[string]any{"dscp": 26, "ecn": "ect0", "mark": 5}},
			{ID: "not-ect", Title: say("Not-ECT under the same congestion", "同样拥塞下的 Not-ECT"), Values: map[string]any{"dscp": 26, "ecn": "not-ect", "mark": 5}},
		},
		Timeout: 60 * time.Second,
		Run:     runDSCPECN,
	}
}

var ecnBits = map[string]int{"not-ect": 0, "ect1": 1, "ect0": 2}

var ecnNames = [4]string{"Not-ECT", "ECT(1)", "ECT(0)", "CE"}

// rocePkt is what the lesson reads from one captured RoCEv2 packet.
type rocePkt struct {
	in     bool   // client → server
	src    string // IPv4 source address
	tos    byte
	opcode byte
	psn    uint32
}

func (p rocePkt) dscp() int { return int(p.tos >> 2) }
func (p rocePkt) ecn() int  { return int(p.tos & 3) }

// parseRoCE reads Ethernet/IPv4/UDP:4791/BTH of a captured frame by their
// fixed offsets: the four fields this lesson counts over hundreds of
// packets (sandbox/capture decodes every field for the packet view).
func parseRoCE(b []byte) (rocePkt, bool) {
	var p rocePkt
	if len(b) < 14+20 || binary.BigEndian.Uint16(b[12:14]) != 0x0800 {
		return p, false
	}
	ip := b[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[0]>>4 != 4 || ip[9] != 17 || len(ip) < ihl+8+12 {
		return p, false
	}
	udp := ip[ihl:]
	if binary.BigEndian.Uint16(udp[2:4]) != 4791 {
		return p, false
	}
	bth := udp[8:]
	p.src = net.IP(ip[12:16]).String()
	p.tos = ip[1]
	p.opcode = bth[0]
	p.psn = binary.BigEndian.Uint32(bth[8:12]) & 0xffffff
	return p, true
}

// rmemForCapture lifts the guest's default socket receive buffer while the
// capture socket is opened: a frame costs its skb's truesize (~2–3 KiB) of
// it whatever the snap length, and the default (~208 KiB) holds under a
// hundred frames — a slow guest would drop the rest. Only sockets created
// meanwhile get it; the old value is put back at once.
func rmemForCapture(open func() error) error {
	const f = "/proc/sys/net/core/rmem_default"
	old, err := os.ReadFile(f)
	if err == nil && os.WriteFile(f, []byte("16777216"), 0o644) == nil {
		defer os.WriteFile(f, old, 0o644)
	}
	return open()
}

// dscpRun is one run of dscp-ecn: what its phases share, so that each
// phase (connect, capture, the summary, the verdict) is a method of its
// own, as steps.go's stepper.
type dscpRun struct {
	ctx        context.Context
	emit       sandbox.Emitter
	top        topology
	dscp, ecn  int
	mark, n    int
	tclass     int
	cdev, sdev string
	srv, cli   *rc
	target     verbs.Endpoint
	took       time.Duration
	werr       error            // the WRITEs' failure, if any
	d          map[string]int64 // the rxe counters that moved
	in, out    *dscpAgg         // what the capture shows, per direction
	drops      int
}

// dscpAgg is what one direction's captured packets carried.
type dscpAgg struct {
	pkts, cnp int
	dscps     map[int]int
	ecn       [4]int
}

// dscpSize is each WRITE's size.
const dscpSize = 4096

func runDSCPECN(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	dscp := int(p["dscp"].(int64))
	ecn := ecnBits[p["ecn"].(string)]
	link, err := shapeLink(emit, say("this experiment needs two Soft-RoCE devices on a veth pair (rxe0, rxe1): it captures on the server's link",
		"这个实验需要 veth 对上的两个 Soft-RoCE 设备（rxe0、rxe1）：它在服务端的链路上抓包"))
	if err != nil {
		return err
	}
	defer link.reset(emit, false)
	r := &dscpRun{ctx: ctx, emit: emit, top: link.top, dscp: dscp, ecn: ecn, mark: int(p["mark"].(int64)), n: int(p["messages"].(int64)),
		tclass: dscp<<2 | ecn, cdev: link.dev, sdev: link.top.Server.GID.Netdev}
	err = r.connect()
	// what connect opened is closed however far it got, client first
	if r.srv != nil {
		defer r.srv.Close()
	}
	if r.cli != nil {
		defer r.cli.Close()
	}
	if err != nil {
		return err
	}
	if err := r.capture(); err != nil {
		return err
	}
	figs := r.summary(link.clean)
	ok, v := r.verdict()
	result(emit, ok, v, figs)
	return nil
}

// connect connects the client QP, with the traffic class under study, to
// the server's, and turns the client's link into a congested switch when
// mark asks for it.
func (r *dscpRun) connect() error {
	ctx, emit, top, tclass, dscp, ecn, mark, cdev := r.ctx, r.emit, r.top, r.tclass, r.dscp, r.ecn, r.mark, r.cdev
	phase(emit, "connect", say(fmt.Sprintf("client QP: traffic class 0x%02x = DSCP %d, ECN %s; server QP: traffic class 0 (default)", tclass, dscp, ecnNames[ecn]),
		fmt.Sprintf("客户端 QP：traffic class 0x%02x = DSCP %d，ECN %s；服务端 QP：traffic class 0（默认）", tclass, dscp, ecnNames[ecn])))
	const size = dscpSize
	srv, err := openRC(rcOpts{Side: top.Server, BufSize: size, Access: verbs.AccessLocalWrite | verbs.AccessRemoteWrite, SendWR: 4, RecvWR: 4,
		Tune: func(a *verbs.QPAttr) { a.Timeout = sweepTimeout }})
	if err != nil {
		return verbsError(emit, err)
	}
	r.srv = srv
	cli, err := openRC(rcOpts{Side: top.Client, BufSize: size, Access: verbs.AccessLocalWrite, SendWR: writeDepth * 2, RecvWR: 4,
		Tune: func(a *verbs.QPAttr) { a.Timeout, a.TrafficClass = sweepTimeout, tclass }})
	if err != nil {
		return verbsError(emit, err)
	}
	r.cli = cli
	if err := srv.connect(cli.local()); err != nil {
		return verbsError(emit, err)
	}
	r.target = srv.local()
	if err := cli.connect(r.target); err != nil {
		return verbsError(emit, err)
	}
	logf(emit, "ibv_modify_qp(client, RTR): ah_attr.grh.traffic_class = 0x%02x", tclass)
	if mark > 0 {
		cmds, err := netshape.Loss(ctx, cdev, float64(mark), true)
		for _, c := range cmds {
			logf(emit, "$ %s", c)
		}
		if err != nil {
			return err
		}
		note(emit, "info", say(fmt.Sprintf("netem now stands for a congested switch: %d %% of the client's packets are CE-marked if their ECN field says ECN-capable, dropped if not", mark),
			fmt.Sprintf("netem 现在扮演一台拥塞的交换机：客户端 %d %% 的报文若 ECN 字段表示支持 ECN 就被打上 CE，否则被丢弃", mark)))
	}

	return nil
}

// capture WRITEs n × 4 KiB while capturing on the server's link, and
// sorts the RoCE packets by direction.
func (r *dscpRun) capture() error {
	ctx, emit, top, n, sdev, cli, target := r.ctx, r.emit, r.top, r.n, r.sdev, r.cli, r.target
	const size = dscpSize
	phase(emit, "capture", say(fmt.Sprintf("capture on %s while the client WRITEs %d × 4 KiB", sdev, n), fmt.Sprintf("在 %s 上抓包，同时客户端 WRITE %d × 4 KiB", sdev, n)))
	// Frames are kept whole (a 1024-MTU packet is 1098 B) while the byte
	// bound leaves room for every later packet's first 128 B — every
	// header (Ethernet, IP, UDP, BTH, RETH/AETH), what the DSCP/ECN
	// counts need — then cut to those 128 B, marked as cut in the view.
	// 512 KiB stays well under the agent protocol's line after base64.
	// Up to 4 data packets, their ACKs and some retransmissions a WRITE.
	var capt *wirecap.Capture
	if err := rmemForCapture(func() (err error) {
		capt, err = wirecap.Start(sdev, wirecap.Limits{Packets: min(3000, 12*n+64), Bytes: 512 << 10, Snap: wirecap.DefaultSnap, Head: 128}, nil)
		return err
	}); err != nil {
		return err
	}
	before := readBoth(top)
	start := time.Now()
	werr := writeN(ctx, cli, target, size, n)
	took := time.Since(start)
	res := capt.Stop()
	d := diffBoth(before, readBoth(top))
	r.took, r.werr, r.d = took, werr, d
	if werr != nil {
		var wf *wcFailure
		if errors.As(werr, &wf) {
			wcError(emit, wf.wc, say("The WRITEs failed before all were done; the capture below shows what was on the wire until then.", "WRITE 在全部完成前失败了；下面的抓包显示了此前线路上的报文。"))
		} else {
			return verbsError(emit, werr)
		}
	}
	if res.Err != nil {
		return explained(emit, say("capture: "+res.Err.Error(), "抓包失败："+res.Err.Error()))
	}
	var pkts []rocePkt
	for _, f := range res.Frames {
		if pk, ok := parseRoCE(f.Data); ok {
			pk.in = pk.src == top.Client.IP()
			pkts = append(pkts, pk)
		}
	}
	// The whole capture goes with the run: the page lists the packets,
	// shows each one's DSCP and ECN bits in the header, and offers the .pcap.
	hosts := map[string]sandbox.Text{top.Client.IP(): say(top.Client.Dev+" (client)", top.Client.Dev+"（客户端）"), top.Server.IP(): say(top.Server.Dev+" (server)", top.Server.Dev+"（服务端）")}
	if ev, err := res.Event(hosts); err == nil {
		emit.Emit(ev)
	} else {
		note(emit, "warn", say(fmt.Sprintf("the capture could not be stored with the run: %v", err), "抓包无法随这次运行保存："+quoteZh(err)))
	}
	missed := d["rcvd_pkts"] - int64(len(pkts)) // the server received every frame the capture should have seen
	note(emit, "info", say(fmt.Sprintf("%d WRITEs in %s; captured %d RoCEv2 packets on %s (%d over the capture's limits; the devices counted %d received)", n, fmtDur(took), len(pkts), sdev, res.Dropped, d["rcvd_pkts"]),
		fmt.Sprintf("%s 内完成 %d 个 WRITE；在 %s 上抓到 %d 个 RoCEv2 报文（%d 个超出抓包上限；设备记录收到 %d 个）", fmtDur(took), n, sdev, len(pkts), res.Dropped, d["rcvd_pkts"])))
	r.drops = int(max(missed, 0))

	// Per direction: packets, DSCP values, ECN field counts, CNPs.
	by := map[bool]*dscpAgg{true: {dscps: map[int]int{}}, false: {dscps: map[int]int{}}}
	for _, pk := range pkts {
		a := by[pk.in]
		a.pkts++
		a.dscps[pk.dscp()]++
		a.ecn[pk.ecn()]++
		if pk.opcode == 0x81 {
			a.cnp++
		}
	}
	r.in, r.out = by[true], by[false]
	return nil
}

// summary emits the per-direction table and returns the run's figures.
func (r *dscpRun) summary(cleanAtStart bool) map[string]float64 {
	emit, sdev, in, out, d := r.emit, r.sdev, r.in, r.out, r.d
	same := sandbox.Same
	sum := sandbox.NewTable(say("DSCP and ECN of every captured packet on "+sdev, sdev+" 上抓到的每个报文的 DSCP 与 ECN"),
		say("direction", "方向"), say("packets", "报文数"), say("DSCP seen (packets)", "出现的 DSCP（报文数）"),
		same("Not-ECT"), same("ECT(1)"), same("ECT(0)"), same("CE"), same("CNP"))
	for _, a := range []*dscpAgg{in, out} {
		name := say("client → server (WRITE data)", "客户端 → 服务端（WRITE 数据）")
		if a == out {
			name = say("server → client (ACKs)", "服务端 → 客户端（ACK）")
		}
		sum.AddRow(name, same(fmt.Sprint(a.pkts)), same(fmtCounts(a.dscps)), same(fmt.Sprint(a.ecn[0])), same(fmt.Sprint(a.ecn[1])), same(fmt.Sprint(a.ecn[2])), same(fmt.Sprint(a.ecn[3])), same(fmt.Sprint(a.cnp)))
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: sum})
	tclass, dscp, ecn, mark, drops, took, werr := r.tclass, r.dscp, r.ecn, r.mark, r.drops, r.took, r.werr
	figs := map[string]float64{
		"clean_at_start": b2f(cleanAtStart), "traffic_class": float64(tclass), "dscp": float64(dscp), "ecn": float64(ecn), "mark": float64(mark),
		"data_pkts": float64(in.pkts), "data_dscp_match": float64(in.dscps[dscp]), "data_ecn_set": float64(in.ecn[ecn]), "data_ce": float64(in.ecn[3]),
		"ack_pkts": float64(out.pkts), "ack_dscp0": float64(out.dscps[0]), "ack_ce": float64(out.ecn[3]), "ack_ect": float64(out.ecn[1] + out.ecn[2]),
		"cnps": float64(in.cnp + out.cnp), "capture_drops": float64(drops), "ms": round3(took.Seconds() * 1000), "write_failed": b2f(werr != nil),
	}
	for k, v := range d {
		figs[k] = float64(v)
	}
	moved := fmtDeltasText(d)
	note(emit, "info", say("rxe counters that moved: "+moved["en"], "变化了的 rxe 计数器："+moved["zh"]))

	return figs
}

// verdict says what this capture shows, part by part.
func (r *dscpRun) verdict() (bool, sandbox.Text) {
	in, out, dscp, ecn, mark, d := r.in, r.out, r.dscp, r.ecn, r.mark, r.d
	var en, zh []string
	bitsOK := in.pkts > 0 && in.dscps[dscp]+in.ecn[3] >= in.pkts*9/10 // CE replaces the ECN bits, never the DSCP
	if in.pkts == 0 {
		en = append(en, "The capture holds no client → server packets, so it cannot show the header fields.")
		zh = append(zh, "抓包里没有客户端 → 服务端的报文，无法展示头部字段。")
	} else {
		marked := ""
		markedZh := ""
		if in.ecn[3] > 0 {
			marked = fmt.Sprintf(" (%d of them arrived with CE instead: the link marked them on the way)", in.ecn[3])
			markedZh = fmt.Sprintf("（其中 %d 个到达时变成了 CE：是链路在途中打的标记）", in.ecn[3])
		}
		en = append(en, fmt.Sprintf("All %d data packets carried DSCP %d and left with the ECN bits the QP asked for, %s%s — Soft-RoCE copies the QP's traffic class into the IP header's TOS byte as it is: it neither sets ECT on its own nor changes the DSCP.", in.dscps[dscp], dscp, ecnNames[ecn], marked))
		zh = append(zh, fmt.Sprintf("%d 个数据包都带着 DSCP %d，出发时带着 QP 要求的 ECN 位 %s%s——Soft-RoCE 把 QP 的 traffic class 原样写进 IP 头的 TOS 字节：既不会自己设置 ECT，也不会改动 DSCP。", in.dscps[dscp], dscp, ecnNames[ecn], markedZh))
		if in.dscps[dscp] != in.pkts {
			en[len(en)-1] = fmt.Sprintf("%d of %d data packets carried DSCP %d.", in.dscps[dscp], in.pkts, dscp)
			zh[len(zh)-1] = fmt.Sprintf("%d 个数据包中有 %d 个带着 DSCP %d。", in.pkts, in.dscps[dscp], dscp)
		}
	}
	if out.pkts > 0 {
		en = append(en, fmt.Sprintf("The %d ACKs went back with DSCP %s: they take the server QP's own traffic class (0 here), so on a real fabric both ends must be configured.", out.pkts, fmtCounts(out.dscps)))
		zh = append(zh, fmt.Sprintf("%d 个 ACK 回程时的 DSCP 是 %s：它们用的是服务端 QP 自己的 traffic class（这里是 0），所以真实网络里两端都要配置。", out.pkts, fmtCountsZh(out.dscps)))
	}
	if mark > 0 {
		if ecn != 0 {
			en = append(en, fmt.Sprintf("The congested link CE-marked %d data packets. Soft-RoCE received them and did nothing about it: %d CNPs went back. (This run does not measure the sender's rate; rxe has no CNP opcode and no rate limiter, so nothing could slow it.) rxe implements no DCQCN — a hardware RNIC would answer CE with a CNP and the sender would cut its rate (see the animation).", in.ecn[3], in.cnp+out.cnp))
			zh = append(zh, fmt.Sprintf("拥塞链路给 %d 个数据包打上了 CE。Soft-RoCE 收下了它们却毫无反应：回传的 CNP 为 %d 个。（本次运行不测发送方的速率；rxe 没有 CNP 操作码，也没有限速器，所以没有什么能让它降速。）rxe 没有实现 DCQCN——硬件 RDMA 网卡会用 CNP 回应 CE，发送方随即降速（见动画）。", in.ecn[3], in.cnp+out.cnp))
		} else {
			en = append(en, fmt.Sprintf("These packets were Not-ECT, so the congested link could not mark them and dropped them instead: the receiver counted %d sequence gaps (out_of_seq_request counts the first packet after each gap, the one that triggers the NAK; the rest of the gap is dropped uncounted) and the sender retransmitted (go-back-N). ECN only helps traffic that says it is ECN-capable.", d["out_of_seq_request"]))
			zh = append(zh, fmt.Sprintf("这些报文是 Not-ECT，拥塞链路无法给它们打标记，只好丢弃：接收端记录了 %d 个序号缺口（out_of_seq_request 只记每个缺口后的第一个报文，即触发 NAK 的那个；同一缺口的其余报文被丢弃而不计数），发送方进行了重传（go-back-N）。ECN 只帮得上声明自己支持 ECN 的流量。", d["out_of_seq_request"]))
		}
	}
	ok := bitsOK && in.cnp+out.cnp == 0
	return ok, sandbox.Text{"en": strings.Join(en, " "), "zh": strings.Join(zh, "")}
}

// writeN WRITEs n messages of size, keeping writeDepth in flight, and
// waits for all completions.
func writeN(ctx context.Context, cli *rc, target verbs.Endpoint, size, n int) error {
	posted, done := 0, 0
	post := func() error {
		posted++
		return cli.qp.PostSend(verbs.SendWR{ID: uint64(posted), Op: verbs.OpWrite, Flags: verbs.SendSignaled, MR: cli.mr, Length: size,
			RemoteAddr: target.Addr, RKey: target.RKey})
	}
	for posted < n && posted < writeDepth {
		if err := post(); err != nil {
			return err
		}
	}
	wcs := make([]verbs.WC, writeDepth)
	start := time.Now()
	for i := 0; done < posted; i++ {
		k, err := cli.sendCQ.Poll(wcs)
		if err != nil {
			return err
		}
		for _, wc := range wcs[:k] {
			done++
			if wc.Status != verbs.WCSuccess {
				return &wcFailure{wc: wc}
			}
			if posted < n {
				if err := post(); err != nil {
					return err
				}
			}
		}
		if k == 0 {
			relax(i)
			if i&1023 == 1023 {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if time.Since(start) > 30*time.Second {
					return fmt.Errorf("%d of %d WRITEs still outstanding after 30 s", posted-done, n)
				}
			}
		}
	}
	return nil
}

// fmtCounts prints {26: 400} as "26 (400)"; several values sorted.
// fmtCountsZh is fmtCounts for a Chinese sentence: "0（10 个）、26（40 个）".
func fmtCountsZh(m map[int]int) string { return countsAs(m, "%d（%d 个）", "、") }

func fmtCounts(m map[int]int) string { return countsAs(m, "%d (%d)", ", ") }

// countsAs lists m's keys in order, each with its count in format.
func countsAs(m map[int]int, format, sep string) string {
	var keys []int
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf(format, k, m[k]))
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, sep)
}
