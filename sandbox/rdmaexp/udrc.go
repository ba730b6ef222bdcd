package rdmaexp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// UDvsRC is the experiment "RC vs UD": the same SEND over a reliable
// connected QP and over an unreliable datagram QP with an address handle —
// where the 40-byte GRH lands in the receive buffer, and what happens to a
// message larger than the MTU on each (RC's path MTU, UD's port MTU).
func UDvsRC() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "ud-vs-rc",
		Title: say("RC vs UD: connection or datagram", "RC 与 UD：连接还是数据报"),
		Summary: say(
			"Sends one message over an RC QP (connected to one peer, any size, split into MTU-sized packets and acknowledged), then over a UD QP with an address handle (any peer per message, a 40-byte GRH in front of the data in the receive buffer, at most one MTU per message), then a UD message bigger than the MTU, and finally a UD receive buffer of exactly the message size (no room for the GRH).",
			"先通过 RC QP 发送一条消息（只连一个对端、大小不限、按 MTU 切成多个包并被确认），再通过带地址句柄的 UD QP 发送（每条消息可发往任意对端、接收缓冲区里数据前面有 40 字节的 GRH、每条消息最多一个 MTU），再发送一条大于 MTU 的 UD 消息，最后投递一个恰好等于消息大小（没给 GRH 留位置）的 UD 接收缓冲区。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Shareable, // it shows what arrives, not how fast
		Params: []sandbox.Param{
			{Name: "size", Kind: sandbox.ParamBytes, Title: say("Size of the big message", "大消息的大小"),
				Help: say("Sent over RC, then over UD. Bigger than the port's MTU (1024 bytes on the lab's veth) shows UD's limit.", "先走 RC 再走 UD。大于端口的 MTU（实验环境的 veth 上是 1024 字节）时可以看到 UD 的上限。"),
				Min:  1, Max: 64 << 10, Unit: "B", Default: int64(3000)},
		},
		Presets: []sandbox.Preset{
			{ID: "over-mtu", Title: say("3000 bytes: more than one MTU", "3000 字节：超过一个 MTU"), Values: map[string]any{"size": 3000}},
			{ID: "fits", Title: say("512 bytes: fits in one MTU", "512 字节：一个 MTU 装得下"), Values: map[string]any{"size": 512}},
		},
		Timeout: 40 * time.Second,
		Run:     runUDvsRC,
	}
}

// udQKey is the Q_Key both UD QPs agree on; a datagram with another key is
// dropped by the receiver.
const udQKey = 0x11111111

// ud owns one UD end: device, PD, buffer+MR, one CQ for both queues, a UD
// QP in RTS. Close frees in reverse order.
type ud struct {
	ctx  *verbs.Context
	pd   *verbs.PD
	cq   *verbs.CQ
	qp   *verbs.QP
	buf  *verbs.Buffer
	mr   *verbs.MR
	ah   *verbs.AH
	port verbs.PortAttr
	side side
}

func openUD(s side, bufSize int) (u *ud, err error) {
	u = &ud{side: s}
	defer func() {
		if err != nil {
			u.Close()
		}
	}()
	if u.ctx, err = verbs.Open(s.Dev); err != nil {
		return nil, err
	}
	if u.port, err = u.ctx.QueryPort(1); err != nil {
		return nil, err
	}
	if u.pd, err = u.ctx.AllocPD(); err != nil {
		return nil, err
	}
	if u.buf, err = verbs.NewBuffer(bufSize); err != nil {
		return nil, err
	}
	if u.mr, err = u.pd.RegMR(u.buf, 0, bufSize, verbs.AccessLocalWrite); err != nil {
		return nil, err
	}
	if u.cq, err = u.ctx.NewCQ(16, nil); err != nil {
		return nil, err
	}
	if u.qp, err = u.pd.NewQP(u.cq, u.cq, verbs.QPCaps{MaxSendWR: 8, MaxRecvWR: 8, Type: verbs.QPTypeUD}); err != nil {
		return nil, err
	}
	a := verbs.QPAttr{Port: 1, QKey: udQKey, SQPSN: rand.Uint32() & 0xffffff}
	for _, st := range []verbs.QPState{verbs.StateInit, verbs.StateRTR, verbs.StateRTS} {
		if err = u.qp.Modify(st, a); err != nil {
			return nil, err
		}
	}
	return u, nil
}

