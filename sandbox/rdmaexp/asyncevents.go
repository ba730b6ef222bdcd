package rdmaexp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// AsyncEvents is the experiment "what ibv_get_async_event reports": the
// event loop of a real program, read after four things that can go wrong
// or change — a remote access error, a receive CQ overrun, a QP moved to
// SQD, and the port's netdev going down and up — each with the events the
// device actually raised (and, where it raises none, that none came).
func AsyncEvents() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "async-events",
		Title: say("Async events: what the device tells the event loop", "异步事件：设备告诉事件循环什么"),
		Summary: say(
			"A program's event loop reads ibv_get_async_event. The run reads it after a remote access error, after a receive CQ overflows, after a QP is moved to SQD, and while a private Soft-RoCE port's netdev goes down and up, and lists exactly the events that arrived.",
			"程序的事件循环通过 ibv_get_async_event 读取异步事件。本实验在远程访问错误之后、接收 CQ 溢出之后、QP 进入 SQD 之后，以及一个专用 Soft-RoCE 端口的网卡断开又恢复时读取它，并列出实际到达的每个事件。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Shareable,
		Params: []sandbox.Param{
			{Name: "wait_ms", Kind: sandbox.ParamInt, Title: say("How long to wait for events after each trigger (ms)", "每次触发后等待事件的时间（毫秒）"), Default: 1000, Min: 200, Max: 5000},
		},
		Presets: []sandbox.Preset{{ID: "default", Title: say("wait 1 s for events", "等待事件 1 秒"), Values: map[string]any{"wait_ms": 1000}}},
		Timeout: 3 * time.Minute,
		Run:     runAsyncEvents,
	}
}

// drainEvents reads every event of ctx that arrives within wait.
func drainEvents(c *verbs.Context, wait time.Duration) ([]verbs.AsyncEvent, error) {
	var out []verbs.AsyncEvent
	deadline := time.Now().Add(wait)
	for len(out) < 64 {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		ev, ok, err := c.AsyncEvent(left)
		if err != nil {
			return out, err
		}
		if !ok {
			break
		}
		out = append(out, ev)
	}
	return out, nil
}

func eventsText(evs []verbs.AsyncEvent) sandbox.Text {
	if len(evs) == 0 {
		return say("none", "没有")
	}
	// one entry per run of equal events: a CQ overrun raises one per
	// completion that did not fit; each language with its own punctuation
	var en, zh []string
	last, lastZh, n := "", "", 0
	flush := func() {
		if n > 1 {
			last += fmt.Sprintf(" ×%d", n)
			lastZh += fmt.Sprintf(" ×%d", n)
		}
		if n > 0 {
			en, zh = append(en, last), append(zh, lastZh)
		}
	}
	for _, e := range evs {
		x, xz := e.Type.String(), e.Type.String()
		switch e.Element {
		case "qp":
			x += fmt.Sprintf(" (QP 0x%x)", e.QPNum)
			xz += fmt.Sprintf("（QP 0x%x）", e.QPNum)
		case "port":
			x += fmt.Sprintf(" (port %d)", e.Port)
			xz += fmt.Sprintf("（端口 %d）", e.Port)
		}
		if x == last {
			n++
			continue
		}
		flush()
		last, lastZh, n = x, xz, 1
	}
	flush()
	return say(strings.Join(en, ", "), strings.Join(zh, "，"))
}

func countEvents(evs []verbs.AsyncEvent, keep func(verbs.EventType) bool) int {
	n := 0
	for _, e := range evs {
		if keep(e.Type) {
			n++
		}
	}
	return n
}

// asyncRun is one run of async-events: the table and figures its four
// triggers add to, each trigger a method of its own (its QPs closed when
// it ends), as steps.go's stepper.
type asyncRun struct {
	ctx  context.Context
	emit sandbox.Emitter
	top  topology
	wait time.Duration // how long each side's events are read
	figs map[string]float64
	tab  *sandbox.Table
}

func runAsyncEvents(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	top, err := pickTopology()
	if err != nil {
		return err
	}
	note(emit, "info", top.describe())
	r := &asyncRun{ctx: ctx, emit: emit, top: top, wait: time.Duration(p["wait_ms"].(int64)) * time.Millisecond, figs: map[string]float64{},
		tab: sandbox.NewTable(say("what ibv_get_async_event returned", "ibv_get_async_event 读到了什么"), say("trigger", "触发"), say("seen by", "读取方"), say("events", "事件"), say("QP state after", "之后的 QP 状态"))}
	for _, trigger := range []func() error{r.accessError, r.cqOverrun, r.sqDrained} {
		if err := trigger(); err != nil {
			return err
		}
	}
	portErr := r.port()
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: r.tab})
	ok, v := r.verdict(portErr)
	result(emit, ok, v, r.figs)
	return nil
}

