package hostexp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/sandbox"
)

// The experiment's id, the figures lesson pages read and the rule of thumb
// are the domain's (package rdmalab): web's calculator reads them too.
const (
	RuleGHzPerGbps = rdmalab.RuleGHzPerGbps
	TCPCostID      = rdmalab.TCPCostID
	FigGHzPerGbps  = rdmalab.TCPCostGHzPerGbps
	FigCPUGHz      = rdmalab.TCPCostCPUGHz
	FigMsgSize     = rdmalab.TCPCostMsgSize
)

// sampleEvery is the period of the live series.
const sampleEvery = 250 * time.Millisecond

// TCPCost is the experiment "what does moving data through the kernel
// cost?": a sender and a receiver thread stream over loopback TCP while we
// measure the bytes moved and each thread's CPU time.
func TCPCost() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    TCPCostID,
		Title: say("What does moving data through the kernel cost?", "通过内核搬运数据要花多少 CPU？"),
		Summary: say(
			"Streams data over TCP on loopback for a few seconds and measures the CPU time of the sending and the receiving thread: CPU GHz per Gbps, and the cores 100 and 400 Gbps would need at that cost.",
			"在本机回环上用 TCP 连续发送几秒数据，测量发送线程和接收线程各自的 CPU 时间：每 Gbps 需要多少 GHz CPU，以及按这个代价 100 和 400 Gbps 需要多少个核。"),
		Needs:   sandbox.NeedHost,
		Sharing: sandbox.Timing,
		Params: []sandbox.Param{
			{Name: "seconds", Kind: sandbox.ParamInt, Title: say("Duration", "时长"), Unit: "s",
				Help: say("How long to stream.", "持续发送多久。"), Min: 1, Max: 10, Default: int64(3)},
			{Name: "msg_size", Kind: sandbox.ParamBytes, Title: say("Message size", "消息大小"),
				Help: say("Bytes per write() call. Small messages pay the per-call cost more often.", "每次 write() 的字节数。消息越小，每次调用的固定开销付得越频繁。"),
				Min:  64, Max: 1 << 20, Default: int64(64 << 10)},
		},
		Presets: []sandbox.Preset{
			{ID: "bulk", Title: say("Bulk: 64 KiB writes", "大块：每次写 64 KiB"), Values: map[string]any{"seconds": 3, "msg_size": 64 << 10}},
			{ID: "small", Title: say("Small: 1 KiB writes", "小块：每次写 1 KiB"), Values: map[string]any{"seconds": 3, "msg_size": 1 << 10}},
			{ID: "tiny", Title: say("Tiny: 64 B writes", "极小：每次写 64 B"), Values: map[string]any{"seconds": 3, "msg_size": 64}},
		},
		Timeout: 30 * time.Second,
		Run:     runTCPCost,
	}
}

// side is one streaming thread: its id, and its CPU time over the timed window.
type side struct {
	tid   int
	cpu   time.Duration
	bytes int64
	err   error
}

