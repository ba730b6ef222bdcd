package rdmaexp

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// WriteImm is the experiment "tell the receiver a WRITE landed": a WRITE
// that also carries 32 bits of immediate data and consumes one of the
// receiver's RECVs (one completion there, with the value), against the
// usual alternative of a WRITE followed by a small SEND, and what happens
// to WRITE_WITH_IMM when no RECV is posted.
func WriteImm() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "write-imm",
		Title: say("WRITE_WITH_IMM: a WRITE the receiver hears about", "WRITE_WITH_IMM：接收方会知道的 WRITE"),
		Summary: say(
			"A plain WRITE lands silently. RDMA_WRITE_WITH_IMM writes the same bytes and also consumes one RECV at the receiver, whose completion carries a 32-bit immediate value. The run compares it with WRITE followed by a SEND, and posts one WRITE_WITH_IMM with no RECV waiting.",
			"普通 WRITE 悄无声息地落地。RDMA_WRITE_WITH_IMM 写入同样的字节，同时消耗接收方的一个 RECV，其完成里带着 32 位立即数。本实验把它与 WRITE 加一个 SEND 对比，并在接收方没有 RECV 时投递一次 WRITE_WITH_IMM。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Shareable,
		Params: []sandbox.Param{
			{Name: "messages", Kind: sandbox.ParamInt, Title: say("Messages per method", "每种方法的消息数"), Default: 20, Min: 1, Max: 200},
		},
		Presets: []sandbox.Preset{{ID: "default", Title: say("20 messages", "20 条消息"), Values: map[string]any{"messages": 20}}},
		Timeout: 2 * time.Minute,
		Run:     runWriteImm,
	}
}

const (
	immMsgSize = 64
	immBase    = 0xC0DE0000
)

// immOutcome is what the receiver saw for one method.
type immOutcome struct {
	posts, recvCompletions int
	immSeen, immRight      int // completions with IBV_WC_WITH_IMM; with the value sent
	firstImm               uint32
	firstOp                verbs.WCOpcode
	firstLen               uint32
	dataOK                 bool
}

func runImmMethod(ctx context.Context, top topology, method string, n int) (immOutcome, error) {
	var out immOutcome
	srv, err := openRC(rcOpts{Side: top.Server, BufSize: 64 << 10, Access: verbs.AccessLocalWrite | verbs.AccessRemoteWrite, SendWR: 8, RecvWR: 256})
	if err != nil {
		return out, err
	}
	defer srv.Close()
	cli, err := openRC(rcOpts{Side: top.Client, BufSize: 64 << 10, Access: verbs.AccessLocalWrite, SendWR: 256, RecvWR: 8})
	if err != nil {
		return out, err
	}
	defer cli.Close()
	if err := pairUp(srv, cli); err != nil {
		return out, err
	}
	t := srv.local()
	// The receiver posts one RECV per message; for WRITE_WITH_IMM it may
	// have no buffer (the data goes where the WRITE says), for the SEND a
	// 4-byte one for the sequence number. Buffers start at 32 KiB.
	for i := range n {
		if err := srv.qp.PostRecv(uint64(i), srv.mr, 32<<10+i*8, 8); err != nil {
			return out, err
		}
	}
	for i := range n {
		off := i * immMsgSize
		copy(cli.buf.Bytes()[off:off+immMsgSize], fmt.Sprintf("message %03d, written by rxe WRITE%-30s", i, ""))
		switch method {
		case "imm":
			out.posts++
			if err := cli.qp.PostSend(verbs.SendWR{ID: uint64(i), Op: verbs.OpWriteWithImm, Flags: verbs.SendSignaled, MR: cli.mr, Offset: off, Length: immMsgSize,
				RemoteAddr: t.Addr + uint64(off), RKey: t.RKey, Imm: immBase + uint32(i)}); err != nil {
				return out, err
			}
		case "write+send":
			out.posts += 2
			if err := cli.qp.PostSend(verbs.SendWR{ID: uint64(i), Op: verbs.OpWrite, MR: cli.mr, Offset: off, Length: immMsgSize,
				RemoteAddr: t.Addr + uint64(off), RKey: t.RKey}); err != nil {
				return out, err
			}
			putLE64(cli.buf, 48<<10+i*8, uint64(i))
			if err := cli.qp.PostSend(verbs.SendWR{ID: uint64(i), Op: verbs.OpSend, Flags: verbs.SendSignaled, MR: cli.mr, Offset: 48<<10 + i*8, Length: 4}); err != nil {
				return out, err
			}
		}
		wc, err := cli.waitCQ(ctx, cli.sendCQ, 20*time.Second)
		if err != nil {
			return out, err
		}
		if err := wc.Err(); err != nil {
			return out, err
		}
		rw, err := srv.waitCQ(ctx, srv.recvCQ, 20*time.Second)
		if err != nil {
			return out, err
		}
		if err := rw.Err(); err != nil {
			return out, err
		}
		out.recvCompletions++
		if i == 0 {
			out.firstOp, out.firstLen, out.firstImm = rw.Opcode, rw.ByteLen, rw.Imm
		}
		if rw.HasImm {
			out.immSeen++
			if rw.Imm == immBase+uint32(i) {
				out.immRight++
			}
		}
	}
	// RC delivers in order: every WRITE's bytes are in place by the time
	// the completion that follows it is polled.
	out.dataOK = bytes.Equal(srv.buf.Bytes()[:n*immMsgSize], cli.buf.Bytes()[:n*immMsgSize])
	return out, nil
}

