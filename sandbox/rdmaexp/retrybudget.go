package rdmaexp

import (
	"context"
	"fmt"
	"time"

	"github.com/rdmalab/rdmalab/internal/ctxtime"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/netshape"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// RetryBudget is lesson 02's "what a dead link costs an RC QP": every
// packet the client sends is dropped, so its WRITE is never acknowledged;
// the sender retransmits after each local ACK timeout (4.096 µs ×
// 2^timeout) until retry_cnt retries are spent, then completes the WRITE
// with IBV_WC_RETRY_EXC_ERR and moves the QP to ERROR. Timing experiment.
func RetryBudget() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "retry-budget",
		Title: say("The retry budget: when an RC QP gives up", "重试预算：RC QP 何时放弃"),
		Summary: say(
			"tc netem drops 100 % of the client's packets. One RDMA WRITE is retransmitted after every local ACK timeout until retry_cnt retries are used up; we time it from post to the IBV_WC_RETRY_EXC_ERR completion, compare with (retry_cnt + 1) × 4.096 µs × 2^timeout, chart the packets sent, and read both QPs' states afterwards.",
			"用 tc netem 丢掉客户端 100 % 的报文。一个 RDMA WRITE 在每次本地 ACK 超时后重传，直到 retry_cnt 次重试用完；我们计时从投递到出现 IBV_WC_RETRY_EXC_ERR 完成为止，与 (retry_cnt + 1) × 4.096 µs × 2^timeout 比较，画出已发送的报文数，并读出两端 QP 随后的状态。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Timing, // times a failure; its 100 % loss would break any run beside it
		Params: []sandbox.Param{
			{Name: "timeout", Kind: sandbox.ParamInt, Title: say("timeout (exponent)", "timeout（指数）"), Min: 8, Max: 17, Default: int64(14),
				Help: say("Local ACK timeout = 4.096 µs × 2^timeout: 14 is 67 ms, 17 is 537 ms.", "本地 ACK 超时 = 4.096 µs × 2^timeout：14 是 67 ms，17 是 537 ms。")},
			{Name: "retry_cnt", Kind: sandbox.ParamInt, Title: say("retry_cnt", "retry_cnt"), Min: 0, Max: 7, Default: int64(6),
				Help: say("Retransmissions after the first try before the QP gives up (0–7). Soft-RoCE treats 7 as \"forever\".", "首次发送之后、QP 放弃之前的重传次数（0–7）。Soft-RoCE 把 7 当作“永远”。")},
		},
		Presets: []sandbox.Preset{
			{ID: "default", Title: say("timeout 14, retry_cnt 6", "timeout 14，retry_cnt 6"), Values: map[string]any{"timeout": 14, "retry_cnt": 6}},
			{ID: "short", Title: say("timeout 12, retry_cnt 1", "timeout 12，retry_cnt 1"), Values: map[string]any{"timeout": 12, "retry_cnt": 1}},
			{ID: "long", Title: say("timeout 17, retry_cnt 3", "timeout 17，retry_cnt 3"), Values: map[string]any{"timeout": 17, "retry_cnt": 3}},
			{ID: "seven", Title: say("retry_cnt 7 on Soft-RoCE", "Soft-RoCE 上的 retry_cnt 7"), Values: map[string]any{"timeout": 12, "retry_cnt": 7}},
		},
		Timeout: 60 * time.Second,
		Run:     runRetryBudget,
	}
}

// retryRun is one run of retry-budget: what its phases share, so that
// each phase (connect, cut, wait, after, the table and verdict) is a
// method of its own, as steps.go's stepper.
type retryRun struct {
	ctx   context.Context
	emit  sandbox.Emitter
	top   topology
	pair  *writePair
	exp   int           // the QP's timeout exponent
	retry int           // retry_cnt
	per   time.Duration // one try: 4.096 µs × 2^exp
	// expected is when a spec-following RNIC gives up: (retry+1) tries.
	expected time.Duration

	healthy       time.Time // when the healthy WRITE's completion was seen
	wc            verbs.WC  // the WRITE into the cut link's completion
	took          time.Duration
	stillRetrying bool // retry_cnt 7 on rxe: no completion, ever
	before, after bothCounters
	sent0         int64
	flush         verbs.WC // a WRITE posted after the failure
}

