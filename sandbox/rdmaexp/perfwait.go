package rdmaexp

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
	"github.com/rdmalab/rdmalab/sandbox/verbs/tsc"
)

// perfWaitDecl is lesson 06's "polling vs completion events": a SEND/RECV
// ping-pong between two threads, each waiting for its RECV completion by
// spinning on the CQ or by sleeping on a completion channel; latency and
// CPU time per round trip for both ways.
var perfWaitDecl = perfDecl{
	id:    "perf-wait",
	title: say("Polling vs completion events", "轮询对比完成事件"),
	summary: say("Two threads bounce a small SEND back and forth, first spinning on the completion queue, then sleeping until the completion channel wakes them; median round trip and CPU time per round trip for each way.",
		"两个线程来回传递一个小 SEND：先在完成队列上自旋，再睡眠直到完成通道把它们唤醒；给出两种方式各自的往返时延中位数和每次往返的 CPU 时间。"),
	params: []sandbox.Param{
		{Name: "iterations", Kind: sandbox.ParamInt, Title: say("Round trips per way", "每种方式的往返次数"), Min: 20, Max: 5000, Default: int64(200)},
		{Name: "size", Kind: sandbox.ParamBytes, Title: say("Message size", "消息大小"), Min: 8, Max: 4 << 10, Default: int64(64)},
	},
	presets: []sandbox.Preset{{ID: "default", Title: say("64 B", "64 B"), Values: map[string]any{"size": int64(64)}}},
	timeout: 60 * time.Second,
	run:     runPerfWait,
}

// waitRow is one way's figures.
type waitRow struct {
	Mode     string
	RTT      spread        // round trips; the mean is what CPU time per round trip is compared with
	CPU      time.Duration // both threads, per round trip
	Switches int64         // voluntary context switches per round trip (both threads)
}

func runPerfWait(ctx context.Context, p sandbox.Params, top topology, emit sandbox.Emitter) error {
	iters := int(p["iterations"].(int64))
	size := int(p["size"].(int64))
	var rows []waitRow
	for _, mode := range []string{mPoll, mEvent} {
		title := map[string]sandbox.Text{mPoll: say("Busy polling the CQ", "忙轮询 CQ"), mEvent: say("Sleeping on the completion channel", "睡在完成通道上")}[mode]
		phase(emit, mode, title)
		row, err := waitPingpong(ctx, emit, top, mode, size, iters)
		if err != nil {
			return verbsError(emit, err)
		}
		rows = append(rows, row)
		note(emit, "info", say(fmt.Sprintf("%s: round trip median %.1f µs, middle half %s µs, mean %.1f µs; CPU %.1f µs per round trip (both threads), %.1f sleeps (voluntary context switches) per round trip", map[string]string{mPoll: "polling", mEvent: "events"}[mode], us(row.RTT.Med), row.RTT.midText(), us(row.RTT.Mean), us(row.CPU), float64(row.Switches)/float64(iters)),
			fmt.Sprintf("%s：往返中位数 %.1f µs，中间一半 %s µs，平均 %.1f µs；每次往返 CPU %.1f µs（两个线程合计），每次往返睡眠（主动上下文切换）%.1f 次", map[string]string{mPoll: "轮询", mEvent: "事件"}[mode], us(row.RTT.Med), row.RTT.midText(), us(row.RTT.Mean), us(row.CPU), float64(row.Switches)/float64(iters))))
	}
	return reportWait(emit, iters, rows)
}