func (u *ud) Close() error {
	if u == nil {
		return nil
	}
	var errs []error
	for _, c := range []interface{ Close() error }{u.ah, u.qp, u.mr, u.buf, u.cq, u.pd, u.ctx} {
		if c == nil || isNilCloser(c) {
			continue
		}
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	u.ah, u.qp, u.mr, u.buf, u.cq, u.pd, u.ctx = nil, nil, nil, nil, nil, nil, nil
	return errors.Join(errs...)
}

// isNilCloser reports a typed nil pointer inside the interface (a field
// that was never set).
func isNilCloser(c interface{ Close() error }) bool {
	switch v := c.(type) {
	case *verbs.AH:
		return v == nil
	case *verbs.QP:
		return v == nil
	case *verbs.MR:
		return v == nil
	case *verbs.Buffer:
		return v == nil
	case *verbs.CQ:
		return v == nil
	case *verbs.PD:
		return v == nil
	case *verbs.Context:
		return v == nil
	}
	return false
}

// pollFor waits up to limit for one completion on cq; ok is false when none came.
func pollFor(ctx context.Context, cq *verbs.CQ, limit time.Duration) (verbs.WC, bool, error) {
	wc := make([]verbs.WC, 1)
	deadline := time.Now().Add(limit)
	for i := 0; ; i++ {
		n, err := cq.Poll(wc)
		if err != nil {
			return verbs.WC{}, false, err
		}
		if n == 1 {
			return wc[0], true, nil
		}
		if i%64 == 63 {
			if ctx.Err() != nil {
				return verbs.WC{}, false, ctx.Err()
			}
			if time.Now().After(deadline) {
				return verbs.WC{}, false, nil
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
}

// sentPkts reads the device's sent_pkts counter; a failure is logged once
// per run and counts as -1 (a delta of two failures is 0).
func sentPkts(emit sandbox.Emitter, dev string) int64 {
	// the one file first: cheap, and what `rdma statistic` shows
	if b, err := os.ReadFile("/sys/class/infiniband/" + dev + "/ports/1/hw_counters/sent_pkts"); err == nil {
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			return v
		}
	}
	c, err := verbs.Counters(dev, 1)
	if err != nil {
		note(emit, "info", say(fmt.Sprintf("counters of %s unavailable: %v", dev, err), fmt.Sprintf("读不到 %s 的计数器：%s", dev, quoteZh(err))))
		return -1
	}
	v, ok := c["sent_pkts"]
	if !ok {
		note(emit, "info", say(fmt.Sprintf("%s has no sent_pkts counter", dev), fmt.Sprintf("%s 没有 sent_pkts 计数器", dev)))
		return -1
	}
	return v
}

// settledPkts is sentPkts once it stopped moving: Soft-RoCE may count a
// packet after the completion of its send was already delivered, so a
// reading right after a completion can miss it (and the next window count
// it). It waits until two readings 100 ms apart agree (at most ~1 s).
func settledPkts(emit sandbox.Emitter, dev string) int64 {
	v := sentPkts(emit, dev)
	for range 10 {
		time.Sleep(100 * time.Millisecond)
		w := sentPkts(emit, dev)
		if w == v {
			return v
		}
		v = w
	}
	return v
}

// grhIPv4 reads the IPv4 header Soft-RoCE (RoCE v2 over IPv4) puts in
// bytes 20–39 of the GRH area: source and destination address.
func grhIPv4(grh []byte) (src, dst net.IP, ok bool) {
	if len(grh) < verbs.GRHBytes {
		return nil, nil, false
	}
	h := grh[20:40]
	if h[0]>>4 != 4 {
		return nil, nil, false
	}
	return net.IP(append([]byte(nil), h[12:16]...)), net.IP(append([]byte(nil), h[16:20]...)), true
}

// udrcRun is one run of ud-vs-rc: what its phases share — the devices,
// the table, the figures the verdict quotes — so that each phase is a
// method of its own, as steps.go's stepper.
type udrcRun struct {
	ctx  context.Context
	emit sandbox.Emitter
	top  topology
	size int
	mtu  int
	figs map[string]float64
	t    *sandbox.Table

	rcPkts           int64
	rcOK, udOK       bool
	udByteLen        uint32
	bigSend, bigRecv string // the big UD message's completions ("-", "none": none)
	bigPost          string // its post's errno name, "ok"
	bigArrived       bool
	bigLen           uint32
	bigPkts          int64
}

func runUDvsRC(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	top, err := pickTopology()
	if err != nil {
		return err
	}
	note(emit, "info", top.describe())
	size := int(p["size"].(int64))
	r := &udrcRun{ctx: ctx, emit: emit, top: top, size: size, figs: map[string]float64{"size": float64(size)},
		t: sandbox.NewTable(say("RC vs UD", "RC 与 UD"), say("message", "消息"), sandbox.Same("QP"), say("bytes sent", "发送字节"),
			say("sender completion", "发送方完成"), say("receiver completion", "接收方完成"), sandbox.Same("byte_len"), sandbox.Same("GRH"),
			say("packets sent", "发出的包"))}
	if err := r.rc(); err != nil {
		return err
	}
	uc, us, err := r.udPair()
	if err != nil {
		return err
	}
	defer us.Close()
	defer uc.Close()
	if err := r.udSmall(uc, us); err != nil {
		return err
	}
	if err := r.udBig(uc, us); err != nil {
		return err
	}
	const small = 64
	exact, err := udExactBuffer(ctx, emit, top, uc, small)
	if err != nil {
		return err
	}
	for k, v := range exact.figs() {
		r.figs[k] = v
	}
	r.row(fmt.Sprintf("%d B", small), "UD", fmt.Sprint(small), exact.send, exact.recv, fmt.Sprint(exact.byteLen), "-", fmt.Sprint(exact.pkts))
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: r.t})
	ok, v := r.verdict(exact, small)
	result(emit, ok, v, r.figs)
	return nil
}

// row adds a row of the table, its words in both languages.
func (r *udrcRun) row(cells ...string) {
	ts := make([]sandbox.Text, len(cells))
	for i, c := range cells {
		switch c {
		case "yes":
			ts[i] = say("yes", "有")
		case "no":
			ts[i] = say("no", "无")
		case "none":
			ts[i] = say("none", "无")
		default:
			if a, b, ok := strings.Cut(c, " (post: "); ok { // a send status and the post's errno
				post := strings.TrimSuffix(b, ")")
				if post == "ok" {
					post = "成功"
				}
				ts[i] = say(c, a+"（投递："+post+"）")
				continue
			}
			ts[i] = sandbox.Same(c)
		}
	}
	r.t.AddRow(ts...)
}

// rc is phase 1: one message of size bytes over RC, any size; it also
// learns the MTU.
func (r *udrcRun) rc() error {
	emit, top, size := r.emit, r.top, r.size
	phase(emit, "rc", say(fmt.Sprintf("RC: SEND %d bytes to the connected peer", size), fmt.Sprintf("RC：向已连接的对端 SEND %d 字节", size)))
	srv, err := openRC(rcOpts{Side: top.Server, BufSize: size, Access: verbs.AccessLocalWrite, SendWR: 4, RecvWR: 4, RNRRetry: 7})
	if err != nil {
		return verbsError(emit, err)
	}
	defer srv.Close()
	cli, err := openRC(rcOpts{Side: top.Client, BufSize: size, Access: verbs.AccessLocalWrite, SendWR: 4, RecvWR: 4, RNRRetry: 7})
	if err != nil {
		return verbsError(emit, err)
	}
	defer cli.Close()
	if err := srv.connect(cli.local()); err != nil {
		return verbsError(emit, err)
	}
	if err := cli.connect(srv.local()); err != nil {
		return verbsError(emit, err)
	}
	mtu := cli.port.ActiveMTU.Bytes()
	r.mtu = mtu
	r.figs["mtu"] = float64(mtu)
	note(emit, "info", say(fmt.Sprintf("MTU %d bytes (active MTU of %s port 1): RC's path MTU at RTR, and UD's limit, which is the port's — UD has no path", mtu, top.Client.Dev),
		fmt.Sprintf("MTU 为 %d 字节（%s 端口 1 的 active MTU）：既是 RC 在 RTR 时设定的路径 MTU，也是 UD 的上限——UD 没有路径，上限就是端口的 MTU", mtu, top.Client.Dev)))
	if err := srv.qp.PostRecv(1, srv.mr, 0, size); err != nil {
		return verbsError(emit, err)
	}
	fill(cli.buf.Bytes()[:size], "rc")
	before := settledPkts(emit, top.Client.Dev)
	if err := cli.qp.PostSend(verbs.SendWR{ID: 2, Op: verbs.OpSend, Flags: verbs.SendSignaled, MR: cli.mr, Length: size}); err != nil {
		return verbsError(emit, err)
	}
	swc, err := cli.waitCQ(r.ctx, cli.sendCQ, 20*time.Second)
	if err != nil {
		return err
	}
	rwc, err := srv.waitCQ(r.ctx, srv.recvCQ, 20*time.Second)
	if err != nil {
		return err
	}
	r.rcPkts = settledPkts(emit, top.Client.Dev) - before
	r.rcOK = swc.Status == verbs.WCSuccess && rwc.Status == verbs.WCSuccess && int(rwc.ByteLen) == size &&
		string(srv.buf.Bytes()[:size]) == string(cli.buf.Bytes()[:size])
	r.figs["rc_byte_len"] = float64(rwc.ByteLen)
	r.figs["rc_packets"] = float64(r.rcPkts)
	r.figs["rc_ok"] = b2f(r.rcOK)
	r.row(fmt.Sprintf("%d B", size), "RC", fmt.Sprint(size), swc.Status.String(), rwc.Status.String(), fmt.Sprint(rwc.ByteLen), "no", fmt.Sprint(r.rcPkts))
	note(emit, "info", say(fmt.Sprintf("RC delivered all %d bytes as one message (receive byte_len %d) in %d packets of at most %d bytes: the sender's NIC split it by the path MTU, the receiver's put it back together, and every packet was acknowledged.", size, rwc.ByteLen, r.rcPkts, mtu),
		fmt.Sprintf("RC 把 %d 字节作为一条消息完整送达（接收 byte_len %d），用了 %d 个包，每包至多 %d 字节：发送方网卡按路径 MTU 切分，接收方网卡重新拼好，每个包都得到确认。", size, rwc.ByteLen, r.rcPkts, mtu)))
	return nil
}

// udPair opens the two UD ends (the client with an address handle to the
// server), each with receive room for the big message and a GRH.
func (r *udrcRun) udPair() (uc, us *ud, err error) {
	emit, top := r.emit, r.top
	phase(emit, "ud", say("UD: SEND 64 bytes through an address handle", "UD：通过地址句柄 SEND 64 字节"))
	bufSize := verbs.GRHBytes + max(r.size, r.mtu) + 4096
	if us, err = openUD(top.Server, bufSize); err != nil {
		return nil, nil, verbsError(emit, err)
	}
	if uc, err = openUD(top.Client, bufSize); err != nil {
		us.Close()
		return nil, nil, verbsError(emit, err)
	}
	if uc.ah, err = uc.pd.NewAH(1, top.Client.GID.Index, top.Server.GID.GID, 64); err != nil {
		uc.Close()
		us.Close()
		return nil, nil, verbsError(emit, err)
	}
	note(emit, "info", say(fmt.Sprintf("UD QPs: client 0x%x on %s, server 0x%x on %s, Q_Key 0x%x; address handle → %s (GID index %d)",
		uc.qp.Num(), top.Client.Dev, us.qp.Num(), top.Server.Dev, udQKey, top.Server.GID.GID.IP(), top.Client.GID.Index),
		fmt.Sprintf("UD QP：客户端 0x%x 在 %s 上，服务端 0x%x 在 %s 上，Q_Key 0x%x；地址句柄 → %s（GID 索引 %d）",
			uc.qp.Num(), top.Client.Dev, us.qp.Num(), top.Server.Dev, udQKey, top.Server.GID.GID.IP(), top.Client.GID.Index)))
	return uc, us, nil
}

// udSmall is phase 2: a small datagram through the address handle, and
// where its GRH lands.
func (r *udrcRun) udSmall(uc, us *ud) error {
	emit, top := r.emit, r.top
	// Each receive buffer is GRH + one MTU, as a UD receiver must post.
	slot := verbs.GRHBytes + r.mtu
	if err := us.qp.PostRecv(10, us.mr, 0, slot); err != nil {
		return verbsError(emit, err)
	}
	if err := us.qp.PostRecv(11, us.mr, slot, slot); err != nil {
		return verbsError(emit, err)
	}
	const small = 64
	fill(uc.buf.Bytes()[:small], "ud")
	before := settledPkts(emit, top.Client.Dev)
	if err := uc.qp.PostSendUD(verbs.SendWR{ID: 20, Flags: verbs.SendSignaled, MR: uc.mr, Length: small}, uc.ah, us.qp.Num(), udQKey); err != nil {
		return verbsError(emit, err)
	}
	swc, ok, err := pollFor(r.ctx, uc.cq, 10*time.Second)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("ud-vs-rc: the UD SEND produced no completion")
	}
	rwc, ok, err := pollFor(r.ctx, us.cq, 5*time.Second)
	if err != nil {
		return err
	}
	udPkts := settledPkts(emit, top.Client.Dev) - before
	if !ok {
		return fmt.Errorf("ud-vs-rc: the 64-byte UD datagram did not arrive")
	}
	grh := us.buf.Bytes()[:verbs.GRHBytes]
	payloadOK := string(us.buf.Bytes()[verbs.GRHBytes:verbs.GRHBytes+small]) == string(uc.buf.Bytes()[:small])
	src, dst, ipOK := grhIPv4(grh)
	r.udOK = rwc.Status == verbs.WCSuccess && rwc.GRH && int(rwc.ByteLen) == small+verbs.GRHBytes && payloadOK
	r.udByteLen = rwc.ByteLen
	r.figs["ud_byte_len"] = float64(rwc.ByteLen)
	r.figs["ud_grh"] = b2f(rwc.GRH)
	r.figs["ud_payload_after_grh"] = b2f(payloadOK)
	r.figs["ud_src_qp_matches"] = b2f(rwc.SrcQP == uc.qp.Num())
	r.figs["ud_grh_ipv4"] = b2f(ipOK && src.Equal(top.Client.GID.GID.IP()) && dst.Equal(top.Server.GID.GID.IP()))
	r.row(fmt.Sprintf("%d B", small), "UD", fmt.Sprint(small), swc.Status.String(), rwc.Status.String(), fmt.Sprint(rwc.ByteLen), yesNo(rwc.GRH), fmt.Sprint(udPkts))
	note(emit, "info", say(fmt.Sprintf("receive buffer bytes 0–39 (GRH area): % x", grh), fmt.Sprintf("接收缓冲区第 0–39 字节（GRH 区域）：% x", grh)))
	if ipOK {
		note(emit, "info", say(fmt.Sprintf("The receive completion says byte_len %d = 40 (GRH) + %d (data), src_qp 0x%x. Bytes 20–39 of the GRH area hold the packet's IPv4 header (RoCE v2 over IPv4): from %s to %s. The data starts at byte 40, so a UD receive buffer must be 40 bytes larger than the largest message (the last step shows what happens when it is not).", rwc.ByteLen, small, rwc.SrcQP, src, dst),
			fmt.Sprintf("接收完成显示 byte_len %d = 40（GRH）+ %d（数据），src_qp 0x%x。GRH 区域的第 20–39 字节是报文的 IPv4 头（RoCE v2 over IPv4）：从 %s 到 %s。数据从第 40 字节开始，所以 UD 接收缓冲区必须比最大消息大 40 字节（最后一步展示不这样做会怎样）。", rwc.ByteLen, small, rwc.SrcQP, src, dst)))
	}
	return nil
}