// retrySize is the WRITE's size.
const retrySize = 4096

func runRetryBudget(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	exp := int(p["timeout"].(int64))
	retry := int(p["retry_cnt"].(int64))
	link, err := shapeLink(emit, say("the retry budget needs two Soft-RoCE devices on a veth pair (rxe0, rxe1): loss is added on the client's link",
		"重试预算实验需要 veth 对上的两个 Soft-RoCE 设备（rxe0、rxe1）：丢包加在客户端的链路上"))
	if err != nil {
		return err
	}
	defer link.reset(emit, true)
	per := ibTimeout(exp)
	r := &retryRun{ctx: ctx, emit: emit, top: link.top, exp: exp, retry: retry, per: per, expected: time.Duration(retry+1) * per}
	err = r.connect()
	if r.pair != nil { // closed however far connect got
		defer r.pair.Close()
	}
	if err != nil {
		return err
	}
	if err := r.cut(link.dev); err != nil {
		return err
	}
	if err := r.wait(); err != nil {
		return err
	}
	cliState, srvState := r.afterwards()
	figs, tries := r.table(cliState, srvState, link.clean)
	ok, v := r.verdict(cliState, srvState, tries)
	result(emit, ok, v, figs)
	return nil
}

// post WRITEs the client's buffer to the server's.
func (r *retryRun) post(id uint64) error {
	return r.pair.cli.qp.PostSend(verbs.SendWR{ID: id, Op: verbs.OpWrite, Flags: verbs.SendSignaled, MR: r.pair.cli.mr, Length: retrySize,
		RemoteAddr: r.pair.target.Addr, RKey: r.pair.target.RKey})
}

// connect connects the pair and WRITEs once over the healthy link.
func (r *retryRun) connect() error {
	emit := r.emit
	phase(emit, "connect", say("connect an RC QP pair and WRITE once with the link healthy", "连接一对 RC QP，在链路正常时 WRITE 一次"))
	pair, err := newWritePair(r.top, retrySize, r.exp, r.retry)
	if err != nil {
		return verbsError(emit, err)
	}
	r.pair = pair
	if err := r.post(1); err != nil {
		return verbsError(emit, err)
	}
	wc, err := pair.cli.waitCQ(r.ctx, pair.cli.sendCQ, 10*time.Second)
	if err != nil {
		return err
	}
	r.healthy = time.Now()
	note(emit, "info", say(fmt.Sprintf("healthy link: WRITE of %d B completed with %s", retrySize, wc.Status),
		fmt.Sprintf("链路正常：%d B 的 WRITE 以 %s 完成", retrySize, wc.Status)))
	return nil
}

// cut drops every packet the client sends on dev.
func (r *retryRun) cut(dev string) error {
	emit, exp, retry, per, expected := r.emit, r.exp, r.retry, r.per, r.expected
	phase(emit, "cut", say("drop every packet the client sends", "丢掉客户端发出的每一个报文"))
	cmds, err := netshape.Loss(r.ctx, dev, 100, false)
	for _, c := range cmds {
		logf(emit, "$ %s", c)
	}
	if err != nil {
		return err
	}
	note(emit, "info", say(fmt.Sprintf("timeout %d → 4.096 µs × 2^%d = %s per try; retry_cnt %d → %d tries; expected time to give up ≈ %s",
		exp, exp, fmtDur(per), retry, retry+1, fmtDur(expected)),
		fmt.Sprintf("timeout %d → 4.096 µs × 2^%d = 每次 %s；retry_cnt %d → 共 %d 次发送；预计 %s 后放弃",
			exp, exp, fmtDur(per), retry, retry+1, fmtDur(expected))))
	return nil
}