// waitPingpong runs one way: the server thread answers, this one pings.
func waitPingpong(ctx context.Context, emit sandbox.Emitter, top topology, mode string, size, iters int) (waitRow, error) {
	ev := mode == mEvent
	pr, err := openPair(top,
		rcOpts{BufSize: 2 * size, Access: verbs.AccessLocalWrite, Event: ev, SendWR: 32, RecvWR: 32, MaxInline: 64},
		rcOpts{BufSize: 2 * size, Access: verbs.AccessLocalWrite, Event: ev, SendWR: 32, RecvWR: 32, MaxInline: 64})
	if err != nil {
		return waitRow{}, err
	}
	defer pr.Close()
	for _, r := range []*rc{pr.cli, pr.srv} {
		for i := 0; i < 16; i++ {
			if err := r.qp.PostRecv(uint64(i), r.mr, 0, size); err != nil {
				return waitRow{}, err
			}
		}
	}
	warm := max(5, iters/10)
	total := warm + iters
	type srvDone struct {
		cpu time.Duration
		cs  int64
		err error
	}
	done := make(chan srvDone, 1)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer pinThread(0)()
		var cpu0 time.Duration
		var cs0 int64
		for i := 0; i < total; i++ {
			if i == warm {
				cpu0, cs0 = threadCPU(), threadCS()
			}
			if err := waitRecv(sctx, pr.srv, size); err != nil {
				done <- srvDone{err: fmt.Errorf("server: %w", err)}
				return
			}
			if err := sendOne(sctx, pr.srv, i, size); err != nil {
				done <- srvDone{err: fmt.Errorf("server: %w", err)}
				return
			}
		}
		done <- srvDone{cpu: threadCPU() - cpu0, cs: threadCS() - cs0}
	}()
	defer lockThread()()
	var clk tsc.Clock
	cyc := make([]uint64, 0, iters)
	var cpu0 time.Duration
	var cs0 int64
	series := "rtt_" + mode
	label := map[string]sandbox.Text{mPoll: say("round trip, polling", "往返，轮询"), mEvent: say("round trip, events", "往返，事件")}[mode]
	for i := 0; i < total; i++ {
		if i == warm {
			cpu0, cs0 = threadCPU(), threadCS()
			clk.Start()
		}
		c0 := tsc.Now()
		err := sendOne(ctx, pr.cli, i, size)
		if err == nil {
			err = waitRecv(ctx, pr.cli, size)
		}
		if err != nil {
			cancel()
			<-done
			return waitRow{}, err
		}
		if c1 := tsc.Now(); i >= warm && c1 > c0 {
			cyc = append(cyc, c1-c0)
		}
	}
	clk.Stop()
	cpu, cs := threadCPU()-cpu0, threadCS()-cs0
	s := <-done
	if s.err != nil {
		return waitRow{}, s.err
	}
	d := make([]time.Duration, len(cyc))
	for i, c := range cyc {
		d[i] = clk.Duration(c)
	}
	// the chart: the median of each tenth of the run
	step := max(1, len(d)/10)
	for i := 0; i+step <= len(d); i += step {
		metric(emit, series, label, float64(i+step), us(medianOf(d[i:i+step])), "µs")
	}
	if err := reapAll(ctx, pr.cli); err != nil {
		return waitRow{}, err
	}
	return waitRow{Mode: mode, RTT: spreadOf(d), CPU: (cpu + s.cpu) / time.Duration(iters), Switches: cs + s.cs}, nil
}

// sendOne posts SEND k (inline, signaled every 16th) and, when signaled,
// waits for its completion, so the send queue never fills.
func sendOne(ctx context.Context, r *rc, k, size int) error {
	fl := verbs.SendInline
	signaled := k%16 == 15
	if signaled {
		fl |= verbs.SendSignaled
	}
	if err := r.qp.PostSend(verbs.SendWR{ID: uint64(k), Op: verbs.OpSend, Flags: fl, MR: r.mr, Offset: size, Length: size}); err != nil {
		return err
	}
	if !signaled {
		return nil
	}
	wc, err := r.waitCQ(ctx, r.sendCQ, 10*time.Second)
	if err != nil {
		return err
	}
	return wc.Err()
}

// waitRecv waits for the next RECV completion (spinning, or sleeping when
// the end has a completion channel) and posts the buffer again.
func waitRecv(ctx context.Context, r *rc, size int) error {
	wc, err := r.waitCQ(ctx, r.recvCQ, 10*time.Second)
	if err != nil {
		return err
	}
	if err := wc.Err(); err != nil {
		return err
	}
	return r.qp.PostRecv(wc.WRID, r.mr, 0, size)
}

// reapAll empties the send CQ before Close.
func reapAll(_ context.Context, r *rc) error {
	wcs := make([]verbs.WC, 16)
	_, err := r.sendCQ.Poll(wcs)
	return err
}

// threadCS is the calling thread's voluntary context switches so far.
func threadCS() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return ru.Nvcsw
}