// accessError: a WRITE with a wrong rkey (a remote access error).
func (r *asyncRun) accessError() error {
	ctx, emit, top, wait, figs, tab := r.ctx, r.emit, r.top, r.wait, r.figs, r.tab
	phase(emit, "access-error", say("a WRITE with a wrong rkey (remote access error)", "用错误的 rkey 做 WRITE（远程访问错误）"))
	srv, cli, closePair, err := smallPair(top, verbs.AccessLocalWrite|verbs.AccessRemoteWrite, nil)
	if err != nil {
		return verbsError(emit, err)
	}
	defer closePair()
	t := srv.local()
	wc, err := cli.sendAndWait(ctx, verbs.SendWR{ID: 1, Op: verbs.OpWrite, Flags: verbs.SendSignaled, MR: cli.mr, Length: 64, RemoteAddr: t.Addr, RKey: t.RKey ^ 0x5a5a00})
	if err != nil {
		return verbsError(emit, err)
	}
	figs["access_wc"] = float64(wc.Status)
	note(emit, "info", say("the WRITE's completion: "+wcText(wc.Status)["en"], "这个 WRITE 的完成："+wcText(wc.Status)["zh"]))
	sevs, err := drainEvents(srv.ctx, wait)
	if err != nil {
		return verbsError(emit, err)
	}
	cevs, err := drainEvents(cli.ctx, wait)
	if err != nil {
		return verbsError(emit, err)
	}
	ss, _ := srv.qp.State()
	cs, _ := cli.qp.State()
	figs["access_qp_error_events"] = float64(countEvents(sevs, verbs.EventType.QPError) + countEvents(cevs, verbs.EventType.QPError))
	figs["access_events"] = float64(len(sevs) + len(cevs))
	figs["access_server_state"], figs["access_client_state"] = float64(ss), float64(cs)
	trig := say("WRITE, wrong rkey", "WRITE，错误的 rkey")
	tab.AddRow(trig, say(top.Server.Dev+" (responder)", top.Server.Dev+"（响应方）"), eventsText(sevs), sandbox.Same(ss.String()))
	tab.AddRow(trig, say(top.Client.Dev+" (requester)", top.Client.Dev+"（请求方）"), eventsText(cevs), sandbox.Same(cs.String()))
	return nil
}

// cqOverrun: a receive CQ too small for the messages that arrive.
func (r *asyncRun) cqOverrun() error {
	emit, top, wait, figs, tab := r.emit, r.top, r.wait, r.figs, r.tab
	phase(emit, "cq-overrun", say("more SENDs than the receiver's CQ can hold, nobody polling", "SEND 的数量超过接收方 CQ 的容量，且无人轮询"))
	srv, err := openRC(rcOpts{Side: top.Server, BufSize: 4096, Access: verbs.AccessLocalWrite, SendWR: 4, RecvWR: 64})
	if err != nil {
		return verbsError(emit, err)
	}
	defer srv.Close()
	tiny, err := srv.ctx.NewCQ(1, nil)
	if err != nil {
		return verbsError(emit, err)
	}
	cli, err := openRC(rcOpts{Side: top.Client, BufSize: 4096, Access: verbs.AccessLocalWrite, SendWR: 64, RecvWR: 4,
		Tune: func(a *verbs.QPAttr) { a.RetryCnt, a.Timeout = 1, 8 }})
	if err != nil {
		tiny.Close()
		return verbsError(emit, err)
	}
	defer cli.Close()
	q, err := newExtraQPOn(srv, cli.local(), tiny, nil)
	if err != nil {
		tiny.Close()
		return verbsError(emit, err)
	}
	cleanup := func() { q.qp.Close(); tiny.Close() }
	if err := cli.connect(q.local()); err != nil {
		cleanup()
		return verbsError(emit, err)
	}
	const sends = 16
	for i := range sends {
		if err := q.qp.PostRecv(uint64(i), srv.mr, i*64, 64); err != nil {
			cleanup()
			return verbsError(emit, err)
		}
	}
	for i := range sends {
		if err := cli.qp.PostSend(verbs.SendWR{ID: uint64(i), Op: verbs.OpSend, Flags: verbs.SendSignaled, MR: cli.mr, Length: 32}); err != nil {
			cleanup()
			return verbsError(emit, err)
		}
	}
	sevs, err := drainEvents(srv.ctx, wait)
	if err != nil {
		cleanup()
		return verbsError(emit, err)
	}
	ss, _ := q.qp.State()
	figs["cq_err"] = float64(countEvents(sevs, func(e verbs.EventType) bool { return e == verbs.EventCQErr }))
	figs["cq_qp_error_events"] = float64(countEvents(sevs, verbs.EventType.QPError))
	figs["cq_server_state"] = float64(ss)
	tab.AddRow(say(fmt.Sprintf("%d SENDs into a 1-entry receive CQ", sends), fmt.Sprintf("%d 个 SEND 进入只有 1 项的接收 CQ", sends)),
		say(top.Server.Dev+" (receiver)", top.Server.Dev+"（接收方）"), eventsText(sevs), sandbox.Same(ss.String()))
	cleanup()
	return nil
}