// wait WRITEs into the void and waits for the completion, drawing the
// packets the client sends as it retries.
func (r *retryRun) wait() error {
	emit, top, pair, ctx, per, expected := r.emit, r.top, r.pair, r.ctx, r.per, r.expected
	phase(emit, "wait", say("WRITE into the void and wait for the completion", "向断开的链路 WRITE，等待完成"))
	// rxe arms a QP's retransmit timer when it sends and none is
	// pending, and does not stop it when the ACK comes (rxe_comp.c:
	// "some timeouts are spurious since we do not reset the timer but
	// kick it down the road or let it expire"). The healthy WRITE's timer
	// would then still run when the WRITE below is sent, and give its
	// first try only what is left of it. Let it expire first: a jiffy
	// (at most 10 ms) and the timer's softirq are in the margin.
	if left := r.per + 50*time.Millisecond - time.Since(r.healthy); left > 0 {
		note(emit, "info", say(fmt.Sprintf("waiting %s first: Soft-RoCE leaves the healthy WRITE's retransmit timer running after its ACK; without the wait, the WRITE below would get only what is left of that timer as its first try", fmtDur(left)),
			fmt.Sprintf("先等 %s：Soft-RoCE 收到 ACK 后并不停止上一个正常 WRITE 的重传定时器；不等它到期，下面这个 WRITE 的第一次尝试就只剩下它余下的时间", fmtDur(left))))
		if err := ctxtime.Sleep(ctx, left); err != nil {
			return err
		}
	}
	r.before = readBoth(top)
	sent0 := r.before.cli["sent_pkts"]
	r.sent0 = sent0
	// The clock starts before the post: rxe may send the WRITE and arm
	// its retransmit timer before the post returns (its requester runs
	// inline or on a work queue), and a vCPU starved on a busy host can
	// stop between that and a later time.Now() for tens of ms, which
	// reads as rxe giving up early (ratio 0.78 once, make test beside
	// stress-ng). Started first, the time can only come out late.
	start := time.Now()
	if err := r.post(2); err != nil {
		return verbsError(emit, err)
	}
	limit := 3*expected + 5*time.Second
	// rxe never counts retry_cnt 7 down (rxe_comp.c: "if (qp->comp.retry_cnt
	// != 7) qp->comp.retry_cnt--"): on Soft-RoCE it means retry forever, as
	// only rnr_retry 7 does in the IB spec. Watch until the WRITE has gone
	// out once more than the spec allows (the proof: a ninth try), then say
	// so. Not a fixed number of timeouts: on a busy machine rxe's retry
	// timer fires late, and twelve timeouts' worth of time once saw only
	// the eighth try (make test under load).
	forever := r.retry == 7
	pktsPerTry := int64((retrySize + pair.mtu - 1) / pair.mtu)
	proof := int64(r.retry+2) * pktsPerTry
	if forever {
		limit = min(60*per, 9*time.Second)
		note(emit, "info", say(fmt.Sprintf("Soft-RoCE treats retry_cnt 7 as \"retry forever\" (the IB spec gives 7 retries, %d tries in all): we watch until the client has sent the WRITE a %dth time, then stop waiting.", r.retry+1, r.retry+2),
			fmt.Sprintf("Soft-RoCE 把 retry_cnt 7 当作“永远重试”（IB 规范的意思是重试 7 次，一共发送 %d 次）：我们一直观察到客户端第 %d 次发出这个 WRITE，然后停止等待。", r.retry+1, r.retry+2)))
	}
	wcs := make([]verbs.WC, 1)
	lastSent := int64(-1)
	for {
		n, err := pair.cli.sendCQ.Poll(wcs)
		if err != nil {
			return err
		}
		el := time.Since(start)
		if c, err := verbs.Counters(top.Client.Dev, 1); err == nil && c["sent_pkts"]-sent0 != lastSent {
			lastSent = c["sent_pkts"] - sent0
			emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: "sent_pkts", X: round3(el.Seconds()), Y: float64(lastSent), Unit: "sent_pkts",
				Messages: say("packets the client sent (all dropped)", "客户端发出的报文（全部被丢弃）")})
		}
		if n == 1 {
			r.wc = wcs[0]
			break
		}
		if forever && lastSent >= proof {
			r.stillRetrying = true
			break
		}
		if el > limit {
			if forever {
				r.stillRetrying = true
				break
			}
			return explained(emit, say(fmt.Sprintf("no completion %s after the WRITE (expected one after ≈ %s)", fmtDur(el), fmtDur(expected)),
				fmt.Sprintf("WRITE 之后 %s 仍没有完成（预计约 %s 后出现）", fmtDur(el), fmtDur(expected))))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(2 * time.Millisecond)
	}
	took := time.Since(start)
	r.took = took
	r.after = readBoth(top)
	after := r.after
	emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: "sent_pkts", X: round3(took.Seconds()), Y: float64(after.cli["sent_pkts"] - sent0), Unit: "sent_pkts",
		Messages: say("packets the client sent (all dropped)", "客户端发出的报文（全部被丢弃）")})
	if r.stillRetrying {
		note(emit, "warn", say(fmt.Sprintf("After %s (%.0f timeouts) there is still no completion: the QP keeps retransmitting.", fmtDur(took), took.Seconds()/per.Seconds()),
			fmt.Sprintf("%s（%.0f 个超时周期）之后仍然没有完成：这个 QP 还在不停地重传。", fmtDur(took), took.Seconds()/per.Seconds())))
	} else if r.wc.Status != verbs.WCSuccess {
		// RETRY_EXC_ERR is what this experiment is for (every packet
		// dropped): labelled as intended. Any other status is a real error.
		fail := wcError
		if r.wc.Status == verbs.WCRetryExcErr {
			fail = wcExpected
		}
		fail(emit, r.wc, say(fmt.Sprintf("No ACK came back, so the sender resent the WRITE after each timeout; after %d retries it gave up.", r.retry),
			fmt.Sprintf("没有任何 ACK 返回，发送方每次超时后重发这个 WRITE；重试 %d 次之后放弃了。", r.retry)))
	}
	return nil
}