func runTCPCost(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	secs := p["seconds"].(int64)
	size := p["msg_size"].(int64)

	phase(emit, "setup", say("Connecting a TCP sender and receiver over loopback", "在回环上建立 TCP 发送端和接收端"))
	sfd, rfd, err := loopbackPair()
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	defer unix.Close(rfd)
	clock, haveClock := readCPUClock()
	if haveClock {
		note(emit, "info", say(fmt.Sprintf("CPU clock %.2f GHz (from %s); %d CPUs online", clock.GHz, clock.Source, runtime.NumCPU()),
			fmt.Sprintf("CPU 主频 %.2f GHz（来自 %s）；在线 CPU %d 个", clock.GHz, clock.Source, runtime.NumCPU())))
	} else {
		note(emit, "warn", say("This machine states no CPU clock: cores are reported, GHz per Gbps is not.",
			"本机没有给出 CPU 主频：只报告核数，不报告每 Gbps 的 GHz。"))
	}
	note(emit, "info", say(fmt.Sprintf("sender and receiver are separate OS threads using blocking write()/read() of %s; Nagle on (the kernel default)", human(size)),
		fmt.Sprintf("发送方和接收方是两个独立的操作系统线程，用阻塞的 write()/read()，每次 %s；Nagle 开启（内核默认）", human(size))))

	var (
		snd, rcv   side
		received   atomic.Int64
		stop       atomic.Bool
		ready      = make(chan struct{}, 2)
		begin      = make(chan struct{})
		wg         sync.WaitGroup
		tidS, tidR atomic.Int64
	)
	wg.Add(2)
	go func() { // sender
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		snd.tid = unix.Gettid()
		tidS.Store(int64(snd.tid))
		ready <- struct{}{}
		<-begin
		c0, _ := threadCPU(snd.tid)
		buf := make([]byte, size)
		for !stop.Load() {
			n, err := unix.Write(sfd, buf)
			if err != nil {
				if err == unix.EINTR {
					continue
				}
				if !stop.Load() {
					snd.err = fmt.Errorf("write: %w", err)
				}
				break
			}
			snd.bytes += int64(n)
		}
		_ = unix.Shutdown(sfd, unix.SHUT_WR) // the receiver sees EOF after draining
		c1, _ := threadCPU(snd.tid)
		snd.cpu = c1 - c0
	}()
	go func() { // receiver
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		rcv.tid = unix.Gettid()
		tidR.Store(int64(rcv.tid))
		ready <- struct{}{}
		<-begin
		c0, _ := threadCPU(rcv.tid)
		buf := make([]byte, max(size, 256<<10))
		for {
			n, err := unix.Read(rfd, buf)
			if err != nil {
				if err == unix.EINTR {
					continue
				}
				if !stop.Load() {
					rcv.err = fmt.Errorf("read: %w", err)
				}
				break
			}
			if n == 0 {
				break
			}
			received.Add(int64(n))
		}
		c1, _ := threadCPU(rcv.tid)
		rcv.cpu = c1 - c0
	}()
	<-ready
	<-ready

	phase(emit, "stream", say(fmt.Sprintf("Streaming for %d s", secs), fmt.Sprintf("持续发送 %d 秒", secs)))
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t0 := time.Now()
	close(begin)
	sampleDone := make(chan struct{})
	go func() {
		defer close(sampleDone)
		sample(emit, t0, &received, int(tidS.Load()), int(tidR.Load()), &stop)
	}()

	timer := time.NewTimer(time.Duration(secs) * time.Second)
	defer timer.Stop()
	cancelled := false
	select {
	case <-timer.C:
		stop.Store(true)
	case <-ctx.Done():
		cancelled = true
	case <-done: // both ended early: an error, reported below
	}
	if cancelled {
		stop.Store(true)
		_ = unix.Shutdown(sfd, unix.SHUT_RDWR)
		_ = unix.Shutdown(rfd, unix.SHUT_RDWR)
	}
	<-done
	elapsed := time.Since(t0)
	stop.Store(true)
	<-sampleDone
	if cancelled {
		return ctx.Err()
	}
	if err := errors.Join(snd.err, rcv.err); err != nil {
		return fmt.Errorf("tcp-cost: %w", err)
	}

	phase(emit, "result", say("Working out the cost", "计算代价"))
	return report(emit, tcpResult{
		bytes: received.Load(), elapsed: elapsed, size: size,
		sendCPU: snd.cpu, recvCPU: rcv.cpu, clock: clock, haveClock: haveClock,
	})
}

