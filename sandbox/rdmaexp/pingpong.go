package rdmaexp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
	"github.com/rdmalab/rdmalab/sandbox/verbs/tsc"
)

const helperPong = "rdma-pong"

// Transports and completion modes of pingpong.
const (
	trTCP   = "tcp"
	trSend  = "send"
	trWrite = "write"
	mPoll   = "poll"
	mEvent  = "event"
)

// Pingpong is the experiment "RDMA round trips cost less than TCP ones":
// a client and a server process bounce a message back and forth over TCP,
// RDMA SEND/RECV or RDMA WRITE, with busy polling or completion events.
func Pingpong() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "pingpong",
		Title: say("Round trips: TCP vs RDMA", "往返时延：TCP 对比 RDMA"),
		Summary: say(
			"Two processes bounce a message back and forth over kernel TCP, RDMA SEND/RECV or RDMA WRITE, polling or sleeping for completions; round-trip latency by message size (median, with the 10th–90th percentile spread) and CPU time per round trip, beside the lesson's hardware reference figures.",
			"两个进程来回传递一条消息，经由内核 TCP、RDMA SEND/RECV 或 RDMA WRITE，以轮询或等待事件的方式获取完成；按消息大小给出往返时延（中位数，以及第 10–90 百分位的离散范围）和每次往返的 CPU 时间，并与课文的硬件参考数据并列。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Timing,
		Params: []sandbox.Param{
			{Name: "transport", Kind: sandbox.ParamEnum, Title: say("Transport", "传输方式"), Default: trWrite, Choices: []sandbox.Choice{
				{Value: trTCP, Title: say("kernel TCP", "内核 TCP")},
				{Value: trSend, Title: say("RDMA SEND/RECV", "RDMA SEND/RECV")},
				{Value: trWrite, Title: say("RDMA WRITE", "RDMA WRITE")},
			}},
			{Name: "mode", Kind: sandbox.ParamEnum, Title: say("Waiting for completions", "等待完成的方式"), Default: mPoll,
				Help: say("RDMA only: spin on the CQ (or on memory for WRITE), or sleep until the completion channel signals. TCP always sleeps in read().", "仅对 RDMA：在 CQ 上（WRITE 则在内存上）自旋，或睡眠直到完成通道通知。TCP 总是睡在 read() 里。"),
				Choices: []sandbox.Choice{
					{Value: mPoll, Title: say("busy polling", "忙轮询")},
					{Value: mEvent, Title: say("completion events", "完成事件")},
				}},
			{Name: "iterations", Kind: sandbox.ParamInt, Title: say("Round trips per size", "每种大小的往返次数"),
				Help: say("More round trips narrow the spread and take longer: about 10 s for 150 under emulation.", "往返次数越多，离散范围越窄，耗时也越长：模拟环境下 150 次约 10 秒。"),
				Min:  10, Max: 20000, Default: int64(150)},
			{Name: "max_size", Kind: sandbox.ParamBytes, Title: say("Largest message", "最大消息"),
				Help: say("Sizes run from 2 B, ×8 each step, up to this.", "消息大小从 2 B 起每次乘 8，直到这个值。"),
				Min:  2, Max: 64 << 10, Default: int64(16 << 10)},
		},
		// TCP and SEND/RECV with events are the like-for-like pair: in both
		// the receiving thread sleeps until the kernel wakes it. Polling is
		// a different trade (a spinning core for no wakeup).
		Presets: []sandbox.Preset{
			{ID: "tcp", Title: say("kernel TCP", "内核 TCP"), Values: map[string]any{"transport": trTCP, "iterations": 150}},
			{ID: "send-event", Title: say("SEND/RECV, events (sleeps like TCP)", "SEND/RECV，事件（和 TCP 一样睡眠）"), Values: map[string]any{"transport": trSend, "mode": mEvent, "iterations": 150}},
			{ID: "send-poll", Title: say("SEND/RECV, polling", "SEND/RECV，轮询"), Values: map[string]any{"transport": trSend, "mode": mPoll, "iterations": 150}},
			{ID: "write-poll", Title: say("RDMA WRITE, polling", "RDMA WRITE，轮询"), Values: map[string]any{"transport": trWrite, "mode": mPoll, "iterations": 150}},
		},
		Timeout: 5 * time.Minute,
		Run:     runPingpong,
	}
}

