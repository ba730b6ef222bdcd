package rdmaexp

import (
	"context"
	"fmt"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// MemWindow is the experiment "revoke remote access without deregistering":
// a type-2 memory window bound to part of an MR, WRITEs through its rkey
// inside and outside the window, and the window invalidated locally
// (LOCAL_INV) and by the peer (SEND_WITH_INV), after which the old rkey
// fails.
func MemWindow() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "mem-window",
		Title: say("Memory windows: hand out an rkey, then take it back", "内存窗口：发出一个 rkey，再把它收回"),
		Summary: say(
			"The server binds a type-2 memory window to 1 KiB in the middle of a 4 KiB MR and hands its rkey to the client. WRITEs inside the window work, outside it fail; after the server invalidates the window (LOCAL_INV), or the client asks it to with SEND_WITH_INV, the old rkey fails — while the MR stays registered.",
			"服务端把一个类型 2 内存窗口绑定到 4 KiB MR 中间的 1 KiB 上，把它的 rkey 交给客户端。窗口内的 WRITE 成功，窗口外的失败；服务端使窗口失效（LOCAL_INV）后，或客户端用 SEND_WITH_INV 请它失效后，旧 rkey 就会失败——而 MR 一直保持注册。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Shareable,
		Params: []sandbox.Param{
			{Name: "case", Kind: sandbox.ParamEnum, Title: say("Which case", "哪个情形"), Default: "all", Choices: []sandbox.Choice{
				{Value: "all", Title: say("all of them, one after another", "逐个全部演示")},
				{Value: "outside", Title: say("outside the window", "窗口之外")},
				{Value: "local-inv", Title: say("invalidated by the server", "由服务端使其失效")},
				{Value: "remote-inv", Title: say("invalidated by the client's SEND_WITH_INV", "由客户端的 SEND_WITH_INV 使其失效")},
			}},
		},
		Presets: []sandbox.Preset{{ID: "all", Title: say("all cases", "全部情形"), Values: map[string]any{"case": "all"}}},
		Timeout: 2 * time.Minute,
		Run:     runMemWindow,
	}
}

const (
	mwMRSize = 4096
	mwOff    = 1024 // the window: [mwOff, mwOff+mwLen) of the MR
	mwLen    = 1024
)

// mwRig is a connected pair whose server has a bound type-2 window.
type mwRig struct {
	srv, cli *rc
	mw       *verbs.MW
	mrTgt    verbs.Endpoint // the MR's own address and rkey
	rkey     uint32         // the window's rkey
	bindWC   verbs.WC
}

func (g *mwRig) Close() {
	g.mw.Close() // a bound type-2 window holds a reference to its QP: free it first
	g.cli.Close()
	g.srv.Close()
}

func newMWRig(ctx context.Context, top topology) (g *mwRig, err error) {
	g = &mwRig{}
	defer func() {
		if err != nil {
			g.Close()
		}
	}()
	rw := verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead
	if g.srv, err = openRC(rcOpts{Side: top.Server, BufSize: mwMRSize, Access: rw | verbs.AccessMWBind, SendWR: 8, RecvWR: 8}); err != nil {
		return nil, err
	}
	if g.cli, err = openRC(rcOpts{Side: top.Client, BufSize: mwMRSize, Access: verbs.AccessLocalWrite, SendWR: 8, RecvWR: 8}); err != nil {
		return nil, err
	}
	if err = pairUp(g.srv, g.cli); err != nil {
		return nil, err
	}
	g.mrTgt = g.srv.local()
	if g.mw, err = g.srv.pd.AllocMW(verbs.MWType2); err != nil {
		return nil, err
	}
	rkey := g.mw.NextRKey()
	if err = g.srv.qp.PostBind(1, g.mw, rkey, g.srv.mr, g.srv.mr.Addr()+mwOff, mwLen, verbs.AccessRemoteWrite|verbs.AccessRemoteRead); err != nil {
		return nil, err
	}
	if g.bindWC, err = g.srv.waitCQ(ctx, g.srv.sendCQ, 20*time.Second); err != nil {
		return nil, err
	}
	if err = g.bindWC.Err(); err != nil {
		return nil, err
	}
	g.mw.Bound(rkey)
	g.rkey = rkey
	return g, nil
}