// afterwards shows what the QPs look like after the failure (or while
// the client still retries), and returns their states.
func (r *retryRun) afterwards() (cliState, srvState verbs.QPState) {
	emit, pair := r.emit, r.pair
	cliState, _ = pair.cli.qp.State()
	srvState, _ = pair.srv.qp.State()
	phase(emit, "after", say("what the QPs look like afterwards", "之后两端 QP 的样子"))
	// A QP in ERROR flushes every further request.
	if r.stillRetrying {
		note(emit, "info", say("the client QP is still retrying, so no further WRITE is posted; closing the QP ends it",
			"客户端 QP 仍在重试，所以不再投递 WRITE；关闭这个 QP 才会让它停下"))
	} else if err := r.post(3); err == nil {
		r.flush, _ = pair.cli.waitCQ(r.ctx, pair.cli.sendCQ, 5*time.Second)
		note(emit, "info", say(fmt.Sprintf("another WRITE posted on the failed QP completes with %s (%s)", r.flush.Status, r.flush.Status.Description()),
			fmt.Sprintf("在失败的 QP 上再投递一个 WRITE，它以 %s（%s）完成", r.flush.Status, wcStatusZh(r.flush.Status))))
	} else {
		note(emit, "info", say(fmt.Sprintf("another WRITE on the failed QP is refused at post: %v", err),
			"在失败的 QP 上再投递 WRITE 时被拒绝："+quoteZh(err)))
	}
	return cliState, srvState
}

