package rdmaexp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// SRQ is the experiment "many QPs, one receive pool": several client QPs
// SEND to server QPs that share one receive queue; the SRQ limit event
// fires when the pool runs low, RNR NAKs come when it runs dry, and a
// refill lets the waiting SEND through.
func SRQ() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "srq",
		Title: say("Shared receive queue: one pool, many QPs", "共享接收队列：一个池，多个 QP"),
		Summary: say(
			"Server QPs share one receive queue (SRQ) armed with a limit. Client QPs send to them in turn: the pool drains whichever QP the message came through, IBV_EVENT_SRQ_LIMIT_REACHED arrives when fewer receives than the limit remain, and a SEND to the empty pool is answered with RNR NAKs until the server posts more receives.",
			"服务端的多个 QP 共享一个设置了下限的接收队列（SRQ）。客户端 QP 轮流发送：无论消息经哪个 QP 到达，消耗的都是同一个池；剩余接收少于下限时到达 IBV_EVENT_SRQ_LIMIT_REACHED；池空时的 SEND 会收到 RNR NAK，直到服务端补充接收缓冲。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Shareable,
		Params: []sandbox.Param{
			{Name: "qps", Kind: sandbox.ParamInt, Title: say("QPs sharing the pool", "共享这个池的 QP 数"), Default: 4, Min: 2, Max: 8},
			{Name: "pool", Kind: sandbox.ParamInt, Title: say("Receives in the pool", "池中的接收缓冲数"), Default: 8, Min: 4, Max: 32},
			{Name: "limit", Kind: sandbox.ParamInt, Title: say("SRQ limit (event below it)", "SRQ 下限（低于它时报事件）"), Default: 3, Min: 1, Max: 16},
		},
		Presets: []sandbox.Preset{{ID: "default", Title: say("4 QPs, 8 receives, limit 3", "4 个 QP，8 个接收缓冲，下限 3"), Values: map[string]any{"qps": 4, "pool": 8, "limit": 3}}},
		Timeout: 2 * time.Minute,
		Run:     runSRQ,
	}
}

const srqMsg = 64

// srqRun is one run of srq: what its phases share, so that each phase
// (setup, drain, dry, the verdict) is a method of its own, as steps.go's
// stepper.
type srqRun struct {
	ctx              context.Context
	emit             sandbox.Emitter
	top              topology
	nqp, pool, limit int
	figs             map[string]float64

	srv  *rc
	srq  *verbs.SRQ
	clis []*rc
	sqps []*extraQP

	eventAt int      // receives left when SRQ_LIMIT_REACHED came; -1: never
	after   int      // the limit read after the drain
	nEarly  int      // completions of the SEND into the empty pool before the refill
	rnr     int64    // RNR NAKs the client's device counted meanwhile
	late    verbs.WC // that SEND's completion after the refill
}

func runSRQ(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	nqp, pool, limit := int(p["qps"].(int64)), int(p["pool"].(int64)), int(p["limit"].(int64))
	if limit >= pool {
		return fmt.Errorf("the limit (%d) must be below the pool size (%d)", limit, pool)
	}
	top, err := pickTopology()
	if err != nil {
		return err
	}
	note(emit, "info", top.describe())
	r := &srqRun{ctx: ctx, emit: emit, top: top, nqp: nqp, pool: pool, limit: limit, eventAt: -1,
		figs: map[string]float64{"qps": float64(nqp), "pool": float64(pool), "limit": float64(limit)}}
	defer r.close()
	if err := r.setup(); err != nil {
		return err
	}
	if err := r.drain(); err != nil {
		return err
	}
	if err := r.dry(); err != nil {
		return err
	}
	ok, v := r.verdict()
	result(emit, ok, v, r.figs)
	return nil
}

// close frees what setup made, however far it got: the server's QPs,
// the SRQ, the clients, then the server.
func (r *srqRun) close() {
	for _, q := range r.sqps {
		q.qp.Close()
	}
	if r.srq != nil {
		r.srq.Close()
	}
	for _, c := range r.clis {
		c.Close()
	}
	if r.srv != nil {
		r.srv.Close()
	}
}

