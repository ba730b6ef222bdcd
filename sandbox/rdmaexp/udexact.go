package rdmaexp

import (
	"context"
	"fmt"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// udExact is what a UD receive of exactly the message size (no room for
// the 40-byte GRH) came to: the receive completion's status, how many of
// the buffer's bytes changed, and the receiving QP's state afterwards.
type udExact struct {
	send, recv string // completion statuses ("none" when nothing came)
	status     verbs.WCStatus
	completed  bool
	byteLen    uint32
	changed    int // bytes of the receive buffer that differ from the fill
	dataOK     bool
	state      string
	pkts       int64
}

func (x udExact) figs() map[string]float64 {
	st := float64(-1)
	if x.completed {
		st = float64(x.status)
	}
	return map[string]float64{
		"ud_exact_recv_status": st, "ud_exact_loc_len_err": b2f(x.completed && x.status == verbs.WCLocLenErr),
		"ud_exact_bytes_changed": float64(x.changed), "ud_exact_data_delivered": b2f(x.dataOK),
		"ud_exact_packets": float64(x.pkts), "ud_exact_error": b2f(x.completed && x.status != verbs.WCSuccess),
		"ud_exact_qp_error": b2f(x.state == verbs.StateError.String()),
	}
}

// udExactFill is what the exact-size receive buffer holds before the
// datagram comes, so any byte the device writes shows.
const udExactFill = 0xee

// udExactBuffer sends n bytes from cli to a fresh UD QP on the server side
// whose only receive is exactly n bytes long, and reports what the device
// did with it. A fresh QP keeps the step apart from the earlier ones (its
// receive queue holds this one buffer) and from what the error does to
// the QP.
func udExactBuffer(ctx context.Context, emit sandbox.Emitter, top topology, cli *ud, n int) (udExact, error) {
	phase(emit, "ud-exact", say(fmt.Sprintf("UD: a receive buffer of exactly %d bytes for a %d-byte message", n, n),
		fmt.Sprintf("UD：给 %d 字节的消息投递一个恰好 %d 字节的接收缓冲区", n, n)))
	x := udExact{send: "-", recv: "none"}
	srv, err := openUD(top.Server, n)
	if err != nil {
		return x, verbsError(emit, err)
	}
	defer srv.Close()
	buf := srv.buf.Bytes()[:n]
	for i := range buf {
		buf[i] = udExactFill
	}
	if err := srv.qp.PostRecv(40, srv.mr, 0, n); err != nil {
		return x, verbsError(emit, err)
	}
	fill(cli.buf.Bytes()[:n], "ex")
	before := settledPkts(emit, top.Client.Dev)
	if err := cli.qp.PostSendUD(verbs.SendWR{ID: 41, Flags: verbs.SendSignaled, MR: cli.mr, Length: n}, cli.ah, srv.qp.Num(), udQKey); err != nil {
		return x, verbsError(emit, err)
	}
	swc, ok, err := pollFor(ctx, cli.cq, 10*time.Second)
	if err != nil {
		return x, err
	}
	if ok {
		x.send = swc.Status.String()
	}
	rwc, ok, err := pollFor(ctx, srv.cq, 5*time.Second)
	if err != nil {
		return x, err
	}
	x.pkts = settledPkts(emit, top.Client.Dev) - before
	if ok {
		x.completed, x.status, x.recv, x.byteLen = true, rwc.Status, rwc.Status.String(), rwc.ByteLen
	}
	for _, c := range buf {
		if c != udExactFill {
			x.changed++
		}
	}
	x.dataOK = string(buf) == string(cli.buf.Bytes()[:n])
	if st, err := srv.qp.State(); err == nil {
		x.state = st.String()
	}
	written := say("none of the buffer's bytes changed", "缓冲区一个字节也没有被改写")
	if x.changed > 0 {
		written = say(fmt.Sprintf("%d of the buffer's %d bytes changed", x.changed, n), fmt.Sprintf("缓冲区 %d 个字节里有 %d 个被改写", n, x.changed))
	}
	delivered := say("the data is not in the buffer", "数据不在缓冲区里")
	if x.dataOK {
		delivered = say("yet the data is in the buffer", "但数据却在缓冲区里")
	}
	spec := say(" The IB spec calls a receive too small for the message a local length error, which mlx5 reports as IBV_WC_LOC_LEN_ERR.", "IB 规范把装不下消息的接收叫作本地长度错误，mlx5 报告为 IBV_WC_LOC_LEN_ERR。")
	switch {
	case x.completed && x.status != verbs.WCSuccess:
		rxe := sandbox.Text{"en": "", "zh": ""}
		if x.status == verbs.WCLocQPOpErr {
			rxe = say(" That status is rxe's: on the lab guest's Linux 6.1 the responder copies the GRH first, then fails to fit the data and files the receive as a malformed work request (rxe_resp.c, send_data_in).",
				"这个状态是 rxe 的：在本实验室虚拟机的 Linux 6.1 上，响应方先拷入 GRH，再装不下数据，于是把这次接收当作格式错误的工作请求（rxe_resp.c 的 send_data_in）。")
		}
		note(emit, "info", say(fmt.Sprintf("The receive completed with %s: %d bytes of data plus the 40-byte GRH do not fit in %d. Byte_len %d; %s, and %s. The receiving QP is now %s.%s%s The fix is a buffer 40 bytes larger than the largest message.",
			x.recv, n, n, x.byteLen, written["en"], delivered["en"], x.state, rxe["en"], spec["en"]),
			fmt.Sprintf("接收以 %s 完成：%d 字节数据加 40 字节 GRH 装不进 %d 字节。byte_len 为 %d；%s，%s。接收方 QP 现在处于 %s。%s%s解决办法是让缓冲区比最大消息大 40 字节。",
				x.recv, n, n, x.byteLen, written["zh"], delivered["zh"], x.state, rxe["zh"], spec["zh"])))
	case x.completed:
		note(emit, "info", say(fmt.Sprintf("The receive of exactly %d bytes completed with %s (byte_len %d; %s; QP %s).", n, x.recv, x.byteLen, written["en"], x.state),
			fmt.Sprintf("恰好 %d 字节的接收以 %s 完成（byte_len %d；%s；QP 处于 %s）。", n, x.recv, x.byteLen, written["zh"], x.state)))
	default:
		note(emit, "info", say(fmt.Sprintf("No receive completion came for the buffer of exactly %d bytes (%s).", n, written["en"]),
			fmt.Sprintf("恰好 %d 字节的缓冲区没有等到接收完成（%s）。", n, written["zh"])))
	}
	return x, nil
}
