package rdmaexp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// RKey is the experiment "what PD, MR and rkey protect": one-sided WRITEs
// that break one rule each, and the exact completion status the device
// answers with.
func RKey() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "rkey",
		Title: say("What rkeys and protection domains protect", "rkey 和保护域保护了什么"),
		Summary: say(
			"RDMA WRITEs that break one rule each — a wrong rkey, a range outside the MR, an MR without remote-write access, a local buffer from another protection domain — and the exact work-completion status the device returns, after one WRITE that follows the rules.",
			"几次各违反一条规则的 RDMA WRITE——错误的 rkey、超出 MR 范围、MR 没有远程写权限、本地缓冲区属于另一个保护域——以及设备返回的确切完成状态；先做一次守规矩的 WRITE 作对照。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Shareable,
		Params: []sandbox.Param{
			{Name: "case", Kind: sandbox.ParamEnum, Title: say("Which rule to break", "违反哪条规则"), Default: "all", Choices: []sandbox.Choice{
				{Value: "all", Title: say("all of them, one after another", "逐条全部演示")},
				{Value: "wrong-rkey", Title: say("wrong rkey", "错误的 rkey")},
				{Value: "out-of-bounds", Title: say("outside the MR", "超出 MR 范围")},
				{Value: "no-remote-write", Title: say("MR without remote write", "MR 没有远程写权限")},
				{Value: "other-pd", Title: say("QP and MR from different PDs", "QP 与 MR 属于不同 PD")},
			}},
		},
		Presets: []sandbox.Preset{{ID: "all", Title: say("all cases", "全部情形"), Values: map[string]any{"case": "all"}}},
		Timeout: 60 * time.Second,
		Run:     runRKey,
	}
}

type rkeyCase struct {
	id           string
	title        sandbox.Text
	targetAccess verbs.Access
	otherPD      bool
	mutate       func(wr *verbs.SendWR, target verbs.Endpoint)
	want         []verbs.WCStatus // the first is the IB spec's; others are what Soft-RoCE says
	why          sandbox.Text
}

const rkeyMRSize = 4096

func rkeyCases() []rkeyCase {
	rw := verbs.AccessLocalWrite | verbs.AccessRemoteWrite
	return []rkeyCase{
		{id: "correct", title: say("by the rules: right rkey, inside the MR, remote write granted", "守规矩：rkey 正确、在 MR 范围内、授予了远程写"),
			targetAccess: rw, want: []verbs.WCStatus{verbs.WCSuccess},
			why: say("The target device checked rkey, range and access and wrote the bytes — the target process did not run (on Soft-RoCE the target's kernel does this checking; on a hardware RNIC the NIC does).", "目标设备检查了 rkey、范围和权限后写入了数据——目标进程没有运行（在 Soft-RoCE 上由目标的内核做这些检查，在硬件网卡上由网卡做）。")},
		{id: "wrong-rkey", title: say("wrong rkey", "错误的 rkey"), targetAccess: rw,
			mutate: func(wr *verbs.SendWR, t verbs.Endpoint) { wr.RKey = t.RKey ^ 0x5a5a00 }, want: []verbs.WCStatus{verbs.WCRemAccessErr},
			why: say("The rkey names no MR the target registered: the target NIC refused the access (NAK), and the error came back to the sender's completion queue.", "这个 rkey 不对应目标注册过的任何 MR：目标网卡拒绝访问（NAK），错误回到了发送方的完成队列。")},
		{id: "out-of-bounds", title: say("64 bytes starting 16 bytes before the MR's end", "从 MR 末尾前 16 字节开始写 64 字节"), targetAccess: rw,
			mutate: func(wr *verbs.SendWR, t verbs.Endpoint) { wr.RemoteAddr = t.Addr + t.Len - 16; wr.Length = 64 }, want: []verbs.WCStatus{verbs.WCRemAccessErr},
			why: say("An rkey grants exactly [addr, addr+length) of the MR; one byte past it and the whole WRITE is refused.", "rkey 只授权 MR 的 [addr, addr+length)；越界一个字节，整个 WRITE 都会被拒绝。")},
		{id: "no-remote-write", title: say("the target MR was registered without REMOTE_WRITE", "目标 MR 注册时没有 REMOTE_WRITE"), targetAccess: verbs.AccessLocalWrite,
			want: []verbs.WCStatus{verbs.WCRemAccessErr},
			why:  say("The rkey is right but the MR only allows local writes: access rights are part of the registration.", "rkey 没错，但这个 MR 只允许本地写：访问权限是注册时就定下的。")},
		{id: "other-pd", title: say("local buffer registered in another PD than the QP's", "本地缓冲区注册在与 QP 不同的 PD 里"), targetAccess: rw, otherPD: true,
			want: []verbs.WCStatus{verbs.WCLocProtErr, verbs.WCLocQPOpErr},
			why: say("A QP may only use MRs of its own protection domain: the sender's own NIC refused to read the buffer. The IB spec calls this a local protection error; Soft-RoCE reports a local QP operation error — either way the request never left.",
				"QP 只能使用同一保护域中的 MR：发送方自己的网卡拒绝读取这块缓冲区。IB 规范称之为本地保护错误；Soft-RoCE 报告为本地 QP 操作错误——无论哪种，请求都没有发出。")},
	}
}