// sizesUpTo is 2 B, ×8 each step, up to max (always including max).
func sizesUpTo(max int) []int {
	var s []int
	for n := 2; n < max; n *= 8 {
		s = append(s, n)
	}
	return append(s, max)
}

type pongReq struct {
	Side      side   `json:"side"`
	Transport string `json:"transport"`
	Mode      string `json:"mode"`
	Sizes     []int  `json:"sizes"`
	Iters     int    `json:"iters"`
	Warmup    int    `json:"warmup"`
	// AcceptWait is how long the server waits for the client (20 s if 0).
	AcceptWait time.Duration `json:"accept_wait,omitempty"`
	// ReportTID: tell the parent the id of the thread that answers, before
	// the first ping (the syscalls experiment traces that thread alone).
	ReportTID bool `json:"report_tid,omitempty"`
}

// pongTID is the server's answering thread.
type pongTID struct {
	TID int `json:"tid"`
}

type pongReady struct {
	Port int `json:"port"`
	Pid  int `json:"pid"`
}

// pongSize is the server's thread CPU time over one size's measured round
// trips.
type pongSize struct {
	Size  int   `json:"size"`
	CPUNs int64 `json:"cpu_ns"`
	Polls int   `json:"polls,omitempty"` // ibv_poll_cq calls (RDMA)
}

// sizeStats is what one size measured.
type sizeStats struct {
	Size                       int
	Median, P10, P90, P99, Min time.Duration
	ClientCPU, ServerCPU       time.Duration // per round trip: the whole window's CPU time over its round trips
}

// cpuPerRT is a thread's CPU time over a size's whole measured window
// divided by its round trips. The window is read whole, not in batches,
// because the thread CPU clock in the lab's TCG guest runs in steps: the
// kernel marks the guest's TSC unstable ("TSCs unsynchronized"), so the
// scheduler's clock is kept within a tick of the timekeeping clock and
// stands still when a tick comes late, then catches up. Seen: batches of
// 15 round trips (about 1 ms) of a spinning thread read 0, 0, 0, then
// 13.5 ms. Over the whole window the steps cancel except at its two ends.
func cpuPerRT(cpu time.Duration, n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return cpu / time.Duration(n)
}

