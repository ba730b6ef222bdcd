package rdmaexp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// perfSignalDecl is lesson 06's "selective signaling": stream small WRITEs
// asking for a completion on every one, then on every Nth; and what
// happens when a program never asks for one.
var perfSignalDecl = perfDecl{
	id:    "perf-signal",
	title: say("Selective signaling: a completion for every Nth WR", "选择性信号：每 N 个 WR 才要一个完成"),
	summary: say("Streams small RDMA WRITEs with a completion (IBV_SEND_SIGNALED) on every work request, then on every Nth, and compares messages per second, CPU per message and completions polled; then posts without ever signaling until the send queue is full.",
		"流式发送小的 RDMA WRITE：先为每个工作请求都要一个完成（IBV_SEND_SIGNALED），再每 N 个才要一个，比较每秒消息数、每条消息的 CPU 和轮询到的完成数；最后一直不要完成地投递，直到发送队列被占满。"),
	params: []sandbox.Param{
		{Name: "every", Kind: sandbox.ParamInt, Title: say("Signal every Nth WR", "每 N 个 WR 要一个完成"), Min: 2, Max: 64, Default: int64(16)},
		{Name: "size", Kind: sandbox.ParamBytes, Title: say("Message size", "消息大小"), Min: 8, Max: 4 << 10, Default: int64(64)},
		{Name: "seconds", Kind: sandbox.ParamInt, Title: say("Seconds per way", "每种方式的秒数"), Min: 1, Max: 4, Default: int64(1)},
	},
	presets: []sandbox.Preset{{ID: "default", Title: say("every 16th, 64 B", "每 16 个，64 B"), Values: map[string]any{"every": int64(16), "size": int64(64)}}},
	timeout: 60 * time.Second,
	run:     runPerfSignal,
}

const signalDepth = 64 // WRs in flight while streaming

func runPerfSignal(ctx context.Context, p sandbox.Params, top topology, emit sandbox.Emitter) error {
	every := int(p["every"].(int64))
	size := int(p["size"].(int64))
	secs := time.Duration(p["seconds"].(int64)) * time.Second
	pr, err := openPair(top, rcOpts{BufSize: 64 << 10, Access: verbs.AccessLocalWrite, SendWR: signalDepth, RecvWR: 1},
		rcOpts{BufSize: 64 << 10, Access: verbs.AccessLocalWrite | verbs.AccessRemoteWrite, SendWR: 1, RecvWR: 1})
	if err != nil {
		return verbsError(emit, err)
	}
	defer pr.Close()
	defer lockThread()()

	ways := []struct {
		every  int
		series string
		label  sandbox.Text
	}{
		{1, "every_1", say("signal every WR", "每个 WR 都要完成")},
		{every, "every_n", say(fmt.Sprintf("signal every %dth WR", every), fmt.Sprintf("每 %d 个 WR 要一个完成", every))},
	}
	phase(emit, "measure", say(fmt.Sprintf("%s WRITEs, %d in flight: every WR signaled, then every %dth", human(int64(size)), signalDepth, every),
		fmt.Sprintf("%s 的 WRITE，%d 个在途：先每个都要完成，再每 %d 个要一个", human(int64(size)), signalDepth, every)))
	if _, err := pr.stream(ctx, streamOpts{Size: size, Depth: signalDepth, SignalEvery: every, Msgs: 200}); err != nil {
		return verbsError(emit, err)
	}
	// perfRounds rounds, alternating, each a share of the time: drift on
	// a shared machine hits both ways alike, and the rounds' spread is
	// what the verdict weighs; each round is charted on its own
	stats := make([]streamStats, 2)
	rates := make([][]float64, 2)
	for r := 0; r < perfRounds; r++ {
		for i, w := range ways {
			st, err := pr.stream(ctx, streamOpts{Size: size, Depth: signalDepth, SignalEvery: w.every, Budget: secs / perfRounds})
			if err != nil {
				return verbsError(emit, err)
			}
			stats[i] = addStats(stats[i], st)
			rates[i] = append(rates[i], st.MsgRate())
			metric(emit, w.series, w.label, float64(r+1), st.MsgRate()/1000, "k msg/s")
		}
	}

	// the mistake: never signal. Unsignaled WRs still hold their send-queue
	// slots until a later signaled completion retires them.
	phase(emit, "never", say("Never signaling", "从不要完成"))
	never, postErr := pr.fillUnsignaled(size)
	var ve *verbs.Error
	full := errors.As(postErr, &ve)
	if postErr != nil && !full {
		return postErr
	}
	if full {
		verbsError(emit, postErr)
		note(emit, "info", say(fmt.Sprintf("ibv_post_send refused WR %d: %d unsignaled WRs filled the send queue (%d asked for)", never+1, never, signalDepth),
			fmt.Sprintf("ibv_post_send 拒绝了第 %d 个 WR：%d 个不要完成的 WR 占满了发送队列（申请了 %d 个）", never+1, never, signalDepth)))
	}
	return reportSignal(emit, every, size, stats, [2]floatSpread{floatSpreadOf(rates[0]), floatSpreadOf(rates[1])}, never, full, ve)
}

