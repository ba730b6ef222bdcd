package rdmaexp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/expkit"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// QPStates is the experiment "a QP is a state machine": one RC QP walked
// RESET → INIT → RTR → RTS, showing what each step needs, with posts in the
// wrong state and a skipped step refused.
func QPStates() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "qp-states",
		Title: say("The QP state machine", "QP 状态机"),
		Summary: say(
			"Walks one RC queue pair RESET → INIT → RTR → RTS, showing the attributes each step needs; posting before the QP is ready, or skipping a step, is refused.",
			"把一个 RC 队列对依次推进 RESET → INIT → RTR → RTS，展示每一步需要的属性；在 QP 就绪前投递请求或跳过某一步都会被拒绝。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Shareable,
		Params: []sandbox.Param{
			{Name: "mistakes", Kind: sandbox.ParamBool, Title: say("Also try the mistakes", "同时尝试错误操作"),
				Help: say("Post a SEND before RTS and jump from INIT straight to RTS.", "在 RTS 之前投递 SEND，并从 INIT 直接跳到 RTS。"), Default: true},
		},
		Presets: []sandbox.Preset{{ID: "walk", Title: say("walk with mistakes", "带错误操作的演示"), Values: map[string]any{"mistakes": true}}},
		Timeout: 60 * time.Second,
		Run:     runQPStates,
	}
}

type qpStep struct {
	step     string
	state    verbs.QPState
	attrs    string
	result   string
	resultZh string // "" = same as result (a QPN, a status name)
}

// qpStepZh is a step's name for a Chinese reader.
func qpStepZh(step string) string {
	if st, ok := strings.CutPrefix(step, "post SEND in "); ok {
		return "在 " + st + " 状态下 post SEND"
	}
	if st, ok := strings.CutPrefix(step, "modify to "); ok {
		return "改到 " + st
	}
	if step == "modify INIT → RTS (skipping RTR)" {
		return "从 INIT 直接改到 RTS（跳过 RTR）"
	}
	return step
}

// qpRun is one run of qp-states: the QP under study, its connected
// peer, the scratch twin wrong-state posts go to, and the steps so far,
// so that each phase is a method of its own, as steps.go's stepper.
type qpRun struct {
	ctx      context.Context
	emit     sandbox.Emitter
	top      topology
	mistakes bool
	qp, peer *rc
	scratch  *rc // nil without mistakes
	a        verbs.QPAttr
	steps    []qpStep
	refused  int // mistakes the device refused
	tried    int
}

func runQPStates(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	top, err := pickTopology()
	if err != nil {
		return err
	}
	note(emit, "info", top.describe())
	r := &qpRun{ctx: ctx, emit: emit, top: top, mistakes: p["mistakes"].(bool)}
	defer r.close()
	if err := r.open(); err != nil {
		return err
	}
	if err := r.walk(); err != nil {
		return err
	}
	wc, err := r.send()
	if err != nil {
		return err
	}
	r.table()
	ok := wc.Status == verbs.WCSuccess && r.refused == r.tried
	v := say(fmt.Sprintf("The QP reached RTS only step by step — INIT (port, access), RTR (the peer's QPN, GID, PSN), RTS (our PSN, timeouts, retries) — and only then could it send. %d of %d wrong-state attempts were refused.", r.refused, r.tried),
		fmt.Sprintf("QP 只能一步步到达 RTS——INIT（端口、权限）、RTR（对端 QPN、GID、PSN）、RTS（本端 PSN、超时、重试）——之后才能发送。%d 次错误状态下的尝试中有 %d 次被拒绝。", r.tried, r.refused))
	result(emit, ok, v, map[string]float64{"refused": float64(r.refused), "tried": float64(r.tried), "send_ok": b2f(wc.Status == verbs.WCSuccess)})
	return nil
}

// close frees the QPs however far open got (the scratch twin may be
// closed already: send closes it before the real QP sends).
func (r *qpRun) close() {
	for _, q := range []*rc{r.scratch, r.peer, r.qp} {
		if q != nil {
			q.Close()
		}
	}
}