func runPingpong(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	tr, mode := p["transport"].(string), p["mode"].(string)
	iters := int(p["iterations"].(int64))
	sizes := sizesUpTo(int(p["max_size"].(int64)))
	warm := max(2, iters/10)

	phase(emit, "setup", say("Starting the server process", "启动服务端进程"))
	top, err := pickTopology()
	if err != nil {
		return err
	}
	note(emit, "info", top.describe())
	if tr == trTCP && mode == mEvent {
		note(emit, "info", say("TCP has no polling mode here: the reader always sleeps in read() until the kernel wakes it.", "这里的 TCP 没有轮询模式：读方总是睡在 read() 里，直到内核把它唤醒。"))
	}
	srv, err := startChild(ctx, helperPong, pongReq{Side: top.Server, Transport: tr, Mode: mode, Sizes: sizes, Iters: iters, Warmup: warm}, emit)
	if err != nil {
		return err
	}
	defer srv.kill()
	var ready pongReady
	if err := srv.recv(ctx, 30*time.Second, &ready); err != nil {
		return verbsError(emit, err)
	}
	conn, err := verbs.Dial(ctx, fmt.Sprintf("%s:%d", top.Server.IP(), ready.Port), 10*time.Second)
	if err != nil {
		return fmt.Errorf("pingpong: reach the server: %w", err)
	}
	defer conn.Close()
	end, err := newPPEnd(ctx, top.Client, tr, mode, sizes[len(sizes)-1], conn, false)
	if err != nil {
		return verbsError(emit, err)
	}
	defer end.Close()

	phase(emit, "measure", say(fmt.Sprintf("%d round trips per size over %s", iters, ppName(tr, mode)), fmt.Sprintf("每种大小 %d 次往返，经由 %s", iters, ppNameZh(tr, mode))))
	var stats []sizeStats
	runtime.LockOSThread() // CPU time per round trip is this thread's
	defer runtime.UnlockOSThread()
	defer pinThread(runtime.NumCPU() - 1)()
	k := 0
	for _, size := range sizes {
		for i := 0; i < warm; i++ {
			if err := end.ping(ctx, k, size); err != nil {
				return verbsError(emit, err)
			}
			k++
		}
		// Round trips are timed with the cycle counter, like perftest:
		// time.Now costs microseconds in the TCG guest. The window's
		// wall-clock time converts cycles to nanoseconds afterwards.
		cyc := make([]uint64, 0, iters)
		cpu0 := threadCPU()
		var clk tsc.Clock
		clk.Start()
		for range iters {
			c0 := tsc.Now()
			if err := end.ping(ctx, k, size); err != nil {
				return verbsError(emit, err)
			}
			c1 := tsc.Now()
			if c1 > c0 { // a thread moved between vCPUs whose counters differ: drop the sample
				cyc = append(cyc, c1-c0)
			}
			k++
		}
		cpu := threadCPU() - cpu0
		clk.Stop()
		rtts := make([]time.Duration, len(cyc))
		for i, c := range cyc {
			rtts[i] = clk.Duration(c)
		}
		var ps pongSize
		if err := srv.recv(ctx, 30*time.Second, &ps); err != nil {
			return verbsError(emit, err)
		}
		st := summarize(size, rtts)
		st.ClientCPU = cpuPerRT(cpu, iters)
		st.ServerCPU = cpuPerRT(time.Duration(ps.CPUNs), iters)
		stats = append(stats, st)
		// One point per size as soon as it is measured: latency by size.
		emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: "rtt_median_us", X: float64(size), Y: us(st.Median), Unit: "µs"})
		emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: "rtt_p90_us", X: float64(size), Y: us(st.P90), Unit: "µs"})
		note(emit, "info", say(fmt.Sprintf("%s: median %.1f µs round trip (10th–90th percentile %.1f–%.1f µs, p99 %.1f), CPU per round trip (all %d round trips): client %.1f µs, server %.1f µs",
			human(int64(size)), us(st.Median), us(st.P10), us(st.P90), us(st.P99), iters, us(st.ClientCPU), us(st.ServerCPU)),
			fmt.Sprintf("%s：往返中位数 %.1f µs（第 10–90 百分位 %.1f–%.1f µs，p99 %.1f），每次往返的 CPU 时间（全部 %d 次往返平均）：客户端 %.1f µs，服务端 %.1f µs",
				human(int64(size)), us(st.Median), us(st.P10), us(st.P90), us(st.P99), iters, us(st.ClientCPU), us(st.ServerCPU))))
	}
	if err := end.goodbye(false); err != nil {
		return err
	}
	if err := srv.wait(); err != nil {
		return err
	}
	return reportPingpong(emit, tr, mode, iters, top, stats)
}