// setup connects nqp client QPs to nqp server QPs that share one SRQ of
// pool receives, armed at limit.
func (r *srqRun) setup() error {
	emit, top, nqp, pool, limit := r.emit, r.top, r.nqp, r.pool, r.limit
	phase(emit, "setup", say(fmt.Sprintf("%d server QPs on one SRQ of %d receives, limit %d", nqp, pool, limit), fmt.Sprintf("%d 个服务端 QP 共用一个有 %d 个接收缓冲、下限为 %d 的 SRQ", nqp, pool, limit)))
	srv, err := openRC(rcOpts{Side: top.Server, BufSize: 64 << 10, Access: verbs.AccessLocalWrite, SendWR: 4, RecvWR: 64})
	if err != nil {
		return verbsError(emit, err)
	}
	r.srv = srv
	srq, err := srv.pd.NewSRQ(pool + 8)
	if err != nil {
		return verbsError(emit, err)
	}
	r.srq = srq
	for range nqp {
		c, err := openRC(rcOpts{Side: top.Client, BufSize: 4096, Access: verbs.AccessLocalWrite, SendWR: 8, RecvWR: 4})
		if err != nil {
			return verbsError(emit, err)
		}
		r.clis = append(r.clis, c)
		q, err := newExtraQPOn(srv, c.local(), srv.recvCQ, srq)
		if err != nil {
			return verbsError(emit, err)
		}
		r.sqps = append(r.sqps, q)
		if err := c.connect(q.local()); err != nil {
			return verbsError(emit, err)
		}
	}
	for i := range pool {
		if err := srq.PostRecv(uint64(i), srv.mr, i*srqMsg, srqMsg); err != nil {
			return verbsError(emit, err)
		}
	}
	if err := srq.Arm(limit); err != nil {
		return verbsError(emit, err)
	}
	_, armed, err := srq.Query()
	if err != nil {
		return verbsError(emit, err)
	}
	note(emit, "info", say(fmt.Sprintf("ibv_modify_srq(IBV_SRQ_LIMIT = %d); ibv_query_srq now reads srq_limit %d", limit, armed),
		fmt.Sprintf("ibv_modify_srq(IBV_SRQ_LIMIT = %d)；此时 ibv_query_srq 读到 srq_limit %d", limit, armed)))

	return nil
}

// drain sends pool messages from the clients in turn without refilling,
// and watches for SRQ_LIMIT_REACHED.
func (r *srqRun) drain() error {
	ctx, emit, nqp, pool, srv, srq, clis, sqps := r.ctx, r.emit, r.nqp, r.pool, r.srv, r.srq, r.clis, r.sqps
	phase(emit, "drain", say("clients send in turn; the server does not refill", "客户端轮流发送；服务端不补充"))
	tab := sandbox.NewTable(say("one pool, many QPs", "一个池，多个 QP"), say("message", "消息"), say("sent by", "发送方"),
		say("arrived on server QP", "到达的服务端 QP"), say("receives left", "剩余接收缓冲"), say("async event", "异步事件"))
	eventAt := r.eventAt
	byQPN := map[uint32]int{}
	for i, q := range sqps {
		byQPN[q.qp.Num()] = i
	}
	// Messages are numbered from 1 everywhere — table, log, chart — as
	// the lesson's quiz counts them ("after the 6th message").
	for i := range pool {
		c := clis[i%nqp]
		copy(c.buf.Bytes(), fmt.Sprintf("message %d via client QP %d", i+1, i%nqp))
		wc, err := c.sendAndWait(ctx, verbs.SendWR{ID: uint64(i), Op: verbs.OpSend, Flags: verbs.SendSignaled, MR: c.mr, Length: srqMsg})
		if err != nil {
			return verbsError(emit, err)
		}
		if err := wc.Err(); err != nil {
			return verbsError(emit, err)
		}
		rw, err := srv.waitCQ(ctx, srv.recvCQ, 20*time.Second)
		if err != nil {
			return verbsError(emit, err)
		}
		left := pool - i - 1
		evText := sandbox.Same("—")
		if eventAt < 0 {
			ev, ok, err := srv.ctx.AsyncEvent(300 * time.Millisecond)
			if err != nil {
				return verbsError(emit, err)
			}
			if ok {
				evText = sandbox.Same(ev.Type.String())
				if ev.Type == verbs.EventSRQLimitReached {
					eventAt = left
				}
				note(emit, "info", say(fmt.Sprintf("ibv_get_async_event: %s after message %d, %d receives left", ev.Type, i+1, left),
					fmt.Sprintf("ibv_get_async_event：第 %d 条消息之后读到 %s，剩余 %d 个接收缓冲", i+1, ev.Type, left)))
			}
		}
		metric(emit, "srq_left", say("receives left in the SRQ", "SRQ 中剩余的接收缓冲"), float64(i+1), float64(left), "recv")
		tab.AddRow(sandbox.Same(fmt.Sprint(i+1)), sandbox.Same(fmt.Sprintf("QP %d", i%nqp)),
			sandbox.Same(fmt.Sprintf("QP %d (0x%x)", byQPN[rw.QPNum], rw.QPNum)), sandbox.Same(fmt.Sprint(left)), evText)
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: tab})
	_, after, err := srq.Query()
	if err != nil {
		return verbsError(emit, err)
	}
	r.eventAt, r.after = eventAt, after
	r.figs["event_fired"] = b2f(eventAt >= 0)
	r.figs["event_left"] = float64(eventAt)
	r.figs["limit_after"] = float64(after)

	return nil
}