// open makes the QP under study, its peer (connected straight away) and,
// for mistakes, the scratch twin.
func (r *qpRun) open() error {
	emit, top := r.emit, r.top
	// the peer is connected straight away; the QP under study walks slowly
	qp, err := openRC(rcOpts{Side: top.Client, BufSize: 4096, Access: verbs.AccessLocalWrite, SendWR: 8, RecvWR: 8, RNRRetry: 7})
	if err != nil {
		return verbsError(emit, err)
	}
	r.qp = qp
	peer, err := openRC(rcOpts{Side: top.Server, BufSize: 4096, Access: verbs.AccessLocalWrite | verbs.AccessRemoteWrite, SendWR: 8, RecvWR: 8, RNRRetry: 7})
	if err != nil {
		return verbsError(emit, err)
	}
	r.peer = peer
	if err := peer.connect(qp.local()); err != nil {
		return verbsError(emit, err)
	}
	if err := peer.qp.PostRecv(7, peer.mr, 0, 4096); err != nil {
		return verbsError(emit, err)
	}
	if r.a, err = qp.attr(peer.local()); err != nil {
		return err
	}
	// Posts in a wrong state go to a scratch twin of the QP, destroyed
	// before the real QP sends: Soft-RoCE's provider returns EINVAL for them
	// but has already queued the request, which would run at RTS.
	if r.mistakes {
		if r.scratch, err = openRC(rcOpts{Side: top.Client, BufSize: 4096, Access: verbs.AccessLocalWrite, SendWR: 8, RecvWR: 8, RNRRetry: 7}); err != nil {
			return verbsError(emit, err)
		}
		note(emit, "info", say("Wrong-state posts are made on a scratch twin of this QP, walked alongside it and destroyed before the real QP sends: Soft-RoCE refuses them with EINVAL but has already queued them, and they would run once the QP reached RTS.",
			"错误状态下的投递在这个 QP 的一个“替身”上进行，它与真 QP 同步推进，并在真 QP 发送前销毁：Soft-RoCE 会以 EINVAL 拒绝这些投递，但已把请求放进队列，等 QP 到达 RTS 时它们就会被执行。"))
	}
	return nil
}

// state is the QP's state now.
func (r *qpRun) state() verbs.QPState { s, _ := r.qp.qp.State(); return s }

// sendOn posts one signaled SEND on q.
func sendOn(q *rc, id uint64) error {
	copy(q.buf.Bytes(), "hello from a QP in RTS")
	return q.qp.PostSend(verbs.SendWR{ID: id, Op: verbs.OpSend, Flags: verbs.SendSignaled, MR: q.mr, Length: 22})
}

// scratchSend moves the scratch twin to to (from RESET it stays there)
// and posts a SEND on it.
func (r *qpRun) scratchSend(to verbs.QPState) func() error {
	return func() error {
		if to != verbs.StateReset {
			if err := r.scratch.qp.Modify(to, r.a); err != nil {
				return fmt.Errorf("move the scratch QP to %s: %w", to, err)
			}
		}
		return sendOn(r.scratch, 100+uint64(to))
	}
}

// tryMistake does f, a step the QP's state forbids, and records what the
// device said: refused (with the errno explained) or accepted.
func (r *qpRun) tryMistake(step string, attrs string, f func() error, why sandbox.Text) {
	emit, top := r.emit, r.top
	r.tried++
	err := f()
	res, rz := "accepted", "被接受"
	if err != nil {
		r.refused++
		res, rz = "refused: "+err.Error(), "被拒绝："+err.Error()
		var ve *verbs.Error
		if errors.As(err, &ve) {
			rz = fmt.Sprintf("被拒绝：%s（%s，%s）", ve.Call, verbs.ErrnoName(ve.Errno), expkit.ErrnoZh(verbs.ErrnoName(ve.Errno), verbs.Strerror(ve.Errno)))
			t := explain(ve.Call, ve.Errno)
			en := fmt.Sprintf("%s: %s (%s). %s %s", ve.Call, verbs.Strerror(ve.Errno), verbs.ErrnoName(ve.Errno), why["en"], t["en"])
			zh := fmt.Sprintf("%s：%s（%s）。%s%s", ve.Call, expkit.ErrnoZh(verbs.ErrnoName(ve.Errno), verbs.Strerror(ve.Errno)), verbs.ErrnoName(ve.Errno), why["zh"], t["zh"])
			emit.Emit(sandbox.Event{Type: sandbox.EvError, Call: ve.Call, Errno: int(ve.Errno), ErrnoName: verbs.ErrnoName(ve.Errno), Message: en, Messages: sandbox.Text{"en": en, "zh": zh}})
		}
	} else {
		note(emit, "warn", say(fmt.Sprintf("%s was accepted by this device (%s): %s", step, top.Client.Dev, why["en"]), fmt.Sprintf("本设备（%s）接受了 %s：%s", top.Client.Dev, step, why["zh"])))
	}
	r.steps = append(r.steps, qpStep{step: step, state: r.state(), attrs: attrs, result: res, resultZh: rz})
}