func reportWait(emit sandbox.Emitter, iters int, rows []waitRow) error {
	t := sandbox.NewTable(say("polling vs completion events (SEND/RECV ping-pong)", "轮询与完成事件（SEND/RECV 往返）"), say("waiting", "等待方式"),
		say("round trip µs, median", "往返 µs，中位数"), say("middle half µs (p25–p75)", "中间一半 µs（p25–p75）"), say("slowest µs", "最慢 µs"), say("mean µs", "平均 µs"),
		say("CPU µs per round trip", "每次往返 CPU µs"), say("CPU ÷ mean round trip", "CPU ÷ 平均往返"), say("sleeps per round trip", "每次往返的睡眠次数"))
	figs := map[string]float64{"iterations": float64(iters)}
	for _, r := range rows {
		share := ratio(us(r.CPU), us(r.RTT.Mean)) // ≤ 2: two threads
		sw := float64(r.Switches) / float64(iters)
		t.AddRow(map[string]sandbox.Text{mPoll: say("busy polling", "忙轮询"), mEvent: say("completion events", "完成事件")}[r.Mode],
			sandbox.Same(f1(us(r.RTT.Med))), sandbox.Same(r.RTT.midText()), sandbox.Same(f1(us(r.RTT.Max))), sandbox.Same(f1(us(r.RTT.Mean))),
			sandbox.Same(f1(us(r.CPU))), sandbox.Same(fmt.Sprintf("%.2f", share)), sandbox.Same(f1(sw)))
		figs["rtt_us_"+r.Mode], figs["cpu_us_"+r.Mode], figs["cpu_share_"+r.Mode], figs["sleeps_"+r.Mode] = us(r.RTT.Med), us(r.CPU), share, sw
		figs["rtt_p25_us_"+r.Mode], figs["rtt_p75_us_"+r.Mode], figs["rtt_mean_us_"+r.Mode] = us(r.RTT.P25), us(r.RTT.P75), us(r.RTT.Mean)
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
	poll, event := rows[0], rows[1]
	slower := ratio(us(event.RTT.Med), us(poll.RTT.Med))
	cpuSave := ratio(figs["cpu_share_"+mEvent], figs["cpu_share_"+mPoll])
	// polling is firmly faster only when the middle halves do not touch:
	// medians alone called polling faster while many of its round trips
	// were slower than the event ones (issue 30)
	apart := poll.RTT.below(event.RTT)
	// the verdict figure the rerun test compares: 1 polling's middle half
	// below the events', 0 otherwise. Events apart and faster is said as
	// what this run saw, but it is no firm verdict: it is not a property of
	// events but of a CPU the poller lost to the threads it competes with,
	// so it comes and goes with the machine's load (beside stress-ng one
	// rerun said polling, the next two events).
	kind := 0.0
	eventsAhead := event.RTT.below(poll.RTT)
	if apart {
		kind = 1
	}
	figs["event_over_poll_rtt"], figs["event_over_poll_cpu_share"], figs["rtt_apart"], figs["verdict"] = slower, cpuSave, b2f(apart), kind
	gen := say("In general: a poller sees a completion the moment it lands but burns a core while it waits; an event costs a system call to arm the CQ, an interrupt and a wake-up, so it adds latency and saves the CPU for other work. Latency-critical loops poll (often a while, then sleep); servers with many idle connections use events.",
		"一般规律：轮询者在完成到达的一刻就能看到它，但等待时会烧掉一个核；事件要用一次系统调用来武装 CQ，再经历一次中断和一次唤醒，所以增加时延、省下 CPU 去做别的事。对时延敏感的循环用轮询（常常先轮询一会儿再睡眠）；有大量空闲连接的服务器用事件。")
	rxe := say("Specific to rxe: the \"interrupt\" is the kernel's own softirq finishing the packet, and every wake-up and system call is slow under emulation, so the gap between the two ways is wider here than on hardware, where the NIC raises a real interrupt and no emulator slows the wake-up.",
		"rxe 特有：这里的“中断”就是内核自己的软中断处理完报文，而每次唤醒和系统调用在模拟下都很慢，所以两种方式的差距比硬件上更大——在硬件上是网卡发出真正的中断，也没有模拟器拖慢唤醒。")
	cpuEn := fmt.Sprintf("the two polling threads used %.2f× the mean round trip in CPU time, the sleeping ones %.2f×", figs["cpu_share_"+mPoll], figs["cpu_share_"+mEvent])
	cpuZh := fmt.Sprintf("轮询的两个线程消耗的 CPU 时间是平均往返时间的 %.2f 倍，睡眠的是 %.2f 倍", figs["cpu_share_"+mPoll], figs["cpu_share_"+mEvent])
	var v sandbox.Text
	switch {
	case apart && cpuSave < 1:
		v = say(fmt.Sprintf("Polling answered faster: a median round trip of %.1f µs against %.1f µs with events (×%.1f), and the middle halves do not overlap (%s µs against %s µs). Meanwhile %s: events traded latency for CPU. ", us(poll.RTT.Med), us(event.RTT.Med), slower, poll.RTT.midText(), event.RTT.midText(), cpuEn)+gen["en"]+" "+rxe["en"],
			fmt.Sprintf("轮询响应更快：往返中位数 %.1f µs，事件方式 %.1f µs（×%.1f），两者的中间一半互不重叠（%s µs 对 %s µs）。%s：事件用时延换来了 CPU。", us(poll.RTT.Med), us(event.RTT.Med), slower, poll.RTT.midText(), event.RTT.midText(), cpuZh)+gen["zh"]+rxe["zh"])
	case eventsAhead && cpuSave < 1:
		v = say(fmt.Sprintf("Events used less CPU (%s) and even answered faster this time: a median round trip of %.1f µs against %.1f µs polling, the middle halves apart (%s µs against %s µs) — a spinning poller on a busy shared, emulated machine loses its CPU to the other threads it competes with. Which way answers faster is therefore too noisy on this machine to say; run it again when the lab is quieter. ", cpuEn, us(event.RTT.Med), us(poll.RTT.Med), event.RTT.midText(), poll.RTT.midText())+gen["en"]+" "+rxe["en"],
			fmt.Sprintf("事件方式用的 CPU 更少（%s），这次响应甚至更快：往返中位数 %.1f µs，轮询为 %.1f µs，两者的中间一半互不重叠（%s µs 对 %s µs）——在繁忙的共享模拟机器上，自旋的轮询者会把 CPU 输给与它竞争的其他线程。所以哪种方式响应更快，在这台机器上噪声太大，说不准；等实验室空闲些再运行一次。", cpuZh, us(event.RTT.Med), us(poll.RTT.Med), event.RTT.midText(), poll.RTT.midText())+gen["zh"]+rxe["zh"])
	case cpuSave < 1:
		v = say(fmt.Sprintf("Events used less CPU: %s. Which way answered faster is too noisy on this machine to say: the middle halves of the round trips overlap (polling %s µs, events %s µs; medians %.1f and %.1f µs) — on a busy shared, emulated machine a spinning poller also loses its CPU now and then. ", cpuEn, poll.RTT.midText(), event.RTT.midText(), us(poll.RTT.Med), us(event.RTT.Med))+gen["en"]+" "+rxe["en"],
			fmt.Sprintf("事件方式用的 CPU 更少：%s。哪种方式响应更快，在这台机器上噪声太大、说不准：两者往返时间的中间一半互相重叠（轮询 %s µs，事件 %s µs；中位数 %.1f 与 %.1f µs）——在繁忙的共享模拟机器上，自旋的轮询者也会不时失去 CPU。", cpuZh, poll.RTT.midText(), event.RTT.midText(), us(poll.RTT.Med), us(event.RTT.Med))+gen["zh"]+rxe["zh"])
	default:
		v = say(fmt.Sprintf("This run did not show the usual trade: %s, and the round trips' middle halves were %s µs polling and %s µs with events — a busy shared machine can hide it; run it again. ", cpuEn, poll.RTT.midText(), event.RTT.midText())+gen["en"]+" "+rxe["en"],
			fmt.Sprintf("这次运行没有显示出通常的取舍：%s，往返时间的中间一半轮询为 %s µs，事件为 %s µs——繁忙的共享机器可能掩盖了它；请再运行一次。", cpuZh, poll.RTT.midText(), event.RTT.midText())+gen["zh"]+rxe["zh"])
	}
	result(emit, true, v, figs)
	return nil
}