// dry sends once more into the empty pool, counts the RNR NAKs, then
// refills it and sees the SEND through.
func (r *srqRun) dry() error {
	ctx, emit, top, pool, srv, srq, figs := r.ctx, r.emit, r.top, r.pool, r.srv, r.srq, r.figs
	c := r.clis[0]
	phase(emit, "dry", say("one more SEND into the empty pool, then a refill", "再向空池发一个 SEND，然后补充"))
	before, _ := verbs.Counters(top.Client.Dev, 1)
	if err := c.qp.PostSend(verbs.SendWR{ID: 99, Op: verbs.OpSend, Flags: verbs.SendSignaled, MR: c.mr, Length: srqMsg}); err != nil {
		return verbsError(emit, err)
	}
	// rnr_retry 7 retries forever: the SEND waits for a receive.
	wcs := make([]verbs.WC, 1)
	time.Sleep(500 * time.Millisecond)
	nEarly, err := c.sendCQ.Poll(wcs)
	if err != nil {
		return verbsError(emit, err)
	}
	mid, _ := verbs.Counters(top.Client.Dev, 1)
	rnr := mid["rcvd_rnr_err"] - before["rcvd_rnr_err"]
	figs["dry_completed_early"] = float64(nEarly)
	figs["rnr_naks"] = float64(rnr)
	note(emit, "info", say(fmt.Sprintf("after 0.5 s: %d completions for the SEND; %s counted %d RNR NAKs (rcvd_rnr_err, all QPs of the device)", nEarly, top.Client.Dev, rnr),
		fmt.Sprintf("0.5 秒后：这个 SEND 有 %d 个完成；%s 记录了 %d 次 RNR NAK（rcvd_rnr_err，设备上所有 QP 合计）", nEarly, top.Client.Dev, rnr)))
	for i := range 4 {
		if err := srq.PostRecv(uint64(100+i), srv.mr, (pool+i)*srqMsg, srqMsg); err != nil {
			return verbsError(emit, err)
		}
	}
	var late verbs.WC
	if nEarly == 1 {
		late = wcs[0]
	} else if late, err = c.waitCQ(ctx, c.sendCQ, 20*time.Second); err != nil {
		if errors.Is(err, errCompletionTimeout) {
			return fmt.Errorf("the SEND into the refilled pool never completed: %w", err)
		}
		return verbsError(emit, err)
	}
	figs["refill_status"] = float64(late.Status)
	r.nEarly, r.rnr, r.late = nEarly, rnr, late
	note(emit, "info", say("4 receives posted to the SRQ; the waiting SEND completed with "+wcText(late.Status)["en"],
		"向 SRQ 补充了 4 个接收缓冲；等待中的 SEND 以 "+wcText(late.Status)["zh"]+" 完成"))

	// Every figure the verdict quotes, in a table beside it.
	t := sandbox.NewTable(say("the pool's limit and running dry", "池的下限与耗尽"), say("what", "项目"), say("value", "值"))
	left := say("never", "没有触发")
	if r.eventAt >= 0 {
		left = sandbox.Same(fmt.Sprint(r.eventAt))
	}
	t.AddRow(say("receives left when SRQ_LIMIT_REACHED came", "收到 SRQ_LIMIT_REACHED 时剩余的接收缓冲"), left)
	t.AddRow(say("srq_limit read after the event", "事件之后读到的 srq_limit"), sandbox.Same(fmt.Sprint(r.after)))
	t.AddRow(say("completions of the SEND into the empty pool (0.5 s)", "向空池发送的 SEND 的完成数（0.5 秒内）"), sandbox.Same(fmt.Sprint(nEarly)))
	t.AddRow(say("RNR NAKs counted by "+top.Client.Dev+" (rcvd_rnr_err)", top.Client.Dev+" 记录的 RNR NAK（rcvd_rnr_err）"), sandbox.Same(fmt.Sprint(rnr)))
	t.AddRow(say("that SEND after 4 receives were added", "补充 4 个接收缓冲后该 SEND 的完成"), sandbox.Same(late.Status.String()))
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
	return nil
}