// immNoRecv posts one WRITE_WITH_IMM to a receiver with no RECV and few
// RNR retries, and returns its completion.
func immNoRecv(ctx context.Context, top topology) (verbs.WC, error) {
	srv, cli, closePair, err := smallPair(top, verbs.AccessLocalWrite|verbs.AccessRemoteWrite, func(o *rcOpts) { o.RNRRetry = 1 })
	if err != nil {
		return verbs.WC{}, err
	}
	defer closePair()
	t := srv.local()
	return cli.sendAndWait(ctx, verbs.SendWR{ID: 1, Op: verbs.OpWriteWithImm, Flags: verbs.SendSignaled, MR: cli.mr, Length: 64, RemoteAddr: t.Addr, RKey: t.RKey, Imm: immBase})
}

func runWriteImm(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	n := int(p["messages"].(int64))
	top, err := pickTopology()
	if err != nil {
		return err
	}
	note(emit, "info", top.describe())
	figs := map[string]float64{"messages": float64(n)}
	tab := sandbox.NewTable(say(fmt.Sprintf("%d messages of %d bytes each way", n, immMsgSize), fmt.Sprintf("两种方法各 %d 条 %d 字节的消息", n, immMsgSize)),
		say("method", "方法"), say("work requests posted", "投递的工作请求"), say("receiver completions", "接收方完成数"),
		say("first receive completion", "第一个接收完成"), say("immediate values received", "收到的立即数"), say("bytes in place", "数据已到位"))
	res := map[string]immOutcome{}
	for _, m := range []struct {
		id    string
		title sandbox.Text
		label sandbox.Text
	}{
		{"imm", say("RDMA_WRITE_WITH_IMM, one per message", "每条消息一个 RDMA_WRITE_WITH_IMM"), sandbox.Same("WRITE_WITH_IMM")},
		{"write+send", say("RDMA_WRITE, then a 4-byte SEND naming it", "先 RDMA_WRITE，再发一个 4 字节的 SEND 说明它"), sandbox.Same("WRITE + SEND")},
	} {
		phase(emit, m.id, m.title)
		o, err := runImmMethod(ctx, top, m.id, n)
		if err != nil {
			return verbsError(emit, err)
		}
		res[m.id] = o
		first := fmt.Sprintf("%s, byte_len %d", o.firstOp, o.firstLen)
		if m.id == "imm" {
			first += fmt.Sprintf(", imm 0x%08x", o.firstImm)
		}
		tab.AddRow(m.label, sandbox.Same(fmt.Sprint(o.posts)), sandbox.Same(fmt.Sprint(o.recvCompletions)), sandbox.Same(first),
			sandbox.Same(fmt.Sprintf("%d/%d", o.immRight, n)), say(map[bool]string{true: "yes", false: "no"}[o.dataOK], map[bool]string{true: "是", false: "否"}[o.dataOK]))
		note(emit, "info", say(fmt.Sprintf("%s: %d work requests, %d receive completions, the first %s", m.label["en"], o.posts, o.recvCompletions, first),
			fmt.Sprintf("%s：%d 个工作请求，接收方 %d 个完成，第一个是 %s", m.label["zh"], o.posts, o.recvCompletions, first)))
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: tab})

	phase(emit, "no-recv", say("WRITE_WITH_IMM with no RECV posted", "没有投递 RECV 时的 WRITE_WITH_IMM"))
	wc, err := immNoRecv(ctx, top)
	if err != nil {
		return verbsError(emit, err)
	}
	figs["no_recv_status"] = float64(wc.Status)
	note(emit, "info", say("completion: "+wcText(wc.Status)["en"], "完成状态："+wcText(wc.Status)["zh"]))

	im, ws := res["imm"], res["write+send"]
	figs["imm_received"] = float64(im.immRight)
	figs["imm_first"] = float64(im.firstImm)
	figs["imm_opcode"] = float64(im.firstOp)
	figs["imm_byte_len"] = float64(im.firstLen)
	figs["imm_posts"], figs["ws_posts"] = float64(im.posts), float64(ws.posts)
	figs["imm_recv_completions"], figs["ws_recv_completions"] = float64(im.recvCompletions), float64(ws.recvCompletions)
	figs["data_ok"] = b2f(im.dataOK && ws.dataOK)
	ok := im.immRight == n && im.firstOp == verbs.WCRecvRDMAWithImm && im.dataOK && ws.dataOK && wc.Status != verbs.WCSuccess
	v := say(fmt.Sprintf("WRITE_WITH_IMM: %d work requests, %d receive completions of type %s, %d of %d immediate values arrived (the first 0x%08x; byte_len %d counts the bytes written), and the data was in place. WRITE + SEND needed %d work requests for the same %d receive completions. Without a RECV, WRITE_WITH_IMM ended in %s, like a SEND: it needs the receiver's RECV, a plain WRITE does not.",
		im.posts, im.recvCompletions, im.firstOp, im.immRight, n, im.firstImm, im.firstLen, ws.posts, ws.recvCompletions, wc.Status),
		fmt.Sprintf("WRITE_WITH_IMM：%d 个工作请求，接收方 %d 个类型为 %s 的完成，%d/%d 个立即数到达（第一个 0x%08x；byte_len %d 是写入的字节数），数据也已到位。WRITE + SEND 为同样的 %d 个接收完成用了 %d 个工作请求。没有 RECV 时，WRITE_WITH_IMM 以 %s 结束，和 SEND 一样：它需要接收方的 RECV，普通 WRITE 不需要。",
			im.posts, im.recvCompletions, im.firstOp, im.immRight, n, im.firstImm, im.firstLen, ws.recvCompletions, ws.posts, wc.Status))
	if !ok {
		v = say(fmt.Sprintf("Not what WRITE_WITH_IMM promises: %d of %d immediate values right, first completion %s, data in place %v, no-RECV completion %s.", im.immRight, n, im.firstOp, im.dataOK, wc.Status),
			fmt.Sprintf("与 WRITE_WITH_IMM 的约定不符：%d/%d 个立即数正确，第一个完成是 %s，数据到位：%s，无 RECV 时的完成是 %s。", im.immRight, n, im.firstOp, map[bool]string{true: "是", false: "否"}[im.dataOK], wc.Status))
	}
	result(emit, ok, v, figs)
	return nil
}