func ppName(tr, mode string) string {
	switch tr {
	case trTCP:
		return "kernel TCP"
	case trSend:
		return "RDMA SEND/RECV, " + map[string]string{mPoll: "polling", mEvent: "events"}[mode]
	}
	return "RDMA WRITE, " + map[string]string{mPoll: "polling", mEvent: "events"}[mode]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func median(d []time.Duration) time.Duration { return percentile(d, 50) }

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

func summarize(size int, rtts []time.Duration) sizeStats {
	if len(rtts) == 0 {
		return sizeStats{Size: size}
	}
	return sizeStats{Size: size, Median: percentile(rtts, 50), P10: percentile(rtts, 10), P90: percentile(rtts, 90), P99: percentile(rtts, 99), Min: slices.Min(rtts)}
}

// threadCPU is the calling OS thread's CPU time (user + system) from its
// CPU-time clock. Not getrusage(RUSAGE_THREAD): that reads the scheduler's
// runtime as of the last tick or context switch, so a thread that spins
// without being switched out reads no time at all between ticks (seen: a
// polling client charged 0.0 µs per 41 µs round trip, batches of 1.2 ms
// under a 4 ms tick). CLOCK_THREAD_CPUTIME_ID brings the running thread's
// runtime up to date before it answers — up to the scheduler's clock,
// which in the lab's guest runs in steps (see cpuPerRT).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// emulated reports whether the CPU is QEMU's TCG emulation.
func emulated() bool {
	b, err := os.ReadFile("/proc/cpuinfo")
	return err == nil && strings.Contains(string(b), "TCG")
}

func reportPingpong(emit sandbox.Emitter, tr, mode string, iters int, top topology, stats []sizeStats) error {
	t := sandbox.NewTable(say("round trips: "+ppName(tr, mode), "往返："+ppNameZh(tr, mode)),
		say("size", "大小"), say("median RTT µs", "往返中位数 µs"), say("10th–90th pct µs", "第 10–90 百分位 µs"), say("p99 RTT µs", "往返 p99 µs"),
		say("one-way µs (median/2)", "单程 µs（中位数/2）"), say("client CPU µs/RT", "客户端 CPU µs/往返"), say("server CPU µs/RT", "服务端 CPU µs/往返"))
	figs := map[string]float64{"iterations": float64(iters)}
	for _, s := range stats {
		t.AddRow(sandbox.Same(human(int64(s.Size))), sandbox.Same(f1(us(s.Median))), sandbox.Same(f1(us(s.P10))+"–"+f1(us(s.P90))), sandbox.Same(f1(us(s.P99))),
			sandbox.Same(f1(us(s.Median)/2)), sandbox.Same(f1(us(s.ClientCPU))), sandbox.Same(f1(us(s.ServerCPU))))
		key := fmt.Sprint(s.Size)
		figs["median_us_"+key] = us(s.Median)
		figs["p90_us_"+key] = us(s.P90)
		figs["p99_us_"+key] = us(s.P99)
		figs["cpu_us_"+key] = us(s.ClientCPU + s.ServerCPU)
	}
	first := stats[0]
	figs["median_us"], figs["p90_us"], figs["p99_us"] = us(first.Median), us(first.P90), us(first.P99)
	figs["client_cpu_us"], figs["server_cpu_us"] = us(first.ClientCPU), us(first.ServerCPU)
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
	emu := emulated()
	here := say("measured here (Soft-RoCE guest): ", "本次测得（Soft-RoCE 虚拟机）：")
	if emu {
		here = say("measured here (emulated TCG guest): ", "本次测得（TCG 模拟的虚拟机）：")
	}
	ref := sandbox.NewTable(say("hardware reference beside this run", "硬件参考与本次运行"), say("path", "路径"), say("one-way latency", "单程延迟"))
	ref.AddRow(say("kernel TCP, data centre (reference)", "数据中心内核 TCP（参考）"), sandbox.Same("10–25 µs"))
	ref.AddRow(say("RDMA on an InfiniBand or RoCE NIC (reference)", "InfiniBand 或 RoCE 硬件网卡上的 RDMA（参考）"), sandbox.Same("1–3 µs"))
	ref.AddRow(say(here["en"]+ppName(tr, mode)+", "+human(int64(first.Size)), here["zh"]+ppNameZh(tr, mode)+"，"+human(int64(first.Size))), sandbox.Same(f1(us(first.Median)/2)+" µs"))
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: ref})

	oneWay := us(first.Median) / 2
	why := say("Soft-RoCE is a NIC written in software: every RDMA packet is built, copied and checksummed by this machine's kernel, so it cannot reach hardware latency; it shows who waits and who is woken, not how fast silicon is.",
		"Soft-RoCE 是用软件写的网卡：每个 RDMA 报文都由本机内核构造、拷贝并计算校验，因此达不到硬件时延；它展示的是谁在等、谁被唤醒，而不是芯片能有多快。")
	if emu {
		why = say(why["en"]+" This guest's CPU is emulated (QEMU TCG), which slows everything — kernel TCP included: the TCP preset measures its one-way time in this guest, against about 10–25 µs on real data-centre hardware (half the 20–50 µs round trip of ping-pong benchmarks). A ratio between two transports measured here compares rxe's software with kernel TCP's software; it does not predict the ratio on hardware.",
			why["zh"]+"这台虚拟机的 CPU 是模拟出来的（QEMU TCG），一切都被拖慢——内核 TCP 也一样：TCP 预设会测出它在这台虚拟机里的单程时间，而真实数据中心硬件上约为 10–25 µs（乒乓测试测得往返 20–50 µs 的一半）。这里测得的两种传输之间的比例，比较的是 rxe 的软件和内核 TCP 的软件，并不能预测硬件上的比例。")
	}
	note(emit, "info", why)
	cpuNote := say(fmt.Sprintf("CPU per round trip is each side's thread CPU time (user + system, from the thread's CPU-time clock, clock_gettime(CLOCK_THREAD_CPUTIME_ID)) over all %d round trips of a size, divided by %d, so round trips slowed by the rest of the machine count too. A side that polls spins while it waits, slow round trips included, so its CPU per round trip is close to the whole round trip; a side that sleeps is charged only for the work it does. Soft-RoCE's packet work is charged to the thread whose write() doorbell starts it, or runs in the kernel elsewhere and is not counted.", iters, iters),
		fmt.Sprintf("每次往返的 CPU 是每一端线程在某个大小全部 %d 次往返中的 CPU 时间（用户态 + 内核态，来自线程的 CPU 时间时钟 clock_gettime(CLOCK_THREAD_CPUTIME_ID)），再除以 %d，所以被机器上其他负载拖慢的往返也算在内。轮询的一端在等待时一直空转，慢的往返也不例外，所以它每次往返的 CPU 接近整个往返时间；睡眠的一端只为它做的工作计时。Soft-RoCE 处理报文的工作，要么记在敲 write() 门铃的那个线程头上，要么在内核别处运行、不计入。", iters, iters))
	if emu {
		cpuNote = say(cpuNote["en"]+" In this emulated guest the kernel does not trust the TSC, and a thread's CPU clock advances in steps of milliseconds: where a size's round trips take only a few milliseconds in all, its CPU figure is rough.",
			cpuNote["zh"]+"在这台模拟的虚拟机里，内核不信任 TSC，线程的 CPU 时钟以毫秒为步长前进：某个大小的全部往返加起来只有几毫秒时，它的 CPU 数字只是粗略值。")
	}
	note(emit, "info", cpuNote)

	size := human(int64(first.Size))
	cpuC, cpuS := us(first.ClientCPU), us(first.ServerCPU)
	var claim sandbox.Text
	switch {
	case tr == trTCP:
		claim = say(fmt.Sprintf("Kernel TCP: %.1f µs one way (median) for %s; CPU per round trip %.1f µs on the client and %.1f µs on the server. Each message is a write() into the socket and a read() that sleeps until the kernel's TCP stack wakes the reader. Compare with SEND/RECV using completion events, where the reader also sleeps.", oneWay, size, cpuC, cpuS),
			fmt.Sprintf("内核 TCP：%s 消息单程 %.1f µs（中位数）；每次往返的 CPU，客户端 %.1f µs，服务端 %.1f µs。每条消息都是一次写进套接字的 write()，加一次睡着等内核 TCP 协议栈唤醒的 read()。请与“SEND/RECV + 完成事件”对比，那里读方同样睡眠。", size, oneWay, cpuC, cpuS))
	case mode == mEvent:
		what := say("a SEND that consumes a RECV the peer posted in advance", "一个消耗对端预先投递的 RECV 的 SEND")
		if tr == trWrite {
			what = say("a WRITE with immediate, which consumes a RECV and completes at the peer", "一个带立即数的 WRITE，它消耗一个 RECV 并在对端产生完成")
		}
		claim = say(fmt.Sprintf("%s: %.1f µs one way (median) for %s; CPU per round trip %.1f µs on the client and %.1f µs on the server. Each message is %s; the receiving thread sleeps on its completion channel and is woken — like TCP's reader — but there is no socket and no TCP stack in the path. On Soft-RoCE the post is still a write() system call and the kernel moves the bytes; on a hardware RNIC the post is an MMIO store and the NIC moves them.", ppName(tr, mode), oneWay, size, cpuC, cpuS, what["en"]),
			fmt.Sprintf("%s：%s 消息单程 %.1f µs（中位数）；每次往返的 CPU，客户端 %.1f µs，服务端 %.1f µs。每条消息是%s；接收线程睡在完成通道上、再被唤醒——和 TCP 的读方一样——但路径上没有套接字，也没有 TCP 协议栈。在 Soft-RoCE 上，投递仍是一次 write() 系统调用，字节由内核搬运；在硬件网卡上，投递只是一次 MMIO 写，字节由网卡搬运。", ppNameZh(tr, mode), size, oneWay, cpuC, cpuS, what["zh"]))
	case tr == trSend:
		claim = say(fmt.Sprintf("%s: %.1f µs one way (median) for %s; CPU per round trip %.1f µs on the client and %.1f µs on the server — both sides spin on their completion queue, so nobody sleeps or is woken, and each side spends a core while it waits. The peer must have posted a RECV for every message. Polling is a different trade from TCP's sleeping reader; compare it with the events run too.", ppName(tr, mode), oneWay, size, cpuC, cpuS),
			fmt.Sprintf("%s：%s 消息单程 %.1f µs（中位数）；每次往返的 CPU，客户端 %.1f µs，服务端 %.1f µs——两端都在完成队列上空转，谁也不睡、谁也不被唤醒，等待期间各占一个核。对端必须为每条消息预先投递 RECV。轮询和 TCP 读方的睡眠是不同的取舍；也请与事件模式的结果对比。", ppNameZh(tr, mode), size, oneWay, cpuC, cpuS))
	default:
		claim = say(fmt.Sprintf("%s: %.1f µs one way (median) for %s; CPU per round trip %.1f µs on the client and %.1f µs on the server. Each side WRITEs straight into the other's registered memory and spins on the message's last byte until the peer's WRITE lands: no RECV, no completion at the receiver, no sleep, no wakeup — and a spinning core on each side. Polling is a different trade from TCP's sleeping reader. Watching the last byte is what perftest's ib_write_lat does, and it works in practice on rxe and on ConnectX NICs, which place a WRITE's bytes in order; the IB specification does not promise that order, so the portable signal is RDMA WRITE with immediate, whose completion at the receiver comes only once all the data is placed.", ppName(tr, mode), oneWay, size, cpuC, cpuS),
			fmt.Sprintf("%s：%s 消息单程 %.1f µs（中位数）；每次往返的 CPU，客户端 %.1f µs，服务端 %.1f µs。每一端都把数据直接 WRITE 进对方注册的内存，并在消息最后一个字节上空转，直到对方的 WRITE 到达：没有 RECV，接收方没有完成，没有睡眠也没有唤醒——代价是每一端都有一个核在空转。轮询和 TCP 读方的睡眠是不同的取舍。盯着最后一个字节正是 perftest 的 ib_write_lat 的做法，在 rxe 和按顺序放置 WRITE 字节的 ConnectX 网卡上实际都行得通；但 IB 规范并不保证这个顺序，可移植的信号是带立即数的 RDMA WRITE：它在接收方的完成要等全部数据放好之后才出现。", ppNameZh(tr, mode), size, oneWay, cpuC, cpuS))
	}
	result(emit, first.Median > 0, claim, figs)
	return nil
}