func addStats(a, b streamStats) streamStats {
	a.Msgs += b.Msgs
	a.Bytes += b.Bytes
	a.Elapsed += b.Elapsed
	a.CPU += b.CPU
	a.Completions += b.Completions
	a.Polls += b.Polls
	return a
}

// neverPosts is how many unsignaled WRITEs the "never signal" step tries:
// four times the send queue asked for.
const neverPosts = 4 * signalDepth

// fillUnsignaled posts unsignaled WRITEs until the send queue refuses one
// (at most neverPosts) and returns how many it took.
func (p *pair) fillUnsignaled(size int) (int, error) {
	for i := 0; i < neverPosts; i++ {
		if err := p.cli.qp.PostSend(p.writeWR(uint64(i), 0, size, 0)); err != nil {
			return i, err
		}
	}
	return neverPosts, nil
}

// reportSignal words the rates' spread (msg/s per round, rate[0] every WR
// signaled, rate[1] every Nth): a firm verdict only when every round of
// one way beat every round of the other.
func reportSignal(emit sandbox.Emitter, every, size int, st []streamStats, rate [2]floatSpread, never int, full bool, ve *verbs.Error) error {
	all, sel := st[0], st[1]
	rk := [2]floatSpread{rate[0].scaled(1e-3), rate[1].scaled(1e-3)}
	t := sandbox.NewTable(say("selective signaling", "选择性信号"), say("signaled", "要完成的 WR"), say("messages", "消息数"),
		say(fmt.Sprintf("k msg/s, median (lowest–highest of %d rounds)", rate[0].N), fmt.Sprintf("千条消息/秒，中位数（%d 轮中最低–最高）", rate[0].N)), sandbox.Same("MB/s"), say("CPU µs/msg", "每条消息 CPU µs"), say("completions polled", "轮询到的完成"), say("completions per message", "每条消息的完成数"), say("ibv_poll_cq calls", "ibv_poll_cq 调用次数"))
	for i, s := range st {
		name := say("every WR", "每个 WR")
		if i == 1 {
			name = say(fmt.Sprintf("every %dth", every), fmt.Sprintf("每 %d 个", every))
		}
		t.AddRow(name, sandbox.Same(fmt.Sprint(s.Msgs)), rk[i].say(1), sandbox.Same(f1(s.MBps())), sandbox.Same(f1(us(s.CPUPerMsg()))), sandbox.Same(fmt.Sprint(s.Completions)), sandbox.Same(f2(ratio(float64(s.Completions), float64(s.Msgs)))), sandbox.Same(fmt.Sprint(s.Polls)))
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
	speed := ratio(rate[1].Med, rate[0].Med)
	kind := order(rk[1], rk[0], 1)
	cpu := ratio(us(sel.CPUPerMsg()), us(all.CPUPerMsg()))
	figs := map[string]float64{
		"every": float64(every), "rate_all": rate[0].Med, "rate_sel": rate[1].Med, "speedup": speed, "verdict": kind, "rounds": float64(rate[0].N),
		"rate_all_min": rate[0].Min, "rate_all_max": rate[0].Max, "rate_sel_min": rate[1].Min, "rate_sel_max": rate[1].Max,
		"cpu_us_all": us(all.CPUPerMsg()), "cpu_us_sel": us(sel.CPUPerMsg()), "cpu_ratio": cpu,
		"cqe_per_msg_all": ratio(float64(all.Completions), float64(all.Msgs)), "cqe_per_msg_sel": ratio(float64(sel.Completions), float64(sel.Msgs)),
		"never_posted": float64(never), "never_full": b2f(full), "send_queue": signalDepth,
	}
	gen := say("In general: a completion is work for the device (write a CQE, maybe raise an event) and for the program (poll it, handle it); signaling every Nth request divides that work by N. The other requests still finish — the signaled one reports them all, in order.",
		"一般规律：每个完成对设备（写 CQE，也许还要触发事件）和程序（轮询、处理）都是工作；每 N 个请求才要一个完成，就把这部分工作除以 N。其余请求照样完成——被标记的那个请求按顺序替它们一起报告。")
	rxe := say("Specific to rxe: here the \"device\" is the kernel, and the WRITE itself (a system call, building the packet, its CRC, the ACK) costs far more than a completion, so the gain is smaller than on hardware, where completions and doorbells are what limits the message rate.",
		"rxe 特有：这里的“设备”就是内核，WRITE 本身（一次系统调用、构造报文、计算 CRC、处理 ACK）比一个完成贵得多，所以收益比硬件上小；在硬件上，限制消息速率的正是完成和门铃。")
	rEn := fmt.Sprintf("%s k/s against %s k/s (median, lowest–highest of %d rounds; ×%.2f)", rk[1].say(1)["en"], rk[0].say(1)["en"], rk[0].N, speed)
	rZh := fmt.Sprintf("%s k/s 对 %s k/s（%d 轮的中位数，最低–最高；×%.2f）", rk[1].say(1)["zh"], rk[0].say(1)["zh"], rk[0].N, speed)
	var v sandbox.Text
	switch kind {
	case 1:
		v = say(fmt.Sprintf("Signaling every %dth WR sent more %s WRITEs per second than signaling every one in every round: %s, with %.2f completions per message instead of 1. ", every, human(int64(size)), rEn, figs["cqe_per_msg_sel"])+gen["en"]+" "+rxe["en"],
			fmt.Sprintf("每 %d 个 WR 要一个完成，每一轮每秒发出的 %s WRITE 都比每个都要完成时多：%s，每条消息的完成数从 1 降到 %.2f。", every, human(int64(size)), rZh, figs["cqe_per_msg_sel"])+gen["zh"]+rxe["zh"])
	case -1:
		v = say(fmt.Sprintf("Here signaling every %dth WR sent fewer WRITEs per second in every round (%s), though completions per message fell from 1 to %.2f — on this busy, emulated machine something other than completions set the pace. ", every, rEn, figs["cqe_per_msg_sel"])+rxe["en"]+" "+gen["en"],
			fmt.Sprintf("这里每 %d 个 WR 要一个完成，每一轮每秒发出的 WRITE 反而都更少（%s），尽管每条消息的完成数从 1 降到了 %.2f——在这台繁忙的模拟机器上，决定速度的是完成以外的东西。", every, rZh, figs["cqe_per_msg_sel"])+rxe["zh"]+gen["zh"])
	default:
		why := overlapWhy(say("the two ways' message rates", "两种方式每秒消息数"), rk[0].N)
		v = say(fmt.Sprintf("Signaling every %dth WR against every one: %s. Whether that changed the rate is %s; completions per message fell from 1 to %.2f either way. ", every, rEn, why["en"], figs["cqe_per_msg_sel"])+rxe["en"]+" "+gen["en"],
			fmt.Sprintf("每 %d 个 WR 要一个完成对比每个都要：%s。它是否改变了速率，%s；无论如何，每条消息的完成数都从 1 降到了 %.2f。", every, rZh, why["zh"], figs["cqe_per_msg_sel"])+rxe["zh"]+gen["zh"])
	}
	if full {
		v = say(v["en"]+fmt.Sprintf(" Never signaling is a bug: after %d unsignaled WRs (the QP asked for %d send slots; the device may round up) the send queue was full and ibv_post_send returned %s — this device frees a slot only when a later signaled completion is polled, as hardware providers do.", never, signalDepth, verbs.ErrnoName(ve.Errno)),
			v["zh"]+fmt.Sprintf("从不要完成是个错误：%d 个不要完成的 WR 之后（QP 申请了 %d 个发送槽位，设备可能向上取整），发送队列满了，ibv_post_send 返回 %s——这个设备只有在后面某个要完成的 WR 的完成被轮询到时才释放槽位，硬件驱动就是这样做的。", never, signalDepth, verbs.ErrnoName(ve.Errno)))
	} else {
		v = say(v["en"]+fmt.Sprintf(" Never signaling did not fill the send queue here: all %d unsignaled WRs were accepted by a queue of %d. That is rxe: its kernel completer frees the slot of every finished WR, signaled or not. A hardware provider such as mlx5 frees slots only when it polls a completion, so the same program there stops with ENOMEM after one queue's worth — the verbs rules say an unsignaled WR is done only when a later signaled one completes. Write for the rules, not for rxe.", never, signalDepth),
			v["zh"]+fmt.Sprintf("这里从不要完成并没有占满发送队列：容量 %d 的队列接受了全部 %d 个不要完成的 WR。这是 rxe 的行为：它的内核完成器会释放每个已完成 WR 的槽位，不管要没要完成。mlx5 等硬件驱动只在轮询到完成时才释放槽位，所以同样的程序在那里投递满一队之后就会因 ENOMEM 停下——Verbs 的规则是：不要完成的 WR 只有在后面某个要完成的 WR 完成时才算完成。要按规则写程序，而不是按 rxe 写。", signalDepth, never))
	}
	result(emit, true, v, figs)
	return nil
}