// write does one 64-byte WRITE from the client at MR offset off with rkey.
func (g *mwRig) write(ctx context.Context, off int, rkey uint32, text string) (verbs.WC, error) {
	copy(g.cli.buf.Bytes(), fmt.Sprintf("%-64s", text))
	return g.cli.sendAndWait(ctx, verbs.SendWR{ID: 7, Op: verbs.OpWrite, Flags: verbs.SendSignaled, MR: g.cli.mr, Length: 64,
		RemoteAddr: g.mrTgt.Addr + uint64(off), RKey: rkey})
}

// mwStep is one row of the run's table.
type mwStep struct {
	what sandbox.Text
	st   verbs.WCStatus
	rkey uint32
}

func runMemWindow(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	which := p["case"].(string)
	top, err := pickTopology()
	if err != nil {
		return err
	}
	note(emit, "info", top.describe())
	figs := map[string]float64{}
	tab := sandbox.NewTable(say("one MR, one window", "一个 MR，一个窗口"), say("case", "情形"), say("step", "步骤"), sandbox.Same("rkey"), say("work completion", "工作完成（WC）"))
	add := func(cs sandbox.Text, s mwStep) {
		tab.AddRow(cs, s.what, sandbox.Same(fmt.Sprintf("0x%08x", s.rkey)), sandbox.Same(s.st.String()))
	}
	for _, c := range []struct {
		id    string
		title sandbox.Text
	}{
		{"inside", say("bind, then WRITE inside the window", "绑定，然后在窗口内 WRITE")},
		{"outside", say("WRITE outside the window with its rkey", "用窗口的 rkey 在窗口外 WRITE")},
		{"local-inv", say("the server invalidates the window (LOCAL_INV)", "服务端使窗口失效（LOCAL_INV）")},
		{"remote-inv", say("the client invalidates it (SEND_WITH_INV)", "客户端使它失效（SEND_WITH_INV）")},
	} {
		if c.id != "inside" && which != "all" && which != c.id {
			continue
		}
		phase(emit, c.id, c.title)
		g, err := newMWRig(ctx, top)
		if err != nil {
			return verbsError(emit, err)
		}
		steps, err := runMWCase(ctx, g, c.id, figs)
		g.Close()
		if err != nil {
			return verbsError(emit, err)
		}
		for _, s := range steps {
			add(c.title, s)
			note(emit, "info", say(fmt.Sprintf("%s: rkey 0x%08x → %s", s.what["en"], s.rkey, s.st), fmt.Sprintf("%s：rkey 0x%08x → %s", s.what["zh"], s.rkey, s.st)))
		}
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: tab})

	ok := true
	for k, w := range map[string]verbs.WCStatus{"inside_status": verbs.WCSuccess, "mr_rkey_status": verbs.WCSuccess,
		"local_inv_before": verbs.WCSuccess, "local_inv_status": verbs.WCRemAccessErr,
		"remote_inv_before": verbs.WCSuccess, "remote_inv_status": verbs.WCRemAccessErr} {
		if got, ran := figs[k]; ran && verbs.WCStatus(got) != w {
			ok = false
		}
	}
	rel := kernelRelease()
	v := say("", "")
	if ok {
		v = say(fmt.Sprintf("Inside its %d bytes the window's rkey worked, and the MR's own rkey reached the whole MR. ", mwLen),
			fmt.Sprintf("在窗口的 %d 字节之内，窗口的 rkey 可以访问；MR 自己的 rkey 能访问整个 MR。", mwLen))
		if _, ran := figs["local_inv_status"]; ran {
			v["en"] += fmt.Sprintf("After the server's LOCAL_INV the old rkey ended in %s. ", verbs.WCRemAccessErr)
			v["zh"] += fmt.Sprintf("服务端做了 LOCAL_INV 之后，旧 rkey 以 %s 结束。", verbs.WCRemAccessErr)
		}
		if _, ran := figs["remote_inv_status"]; ran {
			v["en"] += fmt.Sprintf("After the client's SEND_WITH_INV it ended in %s too, and the server's RECV completion named the invalidated rkey. ", verbs.WCRemAccessErr)
			v["zh"] += fmt.Sprintf("客户端发出 SEND_WITH_INV 之后，它同样以 %s 结束，服务端的 RECV 完成里写着被失效的 rkey。", verbs.WCRemAccessErr)
			if figs["remote_inv_rkey_match"] == 1 && figs["remote_inv_with_inv"] == 0 {
				fl := int(figs["remote_inv_flags"])
				v["en"] += fmt.Sprintf("But its wc_flags were 0x%x, without IBV_WC_WITH_INV (0x8): rxe on Linux %s sets bit 0x4, the kernel's IB_WC_WITH_INVALIDATE, which libibverbs reads as IBV_WC_IP_CSUM_OK; on mlx5 the flag is IBV_WC_WITH_INV as documented. ", fl, rel)
				v["zh"] += fmt.Sprintf("但它的 wc_flags 是 0x%x，没有 IBV_WC_WITH_INV（0x8）：Linux %s 上的 rxe 置的是 0x4 位，即内核的 IB_WC_WITH_INVALIDATE，而 libibverbs 把这一位读作 IBV_WC_IP_CSUM_OK；在 mlx5 上，这个标志按文档是 IBV_WC_WITH_INV。", fl, rel)
			}
		}
		v["en"] += "Access was revoked while the MR stayed registered. "
		v["zh"] += "访问被收回，而 MR 一直保持注册。"
	} else {
		v = say("At least one step did not end as the memory-window rules predict; see the table. ", "至少有一步的结果与内存窗口的规则不符；见表格。")
	}
	if st, ran := figs["outside_status"]; ran {
		if verbs.WCStatus(st) == verbs.WCRemAccessErr {
			v["en"] += fmt.Sprintf("A WRITE outside the window with its rkey ended in %s, as the IB spec requires.", verbs.WCRemAccessErr)
			v["zh"] += fmt.Sprintf("用窗口的 rkey 在窗口外 WRITE 以 %s 结束，符合 IB 规范的要求。", verbs.WCRemAccessErr)
		} else if figs["outside_landed"] == 1 {
			v["en"] += fmt.Sprintf("A WRITE outside the window with the window's rkey ended in %s and its bytes landed at MR byte 0: rxe on Linux %s checks the window's rkey but then the range against the whole MR (check_rkey in rxe_resp.c), not against the window. The IB spec and a hardware RNIC such as mlx5 refuse it with a remote access error; do not learn the window's bounds from this device.", verbs.WCStatus(st), rel)
			v["zh"] += fmt.Sprintf("用窗口的 rkey 在窗口外 WRITE 以 %s 结束，数据写进了 MR 第 0 字节：Linux %s 上的 rxe 检查了窗口的 rkey，随后却按整个 MR 检查范围（rxe_resp.c 中的 check_rkey），而不是按窗口。IB 规范和 mlx5 这样的硬件网卡会以远程访问错误拒绝它；窗口的边界不要从这台设备上学。", verbs.WCStatus(st), rel)
		} else {
			v["en"] += fmt.Sprintf("A WRITE outside the window ended in %s.", verbs.WCStatus(st))
			v["zh"] += fmt.Sprintf("窗口外的 WRITE 以 %s 结束。", verbs.WCStatus(st))
		}
	}
	result(emit, ok, v, figs)
	return nil
}