// sqDrained: a QP moved from RTS to SQD (send queue drain).
func (r *asyncRun) sqDrained() error {
	emit, top, wait, figs, tab := r.emit, r.top, r.wait, r.figs, r.tab
	phase(emit, "sq-drained", say("a QP moved from RTS to SQD", "把 QP 从 RTS 改到 SQD"))
	_, cli, closePair, err := smallPair(top, verbs.AccessLocalWrite|verbs.AccessRemoteWrite, nil)
	if err != nil {
		return verbsError(emit, err)
	}
	defer closePair()
	modErr := cli.qp.Modify(verbs.StateSQD, verbs.QPAttr{})
	var cevs []verbs.AsyncEvent
	if modErr == nil {
		if cevs, err = drainEvents(cli.ctx, wait); err != nil {
			return verbsError(emit, err)
		}
	}
	cs, _ := cli.qp.State()
	figs["sq_drained"] = float64(countEvents(cevs, func(e verbs.EventType) bool { return e == verbs.EventSQDrained }))
	got := eventsText(cevs)
	if modErr != nil {
		got = errnoText(modErr)
	}
	tab.AddRow(say("ibv_modify_qp(RTS → SQD)", "ibv_modify_qp（RTS → SQD）"), say(top.Client.Dev+" (requester)", top.Client.Dev+"（请求方）"), got, sandbox.Same(cs.String()))
	return nil
}

// port: a private Soft-RoCE device whose netdev goes down, then up;
// the error says why this part could not run (the rest still stands).
func (r *asyncRun) port() error {
	emit, wait, figs, tab := r.emit, r.wait, r.figs, r.tab
	phase(emit, "port", say("a private Soft-RoCE device: its netdev down, then up", "一个专用 Soft-RoCE 设备：网卡先断开再恢复"))
	portEvs, portErr := portFlap(wait)
	if portErr != nil {
		note(emit, "warn", say("the port part could not run: "+portErr.Error(), "端口部分无法运行："+portErr.Error()))
		tab.AddRow(say("netdev down, then up", "网卡断开后恢复"), sandbox.Same("—"), say("not run: "+portErr.Error(), "未运行："+portErr.Error()), sandbox.Same("—"))
	} else {
		figs["port_err"] = float64(countEvents(portEvs, func(e verbs.EventType) bool { return e == verbs.EventPortErr }))
		figs["port_active"] = float64(countEvents(portEvs, func(e verbs.EventType) bool { return e == verbs.EventPortActive }))
		tab.AddRow(say("netdev down, then up", "网卡断开后恢复"), say("private rxe device", "专用 rxe 设备"), eventsText(portEvs), sandbox.Same("—"))
	}
	return portErr
}