func f1(v float64) string { return fmt.Sprintf("%.1f", v) }

// ppEnd is one side of the ping-pong: a TCP socket or an RC QP.
type ppEnd struct {
	tr, mode    string
	max         int
	fd          int      // TCP: blocking socket, read/write like a C program
	file        *os.File // owns fd
	tcpBuf      []byte   // receive area, then send area
	conn        net.Conn
	r           *rc
	remote      verbs.Endpoint
	outstanding int
	wcs         []verbs.WC
	recvs       int // RECVs to keep posted
}

// newPPEnd sets up one side over conn (the TCP connection that is the data
// path for TCP and the out-of-band channel for RDMA).
func newPPEnd(ctx context.Context, s side, tr, mode string, maxSize int, conn net.Conn, server bool) (e *ppEnd, err error) {
	e = &ppEnd{tr: tr, mode: mode, max: maxSize, conn: conn, wcs: make([]verbs.WC, 16)}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	if tr == trTCP {
		tc := conn.(*net.TCPConn)
		if err := tc.SetNoDelay(true); err != nil {
			return nil, err
		}
		if e.file, err = tc.File(); err != nil { // a dup, in blocking mode
			return nil, err
		}
		e.fd = int(e.file.Fd())
		e.tcpBuf = make([]byte, 2*maxSize)
		return e, e.handshake(server)
	}
	event := mode == mEvent
	e.recvs = 32
	if tr == trWrite && !event {
		e.recvs = 0 // the peer's WRITE raises no completion here: we watch memory
	}
	if e.r, err = openRC(rcOpts{Side: s, BufSize: 2 * maxSize, Access: verbs.AccessLocalWrite | verbs.AccessRemoteWrite,
		Event: event, SendWR: 64, RecvWR: 64, MaxInline: 256, RNRRetry: 7}); err != nil {
		return nil, err
	}
	if e.remote, err = verbs.Exchange(conn, e.r.local(), 10*time.Second); err != nil {
		return nil, err
	}
	if err := e.r.connect(e.remote); err != nil {
		return nil, err
	}
	for i := 0; i < e.recvs; i++ {
		if err := e.r.qp.PostRecv(uint64(i), e.r.mr, 0, maxSize); err != nil {
			return nil, err
		}
	}
	return e, e.handshake(server)
}