// udBig is phase 3: a datagram of size bytes, bigger than the MTU or not.
func (r *udrcRun) udBig(uc, us *ud) error {
	emit, top, size, mtu := r.emit, r.top, r.size, r.mtu
	phase(emit, "ud-big", say(fmt.Sprintf("UD: SEND %d bytes (port MTU %d)", size, mtu), fmt.Sprintf("UD：SEND %d 字节（端口 MTU %d）", size, mtu)))
	fill(uc.buf.Bytes()[:size], "big")
	before := settledPkts(emit, top.Client.Dev)
	r.bigPost, r.bigSend, r.bigRecv = "ok", "-", "none"
	if err := uc.qp.PostSendUD(verbs.SendWR{ID: 30, Flags: verbs.SendSignaled, MR: uc.mr, Length: size}, uc.ah, us.qp.Num(), udQKey); err != nil {
		var ve *verbs.Error
		if !errors.As(err, &ve) {
			return err
		}
		r.bigPost = verbs.ErrnoName(ve.Errno)
		note(emit, "info", say(fmt.Sprintf("ibv_post_send refused the %d-byte UD SEND: %s.", size, ve.Error()), fmt.Sprintf("ibv_post_send 拒绝了 %d 字节的 UD SEND：%s。", size, ve.Error())))
	} else {
		swc, ok, err := pollFor(r.ctx, uc.cq, 10*time.Second)
		if err != nil {
			return err
		}
		if ok {
			r.bigSend = swc.Status.String()
		}
		// Wait a full second: a datagram that was sent arrives in
		// milliseconds even under emulation.
		rwc, ok, err := pollFor(r.ctx, us.cq, time.Second)
		if err != nil {
			return err
		}
		if ok {
			r.bigArrived = rwc.Status == verbs.WCSuccess
			r.bigRecv, r.bigLen = rwc.Status.String(), rwc.ByteLen
		}
	}
	r.bigPkts = settledPkts(emit, top.Client.Dev) - before
	r.figs["ud_big_arrived"] = b2f(r.bigArrived)
	r.figs["ud_big_packets"] = float64(r.bigPkts)
	r.figs["ud_big_send_ok"] = b2f(r.bigSend == verbs.WCSuccess.String())
	r.row(fmt.Sprintf("%d B", size), "UD", fmt.Sprint(size), r.bigSend+" (post: "+r.bigPost+")", r.bigRecv, fmt.Sprint(r.bigLen), "-", fmt.Sprint(r.bigPkts))
	return nil
}