// verdict is what the four triggers raised, from the table's figures.
func (r *asyncRun) verdict(portErr error) (bool, sandbox.Text) {
	figs := r.figs
	qpErr := int(figs["access_qp_error_events"] + figs["cq_qp_error_events"])
	figs["qp_error_events"] = float64(qpErr)
	var access sandbox.Text
	if qpErr == 0 {
		left := qpStatesLeft(verbs.QPState(figs["access_server_state"]), verbs.QPState(figs["access_client_state"]))
		access = say(fmt.Sprintf("The remote access error left %s, yet no QP event arrived on either side (Soft-RoCE on Linux %s raises none: the failed completion is its only report; the IB spec has the responder report an affiliated error, IBV_EVENT_QP_ACCESS_ERR, as mlx5 does).", left["en"], kernelRelease()),
			fmt.Sprintf("远程访问错误使%s，但两端都没有收到任何 QP 事件（Linux %s 上的 Soft-RoCE 不报告：失败的完成是它唯一的报告；IB 规范要求响应方报告一个关联错误 IBV_EVENT_QP_ACCESS_ERR，mlx5 就是这样做的）。", left["zh"], kernelRelease()))
	} else {
		access = say(fmt.Sprintf("The remote access error raised %d QP error events (QP_FATAL, QP_REQ_ERR or QP_ACCESS_ERR).", qpErr),
			fmt.Sprintf("远程访问错误引发了 %d 个 QP 错误事件（QP_FATAL、QP_REQ_ERR 或 QP_ACCESS_ERR）。", qpErr))
	}
	rest := say(fmt.Sprintf(" The receive CQ overrun raised %d IBV_EVENT_CQ_ERR, the move to SQD %d IBV_EVENT_SQ_DRAINED", int(figs["cq_err"]), int(figs["sq_drained"])),
		fmt.Sprintf("接收 CQ 溢出引发了 %d 个 IBV_EVENT_CQ_ERR，改到 SQD 引发了 %d 个 IBV_EVENT_SQ_DRAINED", int(figs["cq_err"]), int(figs["sq_drained"])))
	if portErr == nil {
		rest["en"] += fmt.Sprintf(", and the netdev going down and up %d IBV_EVENT_PORT_ERR and %d IBV_EVENT_PORT_ACTIVE.", int(figs["port_err"]), int(figs["port_active"]))
		rest["zh"] += fmt.Sprintf("，网卡断开再恢复引发了 %d 个 IBV_EVENT_PORT_ERR 和 %d 个 IBV_EVENT_PORT_ACTIVE。", int(figs["port_err"]), int(figs["port_active"]))
	} else {
		rest["en"] += "; the port part did not run."
		rest["zh"] += "；端口部分没有运行。"
	}
	ok := figs["cq_err"] >= 1 && figs["sq_drained"] >= 1
	return ok, say(access["en"]+rest["en"], access["zh"]+rest["zh"])
}

// portFlap creates a veth pair and a Soft-RoCE device on one end (names
// unique to this run, so nothing else in the guest is touched), opens it,
// takes the netdev down and up, and returns the async events read.
func portFlap(wait time.Duration) ([]verbs.AsyncEvent, error) {
	suf := fmt.Sprintf("%04x", rand.Uint32()&0xffff)
	a, b, dev := "lab7a"+suf, "lab7b"+suf, "rxe7"+suf
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: a}, PeerName: b}
	if err := netlink.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("create veth %s: %w", a, err)
	}
	defer netlink.LinkDel(veth)
	la, err := netlink.LinkByName(a)
	if err != nil {
		return nil, err
	}
	lb, err := netlink.LinkByName(b)
	if err != nil {
		return nil, err
	}
	for _, l := range []netlink.Link{la, lb} {
		if err := netlink.LinkSetUp(l); err != nil {
			return nil, fmt.Errorf("set %s up: %w", l.Attrs().Name, err)
		}
	}
	if err := netlink.RdmaLinkAdd(dev, "rxe", a); err != nil {
		return nil, fmt.Errorf("rdma link add %s type rxe netdev %s: %w", dev, a, err)
	}
	defer netlink.RdmaLinkDel(dev)
	var c *verbs.Context
	for i := 0; ; i++ { // the uverbs node appears moments after the link
		if c, err = verbs.Open(dev); err == nil {
			break
		}
		if i == 50 {
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer c.Close()
	drainEvents(c, 100*time.Millisecond) // whatever the set-up raised
	if err := netlink.LinkSetDown(la); err != nil {
		return nil, fmt.Errorf("set %s down: %w", a, err)
	}
	evs, err := drainEvents(c, wait)
	if err != nil {
		return evs, err
	}
	if err := netlink.LinkSetUp(la); err != nil {
		return evs, fmt.Errorf("set %s up: %w", a, err)
	}
	more, err := drainEvents(c, wait)
	return append(evs, more...), err
}

// qpStatesLeft says where an error left the two QPs: one state once when
// both are in it ("both QPs in ERROR", not "in ERROR and ERROR"), else
// each side's.
func qpStatesLeft(server, client verbs.QPState) sandbox.Text {
	if server == client {
		return say(fmt.Sprintf("both QPs in %s", server), fmt.Sprintf("两端 QP 都处于 %s", server))
	}
	return say(fmt.Sprintf("the server's QP in %s and the client's in %s", server, client),
		fmt.Sprintf("服务端 QP 处于 %s、客户端 QP 处于 %s", server, client))
}