func runMWCase(ctx context.Context, g *mwRig, id string, figs map[string]float64) ([]mwStep, error) {
	var steps []mwStep
	step := func(en, zh string, st verbs.WCStatus, rkey uint32) {
		steps = append(steps, mwStep{what: say(en, zh), st: st, rkey: rkey})
	}
	step(fmt.Sprintf("BIND_MW: window over MR bytes [%d, %d)", mwOff, mwOff+mwLen), fmt.Sprintf("BIND_MW：窗口覆盖 MR 的 [%d, %d) 字节", mwOff, mwOff+mwLen), g.bindWC.Status, g.rkey)
	inside := func(figKey string) error {
		wc, err := g.write(ctx, mwOff+64, g.rkey, "through the window")
		if err != nil {
			return err
		}
		figs[figKey] = float64(wc.Status)
		step("WRITE inside the window", "在窗口内 WRITE", wc.Status, g.rkey)
		return nil
	}
	oldKey := func(figKey string) error {
		wc, err := g.write(ctx, mwOff+64, g.rkey, "with the revoked rkey")
		if err != nil {
			return err
		}
		figs[figKey] = float64(wc.Status)
		step("WRITE inside the window with the old rkey", "用旧 rkey 在窗口内 WRITE", wc.Status, g.rkey)
		return nil
	}
	switch id {
	case "inside":
		if err := inside("inside_status"); err != nil {
			return steps, err
		}
		wc, err := g.write(ctx, 0, g.mrTgt.RKey, "through the MR's rkey")
		if err != nil {
			return steps, err
		}
		figs["mr_rkey_status"] = float64(wc.Status)
		step("WRITE at MR byte 0 with the MR's own rkey", "用 MR 自己的 rkey 在 MR 第 0 字节处 WRITE", wc.Status, g.mrTgt.RKey)
	case "outside":
		wc, err := g.write(ctx, 0, g.rkey, "outside the window")
		if err != nil {
			return steps, err
		}
		figs["outside_status"] = float64(wc.Status)
		landed := wc.Status == verbs.WCSuccess && string(g.srv.buf.Bytes()[:18]) == "outside the window"
		figs["outside_landed"] = b2f(landed)
		step("WRITE at MR byte 0, outside the window, with the window's rkey", "用窗口的 rkey 在 MR 第 0 字节处（窗口外）WRITE", wc.Status, g.rkey)
		if landed {
			step("server: the bytes are at MR byte 0", "服务端：这些字节出现在 MR 第 0 字节处", wc.Status, g.rkey)
		}
	case "local-inv":
		if err := inside("local_inv_before"); err != nil {
			return steps, err
		}
		if err := g.srv.qp.PostLocalInv(2, g.rkey); err != nil {
			return steps, err
		}
		wc, err := g.srv.waitCQ(ctx, g.srv.sendCQ, 20*time.Second)
		if err != nil {
			return steps, err
		}
		figs["local_inv_wc"] = float64(wc.Status)
		step("server: LOCAL_INV of the window's rkey", "服务端：对窗口的 rkey 做 LOCAL_INV", wc.Status, g.rkey)
		if err := oldKey("local_inv_status"); err != nil {
			return steps, err
		}
	case "remote-inv":
		if err := inside("remote_inv_before"); err != nil {
			return steps, err
		}
		if err := g.srv.qp.PostRecv(3, g.srv.mr, 3072, 64); err != nil {
			return steps, err
		}
		copy(g.cli.buf.Bytes()[512:], "done with your window")
		if err := g.cli.qp.PostSendInv(4, g.cli.mr, 512, 32, g.rkey); err != nil {
			return steps, err
		}
		wc, err := g.cli.waitCQ(ctx, g.cli.sendCQ, 20*time.Second)
		if err != nil {
			return steps, err
		}
		step("client: SEND_WITH_INV naming the window's rkey", "客户端：发送 SEND_WITH_INV，指明窗口的 rkey", wc.Status, g.rkey)
		// the server's receive completion says which rkey was invalidated
		var rc verbs.InvCompletion
		for i := 0; ; i++ {
			got, ok, err := g.srv.recvCQ.PollInv()
			if err != nil {
				return steps, err
			}
			if ok {
				rc = got
				break
			}
			if i > 2000 {
				return steps, fmt.Errorf("the server's RECV never completed after SEND_WITH_INV: %w", errCompletionTimeout)
			}
			time.Sleep(time.Millisecond)
		}
		figs["remote_inv_with_inv"] = b2f(rc.WithInv())
		figs["remote_inv_flags"] = float64(rc.Flags)
		figs["remote_inv_rkey_match"] = b2f(rc.InvRKey == g.rkey)
		inv := fmt.Sprintf("wc_flags 0x%x, invalidated_rkey 0x%08x", rc.Flags, rc.InvRKey)
		step("server: RECV completion, "+inv, "服务端：RECV 完成，"+inv, rc.Status, g.rkey)
		if err := oldKey("remote_inv_status"); err != nil {
			return steps, err
		}
	}
	return steps, nil
}