// move modifies the QP to to with the attributes attrs names.
func (r *qpRun) move(name string, to verbs.QPState, attrs string, t sandbox.Text) error {
	emit := r.emit
	phase(emit, name, t)
	if err := r.qp.qp.Modify(to, r.a); err != nil {
		return verbsError(emit, err)
	}
	s := r.state()
	note(emit, "info", say(fmt.Sprintf("ibv_modify_qp(%s) with %s → state %s", to, attrs, s), fmt.Sprintf("ibv_modify_qp(%s)，属性 %s → 状态 %s", to, attrs, s)))
	r.steps = append(r.steps, qpStep{step: "modify to " + to.String(), state: s, attrs: attrs, result: "ok", resultZh: "成功"})
	if s != to {
		return fmt.Errorf("qp-states: QP is %s after moving to %s", s, to)
	}
	return nil
}

// walk takes the QP from RESET to RTS, trying the mistakes on the way.
func (r *qpRun) walk() error {
	emit, qp, a, mistakes := r.emit, r.qp, r.a, r.mistakes
	state, move, tryMistake, scratchSend := r.state, r.move, r.tryMistake, r.scratchSend
	phase(emit, "reset", say("A new QP starts in RESET", "新建的 QP 处于 RESET 状态"))
	r.steps = append(r.steps, qpStep{step: "ibv_create_qp", state: state(), attrs: "send_cq, recv_cq, qp_type RC, max_send_wr 8, max_recv_wr 8", result: fmt.Sprintf("QPN 0x%x", qp.qp.Num())})
	if mistakes {
		tryMistake("post SEND in RESET", "", scratchSend(verbs.StateReset),
			say("A QP in RESET has no peer and no queues that run.", "RESET 状态的 QP 没有对端，队列也不工作。"))
	}
	initAttrs := fmt.Sprintf("port_num %d, pkey_index %d, qp_access_flags %s", a.Port, a.PKeyIndex, a.AccessFlags)
	if err := move("init", verbs.StateInit, initAttrs, say("RESET → INIT: which port, which partition, what the peer may do", "RESET → INIT：哪个端口、哪个分区、对端可以做什么")); err != nil {
		return err
	}
	if mistakes {
		tryMistake("post SEND in INIT", "", scratchSend(verbs.StateInit),
			say("INIT may receive work requests for the receive queue, but nothing can be sent yet: there is no peer address.", "INIT 状态可以往接收队列投递请求，但还不能发送：还没有对端地址。"))
		tryMistake("modify INIT → RTS (skipping RTR)", "sq_psn, timeout, retry_cnt, rnr_retry, max_rd_atomic", func() error { return qp.qp.Modify(verbs.StateRTS, a) },
			say("From INIT the way to RTS goes through RTR: the QP must first learn where its peer is (RTS is also entered from SQD and SQE, states a QP reaches only after RTS).", "从 INIT 到 RTS 必须经过 RTR：QP 得先知道对端在哪里（RTS 也可以从 SQD、SQE 进入，但那是 QP 到过 RTS 之后才会有的状态）。"))
	}
	rtrAttrs := fmt.Sprintf("path_mtu %d, dest_qp_num 0x%x, rq_psn %d, ah_attr{dgid %s, sgid_index %d, hop_limit %d}, max_dest_rd_atomic %d, min_rnr_timer %d",
		a.PathMTU.Bytes(), a.DestQPN, a.RQPSN, a.DGID.IP(), a.SGIDIndex, a.HopLimit, a.MaxDestRdAtomic, a.MinRNRTimer)
	if err := move("rtr", verbs.StateRTR, rtrAttrs, say("INIT → RTR (ready to receive): the peer's QP number, GID and first PSN", "INIT → RTR（可接收）：对端的 QP 号、GID 和起始 PSN")); err != nil {
		return err
	}
	if mistakes {
		tryMistake("post SEND in RTR", "", scratchSend(verbs.StateRTR),
			say("RTR can receive, not send: the send queue's PSN, timeouts and retries are still unset.", "RTR 只能接收不能发送：发送队列的 PSN、超时和重试还没有设置。"))
	}
	rtsAttrs := fmt.Sprintf("sq_psn %d, timeout %d, retry_cnt %d, rnr_retry %d, max_rd_atomic %d", a.SQPSN, a.Timeout, a.RetryCnt, a.RNRRetry, a.MaxRdAtomic)
	if err := move("rts", verbs.StateRTS, rtsAttrs, say("RTR → RTS (ready to send): our first PSN, timeouts and retry counts", "RTR → RTS（可发送）：本端起始 PSN、超时和重试次数")); err != nil {
		return err
	}

	return nil
}