// sample emits the live series until stop: throughput and each side's CPU%.
func sample(emit sandbox.Emitter, t0 time.Time, received *atomic.Int64, tidS, tidR int, stop *atomic.Bool) {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	lastT, lastB := t0, int64(0)
	lastS, _ := threadCPU(tidS)
	lastR, _ := threadCPU(tidR)
	for range tick.C {
		if stop.Load() {
			return
		}
		now := time.Now()
		b := received.Load()
		cs, errS := threadCPU(tidS)
		cr, errR := threadCPU(tidR)
		dt := now.Sub(lastT).Seconds()
		x := round(now.Sub(t0).Seconds(), 2)
		gbps := float64(b-lastB) * 8 / dt / 1e9
		emit.Emit(metric("throughput", x, round(gbps, 3), "Gbps", say("throughput", "吞吐")))
		if errS == nil && errR == nil { // a thread that already ended has no clock
			emit.Emit(metric("sender CPU", x, round((cs-lastS).Seconds()/dt*100, 1), "%", say("sender CPU", "发送端 CPU")))
			emit.Emit(metric("receiver CPU", x, round((cr-lastR).Seconds()/dt*100, 1), "%", say("receiver CPU", "接收端 CPU")))
		}
		lastT, lastB, lastS, lastR = now, b, cs, cr
	}
}

func metric(series string, x, y float64, unit string, label sandbox.Text) sandbox.Event {
	return sandbox.Event{Type: sandbox.EvMetric, Series: series, X: x, Y: y, Unit: unit, Messages: label}
}

type tcpResult struct {
	bytes            int64
	elapsed          time.Duration
	size             int64
	sendCPU, recvCPU time.Duration
	clock            cpuClock
	haveClock        bool
}

// report emits the result table and the verdict.
func report(emit sandbox.Emitter, r tcpResult) error {
	secs := r.elapsed.Seconds()
	gbps := float64(r.bytes) * 8 / secs / 1e9
	if r.bytes == 0 || gbps <= 0 {
		return errors.New("tcp-cost: no data arrived at the receiver")
	}
	cores := (r.sendCPU + r.recvCPU).Seconds() / secs // cores busy moving data
	coresPerGbps := cores / gbps
	figs := map[string]float64{
		"bytes": float64(r.bytes), "seconds": round(secs, 3), "gbps": round(gbps, 3),
		FigMsgSize:     float64(r.size),
		"sender_cpu_s": round(r.sendCPU.Seconds(), 3), "receiver_cpu_s": round(r.recvCPU.Seconds(), 3),
		"cores_busy": round(cores, 3),
		"cores_100g": round(coresPerGbps*100, 1), "cores_400g": round(coresPerGbps*400, 1),
	}
	t := sandbox.NewTable(say(fmt.Sprintf("TCP over loopback, %s writes", human(r.size)), fmt.Sprintf("经由回环的 TCP，每次 write %s", human(r.size))),
		say("measure", "测量项"), say("value", "数值"))
	same := sandbox.Same
	t.AddRow(say("bytes moved", "搬运的字节"), same(human(r.bytes)))
	t.AddRow(say("elapsed", "用时"), same(fmt.Sprintf("%.2f s", secs)))
	t.AddRow(say("throughput", "吞吐"), same(fmt.Sprintf("%.2f Gbps", gbps)))
	t.AddRow(say("sender CPU", "发送方 CPU"), say(fmt.Sprintf("%.2f s (%.0f%% of a core)", r.sendCPU.Seconds(), r.sendCPU.Seconds()/secs*100),
		fmt.Sprintf("%.2f s（一个核的 %.0f%%）", r.sendCPU.Seconds(), r.sendCPU.Seconds()/secs*100)))
	t.AddRow(say("receiver CPU", "接收方 CPU"), say(fmt.Sprintf("%.2f s (%.0f%% of a core)", r.recvCPU.Seconds(), r.recvCPU.Seconds()/secs*100),
		fmt.Sprintf("%.2f s（一个核的 %.0f%%）", r.recvCPU.Seconds(), r.recvCPU.Seconds()/secs*100)))
	var ghzPerGbps float64
	if r.haveClock {
		ghzPerGbps = coresPerGbps * r.clock.GHz
		figs[FigCPUGHz] = round(r.clock.GHz, 3)
		figs[FigGHzPerGbps] = round(ghzPerGbps, 4)
		figs["rule_ghz_per_gbps"] = RuleGHzPerGbps
		figs["rule_cores_100g"] = round(RuleGHzPerGbps*100/r.clock.GHz, 1)
		figs["rule_cores_400g"] = round(RuleGHzPerGbps*400/r.clock.GHz, 1)
		t.AddRow(say("CPU clock", "CPU 主频"), same(fmt.Sprintf("%.2f GHz (%s)", r.clock.GHz, r.clock.Source)))
		t.AddRow(say("GHz per Gbps (measured, both sides)", "每 Gbps 所需 GHz（实测，收发两端）"), same(fmt.Sprintf("%.3f", ghzPerGbps)))
		t.AddRow(say("GHz per Gbps (old rule of thumb, pre-offload)", "每 Gbps 所需 GHz（旧经验值，无卸载时代）"), same(fmt.Sprintf("~%.0f", RuleGHzPerGbps)))
		t.AddRow(say("cores for 100 Gbps, both hosts (measured / rule)", "100 Gbps 所需核数，两台主机合计（实测 / 经验值）"), same(fmt.Sprintf("%.1f / %.1f", figs["cores_100g"], figs["rule_cores_100g"])))
		t.AddRow(say("cores for 100 Gbps, per host (measured, lower bound)", "100 Gbps 所需核数，每台主机（实测，下限）"), same(fmt.Sprintf("%.1f", figs["cores_100g"]/2)))
		t.AddRow(say("cores for 400 Gbps, both hosts (measured / rule)", "400 Gbps 所需核数，两台主机合计（实测 / 经验值）"), same(fmt.Sprintf("%.1f / %.1f", figs["cores_400g"], figs["rule_cores_400g"])))
		t.AddRow(say("cores for 400 Gbps, per host (measured, lower bound)", "400 Gbps 所需核数，每台主机（实测，下限）"), same(fmt.Sprintf("%.1f", figs["cores_400g"]/2)))
	} else {
		t.AddRow(say("cores for 100 Gbps (measured)", "100 Gbps 所需核数（实测）"), same(fmt.Sprintf("%.1f", figs["cores_100g"])))
		t.AddRow(say("cores for 400 Gbps (measured)", "400 Gbps 所需核数（实测）"), same(fmt.Sprintf("%.1f", figs["cores_400g"])))
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})

	ok := true
	v := verdictTCP(gbps, cores, ghzPerGbps, figs, r)
	emit.Emit(sandbox.Event{Type: sandbox.EvResult, OK: &ok, Message: v["en"], Messages: v, Figures: figs})
	return nil
}