// handshake makes sure both sides are ready (RECVs posted) before the
// first ping: the server says "go", the client waits for it.
func (e *ppEnd) handshake(server bool) error {
	_ = e.conn.SetDeadline(time.Now().Add(20 * time.Second))
	defer e.conn.SetDeadline(time.Time{})
	b := []byte{'g'}
	if server {
		_, err := e.conn.Write(b)
		return err
	}
	_, err := io.ReadFull(e.conn, b)
	if err != nil {
		return fmt.Errorf("wait for the server: %w", err)
	}
	return nil
}

// goodbye keeps the server's QP alive until the client has every reply:
// the last replies may be unsignaled, so only the client knows they landed.
func (e *ppEnd) goodbye(server bool) error {
	if e.r != nil {
		if err := e.reapSends(0); err != nil {
			return err
		}
	}
	_ = e.conn.SetDeadline(time.Now().Add(20 * time.Second))
	defer e.conn.SetDeadline(time.Time{})
	b := []byte{'b'}
	var err error
	if server {
		_, err = io.ReadFull(e.conn, b)
	} else {
		_, err = e.conn.Write(b)
	}
	if err != nil {
		return fmt.Errorf("pingpong: closing handshake: %w", err)
	}
	return nil
}

// pinThread keeps the calling (locked) thread on one CPU and returns the
// undo. The client pins itself to the last CPU and the server to the first:
// two spinners that the scheduler happens to put on one vCPU take turns in
// whole time slices, and round trips jump from microseconds to
// milliseconds. Nothing is pinned on a single-CPU machine.
func pinThread(cpu int) func() {
	if runtime.NumCPU() < 2 {
		return func() {}
	}
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return func() {}
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return func() {}
	}
	return func() { _ = unix.SchedSetaffinity(0, &old) }
}