// table emits the run's table and returns the figures the verdict and
// the lesson read, and how many times the WRITE was sent.
func (r *retryRun) table(cliState, srvState verbs.QPState, cleanAtStart bool) (map[string]float64, float64) {
	emit, pair, exp, retry, per, expected, took, wc, after, sent0, stillRetrying := r.emit, r.pair, r.exp, r.retry, r.per, r.expected, r.took, r.wc, r.after, r.sent0, r.stillRetrying
	const size = retrySize
	d := diffBoth(r.before, after)
	flush := r.flush
	tries := float64(after.cli["sent_pkts"]-sent0) / float64((size+pair.mtu-1)/pair.mtu)
	same := sandbox.Same
	t := sandbox.NewTable(say("retry budget (measured here, Soft-RoCE in this lab's guest)", "重试预算（本实验室实测：虚拟机里的 Soft-RoCE）"), say("what", "项目"), say("value", "值"))
	next := same(flush.Status.String())
	if stillRetrying {
		next = say("not posted", "未投递")
	}
	done := say(fmt.Sprintf("%s (%s)", wc.Status, wc.Status.Description()), fmt.Sprintf("%s（%s）", wc.Status, wcStatusZh(wc.Status)))
	if stillRetrying {
		done = say("none yet (still retrying)", "还没有（仍在重试）")
	}
	t.AddRow(say("timeout / per try (4.096 µs × 2^timeout)", "timeout / 每次（4.096 µs × 2^timeout）"), same(fmt.Sprintf("%d / %s", exp, fmtDur(per))))
	t.AddRow(say("retry_cnt / tries", "retry_cnt / 发送次数"), same(fmt.Sprintf("%d / %d", retry, retry+1)))
	if stillRetrying {
		// no give-up here to compare with: the spec's figure is labelled
		// as what a spec-following RNIC would do, and the time measured
		// is how long we watched, not a time to any completion
		t.AddRow(say("a spec-following RNIC would give up after", "遵循规范的网卡会在此后放弃"), same(fmtDur(expected)))
		t.AddRow(say("watched without a completion", "观察了这么久仍无完成"), same(fmtDur(took)))
	} else {
		t.AddRow(say("expected time to give up", "预计放弃所需时间"), same(fmtDur(expected)))
		t.AddRow(say("measured time to the completion", "实测到完成的时间"), same(fmtDur(took)))
		t.AddRow(say("measured ÷ expected", "实测 ÷ 预计"), same(fmt.Sprintf("%.2f", took.Seconds()/expected.Seconds())))
	}
	t.AddRow(say("work completion", "工作完成"), done)
	t.AddRow(say("packets the client sent", "客户端发出的报文"), say(fmt.Sprintf("%d (%.1f × the WRITE's packets: %d)", after.cli["sent_pkts"]-sent0, tries, (size+pair.mtu-1)/pair.mtu),
		fmt.Sprintf("%d（WRITE 的 %d 个报文的 %.1f 倍）", after.cli["sent_pkts"]-sent0, (size+pair.mtu-1)/pair.mtu, tries)))
	t.AddRow(say("client QP state afterwards", "之后客户端 QP 的状态"), same(cliState.String()))
	t.AddRow(say("server QP state afterwards", "之后服务端 QP 的状态"), same(srvState.String()))
	t.AddRow(say("next WRITE on the client QP", "客户端 QP 上的下一个 WRITE"), next)
	t.AddRow(say("rxe counters that moved", "变化了的 rxe 计数器"), fmtDeltasText(d))
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
	ratio := took.Seconds() / expected.Seconds()
	figs := map[string]float64{
		"clean_at_start": b2f(cleanAtStart), "timeout": float64(exp), "retry_cnt": float64(retry),
		"expected_ms": round3(expected.Seconds() * 1000), "measured_ms": round3(took.Seconds() * 1000), "ratio": round3(ratio),
		"wc_status": float64(wc.Status), "client_qp_state": float64(cliState), "server_qp_state": float64(srvState),
		"flush_status": float64(flush.Status), "sent_pkts": float64(after.cli["sent_pkts"] - sent0), "tries": round3(tries),
	}
	for n, v := range d {
		figs[n] = float64(v)
	}
	figs["still_retrying"] = b2f(stillRetrying)
	if stillRetrying {
		figs["wc_status"] = -1 // no completion
	}
	return figs, tries
}