// verdictTCP says what this measurement implies, per host: on a network
// the sender and the receiver are two machines, each paying its own side.
// On loopback the receive-side stack often runs in the sender's softirq,
// so the split between the two threads is blurred; the per-host figure is
// half the sum. The figure is a lower bound: work the kernel does outside
// the two threads (softirq on another CPU, ksoftirqd) is not charged to them.
func verdictTCP(gbps, cores, ghzPerGbps float64, f map[string]float64, r tcpResult) sandbox.Text {
	size := human(r.size)
	perHost100 := f["cores_100g"] / 2
	perHost400 := f["cores_400g"] / 2
	f["cores_100g_per_host"] = round(perHost100, 1)
	f["cores_400g_per_host"] = round(perHost400, 1)
	head := say(
		fmt.Sprintf("Loopback TCP moved %.2f Gbps with %s writes; the sending thread used %.0f%% of a core and the receiving thread %.0f%%.", gbps, size, r.sendCPU.Seconds()/f["seconds"]*100, r.recvCPU.Seconds()/f["seconds"]*100),
		fmt.Sprintf("回环 TCP 以每次 %s 的写入跑出 %.2f Gbps；发送线程用了一个核的 %.0f%%，接收线程用了 %.0f%%。", size, gbps, r.sendCPU.Seconds()/f["seconds"]*100, r.recvCPU.Seconds()/f["seconds"]*100))
	if r.haveClock {
		head = say(head["en"]+fmt.Sprintf(" That is %.2f GHz of CPU per Gbps for both sides together (the old, pre-offload rule of thumb says ~1 GHz per Gbps).", ghzPerGbps),
			head["zh"]+fmt.Sprintf("两端合计每 Gbps %.2f GHz CPU（卸载普及之前的老经验是约 1 GHz/Gbps）。", ghzPerGbps))
	}
	var concl sandbox.Text
	switch {
	case perHost100 >= 2:
		concl = say(fmt.Sprintf(" At this cost each host of a 100 Gbps link would spend at least %.1f cores just moving data, and at 400 Gbps %.1f: cores that should run the application. That is the work RDMA hands to the NIC.", perHost100, perHost400),
			fmt.Sprintf("按这个代价，100 Gbps 链路两端的每台主机至少要花 %.1f 个核只用来搬数据，400 Gbps 时 %.1f 个：这些核本该跑业务。这正是 RDMA 交给网卡去做的工作。", perHost100, perHost400))
	case perHost400 >= 2:
		concl = say(fmt.Sprintf(" At this cost each host would spend at least %.1f cores at 100 Gbps — modest, thanks to large writes — but %.1f at 400 Gbps: the cost grows with the rate, which is where handing the moving to the NIC pays.", perHost100, perHost400),
			fmt.Sprintf("按这个代价，100 Gbps 时每台主机至少要花 %.1f 个核——写入块大，还算不多——但 400 Gbps 时要 %.1f 个：代价随速率增长，把搬运交给网卡的收益也在这里。", perHost100, perHost400))
	default:
		concl = say(fmt.Sprintf(" At this cost each host would need only %.1f cores even at 400 Gbps: with these writes on this machine the CPU-cost argument for RDMA is weak. Try smaller writes, and remember the figure is a lower bound.", perHost400),
			fmt.Sprintf("按这个代价，即使 400 Gbps，每台主机也只要 %.1f 个核：在这台机器上、用这样的写入，“CPU 搬不动”这条理由并不强。试试更小的写入，并记住这个数字是下限。", perHost400))
	}
	caveat := say(" Per host is half of both threads together: on loopback the receiving side's protocol work often runs in the sending thread, so the split between the two is not clean. It is a lower bound — kernel work outside the two threads (softirqs on another core) is not counted — and it was measured on the lab server, not in the Soft-RoCE guest.",
		"每台主机按两个线程合计的一半算：在回环上，接收端的协议处理常常在发送线程里完成，两者的划分并不干净。这是下限——两个线程之外的内核工作（另一个核上的软中断）没有计入——而且是在实验室服务器上测的，不是在 Soft-RoCE 虚拟机里。")
	return say(head["en"]+concl["en"]+caveat["en"], head["zh"]+concl["zh"]+caveat["zh"])
}