func marker(k int) byte { return byte(k%255) + 1 }

func (e *ppEnd) ping(ctx context.Context, k, size int) error {
	if err := e.send(k, size); err != nil {
		return err
	}
	return e.await(ctx, k, size)
}

func (e *ppEnd) pong(ctx context.Context, k, size int) error {
	if err := e.await(ctx, k, size); err != nil {
		return err
	}
	return e.send(k, size)
}

var errPeerSilent = errors.New("the peer stopped answering")

// send puts message k of size bytes on the wire.
func (e *ppEnd) send(k, size int) error {
	if e.tr == trTCP {
		b := e.tcpBuf[e.max : e.max+size] // TCP copies: the buffer is the message
		b[size-1] = marker(k)
		for off := 0; off < size; {
			n, err := unix.Write(e.fd, b[off:])
			if err != nil {
				return fmt.Errorf("write: %w", err)
			}
			off += n
		}
		return nil
	}
	buf := e.r.buf.Bytes()
	buf[e.max+size-1] = marker(k)
	// Signal one WRITE/SEND in 16, as perftest does: every completion costs
	// a poll, and an unsignaled request is retired by the next signaled one.
	signaled := k%16 == 15
	wr := verbs.SendWR{ID: uint64(k), MR: e.r.mr, Offset: e.max, Length: size}
	if signaled {
		wr.Flags = verbs.SendSignaled
	}
	if size <= e.r.qp.Caps().MaxInline {
		wr.Flags |= verbs.SendInline
	}
	switch {
	case e.tr == trSend:
		wr.Op = verbs.OpSend
	case e.mode == mEvent:
		wr.Op, wr.RemoteAddr, wr.RKey = verbs.OpWriteWithImm, e.remote.Addr, e.remote.RKey
	default:
		wr.Op, wr.RemoteAddr, wr.RKey = verbs.OpWrite, e.remote.Addr, e.remote.RKey
	}
	if err := e.r.qp.PostSend(wr); err != nil {
		return err
	}
	if !signaled {
		return nil
	}
	e.outstanding++
	return e.reapSends(1) // at most 2 × 16 requests in flight: the send queue never fills
}