// verdict is what the run showed, from the figures its tables hold.
func (r *srqRun) verdict() (bool, sandbox.Text) {
	top, nqp, pool, limit, eventAt, after, nEarly, rnr, late := r.top, r.nqp, r.pool, r.limit, r.eventAt, r.after, r.nEarly, r.rnr, r.late
	ok := eventAt >= 0 && nEarly == 0 && late.Status == verbs.WCSuccess
	var v sandbox.Text
	switch {
	case ok:
		v = say(fmt.Sprintf("%d messages through %d different QPs drained one pool of %d receives. IBV_EVENT_SRQ_LIMIT_REACHED arrived when %d receives were left (limit %d), and the limit read %d afterwards: the event fires once and must be re-armed. The SEND into the empty pool did not complete while %s counted %d RNR NAKs; 4 new receives in the SRQ let it through with %s. A server that refills on the event never reaches RNR.",
			pool, nqp, pool, eventAt, limit, after, top.Client.Dev, rnr, late.Status),
			fmt.Sprintf("经 %d 个不同 QP 到达的 %d 条消息耗尽了同一个有 %d 个接收缓冲的池。剩余 %d 个时（下限 %d）到达 IBV_EVENT_SRQ_LIMIT_REACHED，之后读到的下限为 %d：事件只触发一次，必须重新设置。池空时的 SEND 没有完成，同时 %s 记录了 %d 次 RNR NAK；向 SRQ 补充 4 个接收缓冲后它以 %s 完成。收到事件就补充的服务端永远不会走到 RNR。",
				nqp, pool, pool, eventAt, limit, after, top.Client.Dev, rnr, late.Status))
	case eventAt < 0:
		v = say(fmt.Sprintf("No IBV_EVENT_SRQ_LIMIT_REACHED arrived while the pool of %d went from %d to 0 receives with limit %d.", pool, pool, limit),
			fmt.Sprintf("池中接收缓冲从 %d 降到 0（下限 %d）的过程中，没有读到 IBV_EVENT_SRQ_LIMIT_REACHED。", pool, limit))
	default:
		v = say(fmt.Sprintf("The SEND into the empty pool: %d early completions, then %s after the refill.", nEarly, late.Status),
			fmt.Sprintf("向空池发送的 SEND：提前完成 %d 个，补充后的完成状态为 %s。", nEarly, late.Status))
	}
	return ok, v
}