// send closes the scratch twin (its queued posts must not run), then
// SENDs in RTS and waits for the peer to receive it.
func (r *qpRun) send() (verbs.WC, error) {
	ctx, emit, qp, peer := r.ctx, r.emit, r.qp, r.peer
	var wc verbs.WC
	if r.scratch != nil {
		err := r.scratch.Close()
		r.scratch = nil
		if err != nil {
			return wc, verbsError(emit, err)
		}
	}
	phase(emit, "send", say("Sending in RTS", "在 RTS 状态发送"))
	if err := sendOn(qp, 1); err != nil {
		return wc, verbsError(emit, err)
	}
	// completions of earlier posts the device accepted come first
	var err error
	for {
		if wc, err = qp.waitCQ(ctx, qp.sendCQ, 20*time.Second); err != nil {
			return wc, err
		}
		if wc.WRID == 1 {
			break
		}
		note(emit, "info", say(fmt.Sprintf("completion of earlier post %d: %s", wc.WRID, wc.Status), fmt.Sprintf("之前第 %d 次 post 的完成：%s", wc.WRID, wc.Status)))
	}
	rwc, err := peer.waitCQ(ctx, peer.recvCQ, 20*time.Second)
	if err != nil {
		return wc, err
	}
	got := string(peer.buf.Bytes()[:min(int(rwc.ByteLen), 4096)])
	r.steps = append(r.steps, qpStep{step: "post SEND in RTS", state: r.state(), result: fmt.Sprintf("%s; peer received %q", wc.Status, got), resultZh: fmt.Sprintf("%s；对端收到“%s”", wc.Status, quotedInner(got))})
	if wc.Err() != nil {
		wcError(emit, wc, say("The SEND did not complete.", "SEND 没有完成。"))
	}

	return wc, nil
}

// table emits the QP's steps.
func (r *qpRun) table() {
	emit, qp := r.emit, r.qp
	t := sandbox.NewTable(say(fmt.Sprintf("QP 0x%x step by step", qp.qp.Num()), fmt.Sprintf("QP 0x%x 一步一步", qp.qp.Num())),
		say("step", "步骤"), say("state after", "之后的状态"), say("attributes given", "给出的属性"), say("result", "结果"))
	for _, s := range r.steps {
		rz := s.resultZh
		if rz == "" {
			rz = s.result
		}
		t.AddRow(say(s.step, qpStepZh(s.step)), sandbox.Same(s.state.String()), sandbox.Same(s.attrs), say(s.result, rz))
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
}