// reapSends takes send completions off the CQ until at most limit are
// outstanding; limit -1 polls once without waiting.
func (e *ppEnd) reapSends(limit int) error {
	sw := spinWait{limit: 10 * time.Second, err: fmt.Errorf("send completions: %w", errCompletionTimeout)}
	for i := 0; ; i++ {
		n, err := e.r.sendCQ.Poll(e.wcs)
		e.r.polls++
		if err != nil {
			return err
		}
		for _, wc := range e.wcs[:n] {
			e.outstanding--
			if err := wc.Err(); err != nil {
				return err
			}
		}
		if limit < 0 || e.outstanding <= limit {
			return nil
		}
		if err := sw.check(i); err != nil {
			return err
		}
	}
}

// await waits for the peer's message k.
func (e *ppEnd) await(ctx context.Context, k, size int) error {
	if e.tr == trTCP {
		b := e.tcpBuf[:size]
		for off := 0; off < size; {
			n, err := unix.Read(e.fd, b[off:])
			if err != nil {
				return fmt.Errorf("read: %w", err)
			}
			if n == 0 {
				return errPeerSilent
			}
			off += n
		}
		return nil
	}
	// WRITE, polling: spin on the last byte, as perftest does. That relies on
	// the bytes of a WRITE landing in order, which rxe and ConnectX do but the
	// spec does not promise (WRITE_WITH_IMM is the portable signal).
	if e.recvs == 0 {
		want := uint32(marker(k))
		off := size - 1
		shift := uint(off&3) * 8
		sw := spinWait{ctx: ctx, limit: 10 * time.Second, err: errPeerSilent, yieldEvery: 512}
		for i := 0; (e.r.buf.Load32(off)>>shift)&0xff != want; i++ {
			if err := sw.check(i); err != nil {
				return err
			}
		}
		return nil
	}
	wc, err := e.r.waitCQ(ctx, e.r.recvCQ, 10*time.Second)
	if err != nil {
		return err
	}
	if err := wc.Err(); err != nil {
		return err
	}
	return e.r.qp.PostRecv(wc.WRID, e.r.mr, 0, e.max)
}

// Close frees the socket dup and every verbs object.
func (e *ppEnd) Close() error {
	if e.file != nil {
		e.file.Close()
	}
	if e.r != nil {
		return e.r.Close()
	}
	return nil
}

// pongHelper is the server process: it answers every ping and reports its
// CPU time per size.
func pongHelper(ctx context.Context, in io.Reader, out io.Writer) error {
	h := newHelperIO(in, out)
	var req pongReq
	if err := h.read(&req); err != nil {
		return err
	}
	if len(req.Sizes) == 0 || req.Iters <= 0 || slices.Max(req.Sizes) > 64<<10 || slices.Min(req.Sizes) < 2 {
		return h.fail(fmt.Errorf("bad pong request: sizes %v, %d iterations", req.Sizes, req.Iters))
	}
	l, err := verbs.Listen(req.Side.IP() + ":0")
	if err != nil {
		return h.fail(err)
	}
	defer l.Close()
	if err := h.reply(pongReady{Port: l.Addr().(*net.TCPAddr).Port, Pid: os.Getpid()}); err != nil {
		return err
	}
	wait := req.AcceptWait
	if wait <= 0 || wait > time.Minute {
		wait = 20 * time.Second
	}
	conn, err := verbs.Accept(ctx, l, wait)
	if err != nil {
		return h.fail(err)
	}
	defer conn.Close()
	e, err := newPPEnd(ctx, req.Side, req.Transport, req.Mode, slices.Max(req.Sizes), conn, true)
	if err != nil {
		return h.fail(err)
	}
	defer e.Close()
	runtime.LockOSThread()
	defer pinThread(0)()
	if req.ReportTID {
		if err := h.reply(pongTID{TID: unix.Gettid()}); err != nil {
			return err
		}
	}
	k := 0
	for _, size := range req.Sizes {
		for i := 0; i < req.Warmup; i++ {
			if err := e.pong(ctx, k, size); err != nil {
				return h.fail(err)
			}
			k++
		}
		cpu0, polls0 := threadCPU(), e.polls()
		for range req.Iters {
			if err := e.pong(ctx, k, size); err != nil {
				return h.fail(err)
			}
			k++
		}
		if err := h.reply(pongSize{Size: size, CPUNs: int64(threadCPU() - cpu0), Polls: e.polls() - polls0}); err != nil {
			return err
		}
	}
	if err := e.goodbye(true); err != nil {
		return h.fail(err)
	}
	return nil
}