// loopbackPair returns two connected blocking TCP sockets on 127.0.0.1:
// blocking so that each thread's CPU time holds all of its kernel work,
// with no netpoller thread doing part of it.
func loopbackPair() (sender, receiver int, err error) {
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, -1, fmt.Errorf("tcp-cost: socket: %w", err)
	}
	defer unix.Close(lfd)
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return -1, -1, fmt.Errorf("tcp-cost: bind 127.0.0.1: %w", err)
	}
	if err := unix.Listen(lfd, 1); err != nil {
		return -1, -1, fmt.Errorf("tcp-cost: listen: %w", err)
	}
	sa, err := unix.Getsockname(lfd)
	if err != nil {
		return -1, -1, fmt.Errorf("tcp-cost: getsockname: %w", err)
	}
	sfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, -1, fmt.Errorf("tcp-cost: socket: %w", err)
	}
	if err := unix.Connect(sfd, sa); err != nil {
		unix.Close(sfd)
		return -1, -1, fmt.Errorf("tcp-cost: connect to loopback: %w", err)
	}
	rfd, _, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC)
	if err != nil {
		unix.Close(sfd)
		return -1, -1, fmt.Errorf("tcp-cost: accept: %w", err)
	}
	return sfd, rfd, nil
}

func round(f float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(f*p) / p
}