func runRKey(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	which := p["case"].(string)
	top, err := pickTopology()
	if err != nil {
		return err
	}
	note(emit, "info", top.describe())
	t := sandbox.NewTable(say("one-sided WRITEs", "单边 WRITE"), say("case", "情形"), say("expected", "预期"), say("work completion", "工作完成（WC）"), say("sender QP after", "之后发送方 QP"), say("target QP after", "之后目标 QP"))
	allOK := true
	figs := map[string]float64{}
	for _, c := range rkeyCases() {
		if c.id != "correct" && which != "all" && which != c.id {
			continue
		}
		phase(emit, c.id, c.title)
		wc, states, err := runRKeyCase(ctx, top, c)
		if err != nil {
			return verbsError(emit, err)
		}
		note(emit, "info", say(fmt.Sprintf("%s: completion %s (%s), vendor_err 0x%x", c.id, wc.Status, wc.Status.Description(), wc.VendorErr),
			fmt.Sprintf("「%s」的完成状态 %s（%s），vendor_err 0x%x", c.title["zh"], wc.Status, wcStatusZh(wc.Status), wc.VendorErr)))
		if wc.Status != verbs.WCSuccess && c.id != "correct" {
			wcExpected(emit, wc, c.why) // a wrong key, provoked: the lesson's point
		} else if wc.Status != verbs.WCSuccess {
			wcError(emit, wc, c.why)
		} else {
			note(emit, "info", c.why)
		}
		ok := slices.Contains(c.want, wc.Status)
		allOK = allOK && ok
		figs[c.id] = float64(wc.Status)
		want := make([]string, len(c.want))
		for i, w := range c.want {
			want[i] = w.String()
		}
		t.AddRow(say(c.title["en"], c.title["zh"]), say(strings.Join(want, " or "), strings.Join(want, " 或 ")), sandbox.Same(wc.Status.String()), sandbox.Same(states[0].String()), sandbox.Same(states[1].String()))
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
	v := say("The device enforced every rule on its own, without the applications: a WRITE needs the right rkey, must stay inside the registered range, needs remote-write access on the MR, and a QP may only use MRs of its own PD. Each violation ends in a completion error (remote access error, or local protection error for the PD) and moves the QP to ERROR — the target process was never asked. Here Soft-RoCE's kernel code enforces the rules; on a hardware RNIC the NIC does, with no CPU involved.",
		"每条规则都由设备自己执行，不经过应用程序：WRITE 需要正确的 rkey，必须落在注册的范围内，MR 需要远程写权限，QP 只能使用同一 PD 的 MR。每次违规都以完成错误结束（远程访问错误；PD 不符则是本地保护错误），并使 QP 进入 ERROR 状态——目标进程从未被询问。这里由 Soft-RoCE 的内核代码执行这些规则；在硬件网卡上由网卡执行，不用 CPU。")
	if !allOK {
		v = say("At least one case did not end with the status the rule predicts; see the table.", "至少有一个情形的完成状态与规则预测的不同；见表格。")
	}
	result(emit, allOK, v, figs)
	return nil
}

// runRKeyCase connects a fresh pair (a failed completion leaves the QPs in
// ERROR), posts one WRITE and returns its completion and both QPs' states.
func runRKeyCase(ctx context.Context, top topology, c rkeyCase) (verbs.WC, [2]verbs.QPState, error) {
	var states [2]verbs.QPState
	tgt, err := openRC(rcOpts{Side: top.Server, BufSize: rkeyMRSize, Access: c.targetAccess, SendWR: 4, RecvWR: 4, RNRRetry: 7})
	if err != nil {
		return verbs.WC{}, states, err
	}
	defer tgt.Close()
	src, err := openRC(rcOpts{Side: top.Client, BufSize: rkeyMRSize, Access: verbs.AccessLocalWrite, SendWR: 4, RecvWR: 4, RNRRetry: 7})
	if err != nil {
		return verbs.WC{}, states, err
	}
	defer src.Close()
	if err := tgt.connect(src.local()); err != nil {
		return verbs.WC{}, states, err
	}
	target := tgt.local()
	if err := src.connect(target); err != nil {
		return verbs.WC{}, states, err
	}
	copy(src.buf.Bytes(), "written by a one-sided RDMA WRITE")
	wr := verbs.SendWR{ID: 1, Op: verbs.OpWrite, Flags: verbs.SendSignaled, MR: src.mr, Length: 32, RemoteAddr: target.Addr, RKey: target.RKey}
	if c.otherPD {
		pd2, err := src.ctx.AllocPD()
		if err != nil {
			return verbs.WC{}, states, err
		}
		defer pd2.Close()
		b2, err := verbs.NewBuffer(rkeyMRSize)
		if err != nil {
			return verbs.WC{}, states, err
		}
		defer b2.Close()
		mr2, err := pd2.RegMR(b2, 0, rkeyMRSize, verbs.AccessLocalWrite)
		if err != nil {
			return verbs.WC{}, states, err
		}
		defer mr2.Close()
		wr.MR = mr2
	}
	if c.mutate != nil {
		c.mutate(&wr, target)
	}
	if err := src.qp.PostSend(wr); err != nil {
		return verbs.WC{}, states, err
	}
	wc, err := src.waitCQ(ctx, src.sendCQ, 20*time.Second)
	if err != nil {
		return wc, states, fmt.Errorf("rkey %s: %w", c.id, err)
	}
	if wc.Status == verbs.WCSuccess && string(tgt.buf.Bytes()[:32]) != string(src.buf.Bytes()[:32]) {
		return wc, states, fmt.Errorf("rkey %s: WRITE completed but the target holds %q", c.id, tgt.buf.Bytes()[:32])
	}
	time.Sleep(20 * time.Millisecond) // let the target side settle its own state
	states[0], _ = src.qp.State()
	states[1], _ = tgt.qp.State()
	return wc, states, nil
}