// verdict is what the run showed, from the figures the table holds.
func (r *retryRun) verdict(cliState, srvState verbs.QPState, tries float64) (bool, sandbox.Text) {
	wc, took, per, expected, retry := r.wc, r.took, r.per, r.expected, r.retry
	ratio := took.Seconds() / expected.Seconds()
	ok := wc.Status == verbs.WCRetryExcErr && cliState == verbs.StateError
	var v sandbox.Text
	switch {
	case r.stillRetrying:
		ok = tries > float64(retry+1)
		v = say(fmt.Sprintf("With retry_cnt 7 Soft-RoCE never gave up: after %s it had sent the WRITE %.1f times, the QP is still %s and no completion came. rxe treats 7 as \"retry forever\" (drivers/infiniband/sw/rxe/rxe_comp.c never counts it down), which the IB spec allows only for rnr_retry. By the spec a QP fails the WRITE after 7 retries, nominally 8 × %s ≈ %s (hardware NICs with adaptive retransmission use shorter, growing timeouts). An application on Soft-RoCE with retry_cnt 7 never learns that the path is dead.",
			fmtDur(took), tries, cliState, fmtDur(per), fmtDur(expected)),
			fmt.Sprintf("retry_cnt 为 7 时 Soft-RoCE 从不放弃：%s 之后它已经把这个 WRITE 发了 %.1f 次，QP 仍是 %s，也没有任何完成。rxe 把 7 当作“永远重试”（drivers/infiniband/sw/rxe/rxe_comp.c 从不递减它），而 IB 规范只对 rnr_retry 这样规定。按规范，QP 会在重试 7 次后让 WRITE 失败，名义上是 8 × %s ≈ %s（带自适应重传的硬件网卡用更短、逐次加长的超时）。在 Soft-RoCE 上用 retry_cnt 7 的应用永远不会知道路径已断。",
				fmtDur(took), tries, cliState, fmtDur(per), fmtDur(expected)))
	case ok:
		v = say(fmt.Sprintf("The WRITE failed with IBV_WC_RETRY_EXC_ERR after %s; the formula (retry_cnt + 1) × 4.096 µs × 2^timeout says %s (measured/expected = %.2f). The client's QP is now %s and flushes every further request; the server's QP is still %s — it never heard a thing. The application learns about a dead path only after the whole retry budget is spent.",
			fmtDur(took), fmtDur(expected), ratio, cliState, srvState),
			fmt.Sprintf("这个 WRITE 在 %s 后以 IBV_WC_RETRY_EXC_ERR 失败；公式 (retry_cnt + 1) × 4.096 µs × 2^timeout 给出 %s（实测/预计 = %.2f）。客户端 QP 现在处于 %s，之后的每个请求都会被冲刷（flush）；服务端 QP 仍是 %s——它什么也没收到。应用只有在整个重试预算用完后才知道路径断了。",
				fmtDur(took), fmtDur(expected), ratio, cliState, srvState))
	default:
		v = say(fmt.Sprintf("The WRITE completed with %s after %s and the client's QP is %s — not the retry-exceeded failure a dead link should cause; see the log.", wc.Status, fmtDur(took), cliState),
			fmt.Sprintf("这个 WRITE 在 %s 后以 %s 完成，客户端 QP 处于 %s——不是断链应当造成的重试超限失败；请看日志。", fmtDur(took), wc.Status, cliState))
	}
	return ok, v
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// fmtDur prints a duration with three significant digits.
func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
}