// verdict is what the run showed, from the figures the table holds.
func (r *udrcRun) verdict(exact udExact, small int) (bool, sandbox.Text) {
	size, mtu, rcPkts := r.size, r.mtu, r.rcPkts
	rcOK, udOK := r.rcOK, r.udOK
	bigSend, bigRecv, bigPost, bigArrived, bigLen, bigPkts := r.bigSend, r.bigRecv, r.bigPost, r.bigArrived, r.bigLen, r.bigPkts
	var v sandbox.Text
	switch {
	case !rcOK || !udOK:
		v = say("Something did not behave as RC and UD should; see the table.", "有些结果与 RC、UD 应有的行为不符；见表格。")
	case size > mtu && !bigArrived && bigSend == verbs.WCSuccess.String() && bigPkts == 0:
		v = say(fmt.Sprintf("RC carried %d bytes as one message in %d packets. UD put a 40-byte GRH in front of the data (byte_len %d for 64 bytes). The %d-byte UD message was bigger than the %d-byte MTU: the sender's completion said IBV_WC_SUCCESS, yet not one packet left and the receiver got nothing — the IB spec (C10-93.1.1) says exactly that: drop silently, report no error. A UD application must cut its messages to the MTU itself.", size, rcPkts, r.udByteLen, size, mtu),
			fmt.Sprintf("RC 把 %d 字节作为一条消息、用 %d 个包送达。UD 在数据前放了 40 字节的 GRH（64 字节数据的 byte_len 为 %d）。%d 字节的 UD 消息超过了 %d 字节的 MTU：发送方的完成显示 IBV_WC_SUCCESS，却一个包也没发出，接收方什么也没收到——IB 规范（C10-93.1.1）就是这么规定的：静默丢弃，不报错。UD 应用必须自己把消息切到 MTU 以内。", size, rcPkts, r.udByteLen, size, mtu))
	case size > mtu && !bigArrived:
		v = say(fmt.Sprintf("RC carried %d bytes in %d packets; the %d-byte UD message, bigger than the %d-byte MTU, never arrived (sender: %s, post: %s). UD messages must fit in one MTU.", size, rcPkts, size, mtu, bigSend, bigPost),
			fmt.Sprintf("RC 用 %d 个包送达了 %d 字节；超过 %d 字节 MTU 的 %d 字节 UD 消息没有到达（发送方：%s，投递：%s）。UD 消息必须装进一个 MTU。", rcPkts, size, mtu, size, bigSend, bigPost))
	case size <= mtu && bigArrived:
		v = say(fmt.Sprintf("%d bytes fit in the %d-byte MTU, so UD delivered them too (byte_len %d, GRH included). Try a size above the MTU to see UD's limit.", size, mtu, bigLen),
			fmt.Sprintf("%d 字节装得进 %d 字节的 MTU，所以 UD 也送达了（byte_len %d，含 GRH）。把大小调到 MTU 以上就能看到 UD 的上限。", size, mtu, bigLen))
	default:
		v = say(fmt.Sprintf("The big UD message: sender %s, receiver %s, %d packets — not what the MTU rule predicts; see the table.", bigSend, bigRecv, bigPkts),
			fmt.Sprintf("大 UD 消息：发送方 %s，接收方 %s，%d 个包——与 MTU 规则的预测不符；见表格。", bigSend, bigRecv, bigPkts))
		rcOK = false
	}
	if rcOK && udOK {
		got := say("was not delivered", "没有送达")
		if exact.dataOK {
			got = say("was delivered", "却送达了")
		}
		v = say(v["en"]+fmt.Sprintf(" A receive buffer of exactly %d bytes, with no room for the GRH, completed with %s, the message %s and the receiving QP went to %s (the spec's status for this is a local length error, IBV_WC_LOC_LEN_ERR on mlx5).", small, exact.recv, got["en"], exact.state),
			v["zh"]+fmt.Sprintf("恰好 %d 字节、没给 GRH 留位置的接收缓冲区以 %s 完成，消息%s，接收方 QP 进入 %s（规范对此的状态是本地长度错误，mlx5 上是 IBV_WC_LOC_LEN_ERR）。", small, exact.recv, got["zh"], exact.state))
	}
	return rcOK && udOK, v
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// fill writes a recognisable pattern.
func fill(b []byte, tag string) {
	for i := range b {
		b[i] = tag[i%len(tag)] + byte(i/len(tag)%7)
	}
}
