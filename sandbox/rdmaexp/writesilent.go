package rdmaexp

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

const helperReceiver = "rdma-receiver"

// Modes of write-silent.
const (
	modeWrite    = "write"
	modeSendRecv = "send-recv"
	modeNoRecv   = "no-recv"
)

// WriteSilent is the experiment "a one-sided WRITE lands while the
// receiving process does not run": a receiver process registers a buffer,
// hands over its address and rkey, then sleeps in read(2) while the sender
// WRITEs into it. The receiving thread's exact run time (schedstat, ns) and
// voluntary context switches are the evidence; with SEND/RECV the same
// thread sleeps on the completion channel and is woken for every message.
// On Soft-RoCE the receiving host's kernel still does the NIC's work; the
// verdicts say so.
func WriteSilent() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "write-silent",
		Title: say("RDMA WRITE while the receiver sleeps", "接收方睡着时的 RDMA WRITE"),
		Summary: say(
			"A receiver process shares a buffer's address and rkey, then blocks in read(). The sender WRITEs messages into it; we watch the receiving thread's run time (to the nanosecond) and context switches (flat) beside the device's received packets (rising). Contrast: SEND/RECV, where the receiver sleeps until each completion event, and SEND to a peer that posted no RECV.",
			"接收进程交出缓冲区的地址和 rkey 后阻塞在 read() 里。发送方向它 WRITE 消息；我们对照观察接收线程的运行时间（精确到纳秒）和上下文切换（不动）与设备收到的报文数（上涨）。对照组：SEND/RECV（接收方睡着等每个完成事件），以及向没有投递 RECV 的对端 SEND。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Shareable,
		Params: []sandbox.Param{
			{Name: "mode", Kind: sandbox.ParamEnum, Title: say("Operation", "操作"), Default: modeWrite, Choices: []sandbox.Choice{
				{Value: modeWrite, Title: say("RDMA WRITE (one-sided)", "RDMA WRITE（单边）")},
				{Value: modeSendRecv, Title: say("SEND/RECV (two-sided: the receiver is woken for each completion)", "SEND/RECV（双边：每个完成都要唤醒接收方）")},
				{Value: modeNoRecv, Title: say("SEND with no RECV posted", "对端未投递 RECV 时 SEND")},
			}},
			{Name: "messages", Kind: sandbox.ParamInt, Title: say("Messages", "消息数"), Min: 1, Max: 100000, Default: int64(2000)},
			{Name: "size", Kind: sandbox.ParamBytes, Title: say("Message size", "消息大小"), Min: 16, Max: 64 << 10, Default: int64(4096)},
			{Name: "seconds", Kind: sandbox.ParamInt, Title: say("Spread over", "发送时长"), Unit: "s",
				Help: say("The sender paces the messages over this many seconds so the chart has time to show them.", "发送方把消息均匀分布在这段时间里，好让图表来得及显示。"),
				Min:  1, Max: 10, Default: int64(3)},
		},
		Presets: []sandbox.Preset{
			{ID: "write", Title: say("WRITE: receiver sleeps", "WRITE：接收方睡眠"), Values: map[string]any{"mode": modeWrite}},
			{ID: "send-recv", Title: say("SEND/RECV: receiver works", "SEND/RECV：接收方干活"), Values: map[string]any{"mode": modeSendRecv}},
			{ID: "no-recv", Title: say("no RECV posted", "未投递 RECV"), Values: map[string]any{"mode": modeNoRecv, "messages": 1}},
		},
		Timeout: 90 * time.Second,
		Run:     runWriteSilent,
	}
}

// recvReq configures the receiver process.
type recvReq struct {
	Side     side   `json:"side"`
	Mode     string `json:"mode"`
	Slots    int    `json:"slots"`
	Size     int    `json:"size"`
	Messages int    `json:"messages"`
}

type recvReady struct {
	Port int `json:"port"`
	Pid  int `json:"pid"`
}

// recvConnected: the receiver is connected, and TID is the thread that
// sleeps (in read(2), or on the completion channel for send-recv).
type recvConnected struct {
	TID int `json:"tid"`
}

// recvWake is the line that wakes the receiver from read(2).
type recvWake struct {
	Slot int `json:"slot"` // whose text to show
}

type recvDone struct {
	CRC         uint32 `json:"crc"`
	Bytes       int    `json:"bytes"`       // size of the buffer
	Sample      string `json:"sample"`      // start of the slot asked for
	Completions int    `json:"completions"` // RECV completions seen (send-recv)
	RecvBytes   int64  `json:"recv_bytes"`  // bytes those completions carried
}

// content is message i: a readable header, then a pattern.
func content(i, size int, from string) []byte {
	b := make([]byte, size)
	h := fmt.Sprintf("msg %06d from %s ", i, from)
	n := copy(b, h)
	for j := n; j < size; j++ {
		b[j] = byte('a' + (i+j)%26)
	}
	return b
}

// expectedBuffer is the receiver's buffer after messages 0…n-1 landed in
// slot i%slots.
func expectedBuffer(n, slots, size int, from string) []byte {
	b := make([]byte, slots*size)
	for s := 0; s < slots && s < n; s++ {
		last := s + (n-1-s)/slots*slots
		copy(b[s*size:], content(last, size, from))
	}
	return b
}

func runWriteSilent(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	mode := p["mode"].(string)
	n := int(p["messages"].(int64))
	size := int(p["size"].(int64))
	spread := time.Duration(p["seconds"].(int64)) * time.Second
	slots := min(n, 16)

	phase(emit, "setup", say("Starting the receiver process", "启动接收进程"))
	top, err := pickTopology()
	if err != nil {
		return err
	}
	note(emit, "info", top.describe())
	rcv, err := startChild(ctx, helperReceiver, recvReq{Side: top.Server, Mode: mode, Slots: slots, Size: size, Messages: n}, emit)
	if err != nil {
		return err
	}
	defer rcv.kill()
	var ready recvReady
	if err := rcv.recv(ctx, 30*time.Second, &ready); err != nil {
		return verbsError(emit, err)
	}
	opt := rcOpts{Side: top.Client, BufSize: slots * size, Access: verbs.AccessLocalWrite, SendWR: slots + 1, RecvWR: 1, MaxInline: 0}
	if mode == modeNoRecv {
		opt.RNRRetry = 3 // a few RNR retries, then give up: RNR retry exceeded
	}
	snd, err := openRC(opt)
	if err != nil {
		return verbsError(emit, err)
	}
	defer snd.Close()
	conn, err := verbs.Dial(ctx, fmt.Sprintf("%s:%d", top.Server.IP(), ready.Port), 10*time.Second)
	if err != nil {
		return fmt.Errorf("write-silent: reach the receiver: %w", err)
	}
	defer conn.Close()
	remote, err := verbs.Exchange(conn, snd.local(), 10*time.Second)
	if err != nil {
		return fmt.Errorf("write-silent: exchange QP numbers and rkey: %w", err)
	}
	note(emit, "info", say(fmt.Sprintf("receiver (pid %d) shared buffer addr 0x%x, length %d, rkey 0x%x, QPN 0x%x", ready.Pid, remote.Addr, remote.Len, remote.RKey, remote.QPN),
		fmt.Sprintf("接收方（pid %d）共享的缓冲区：地址 0x%x，长度 %d，rkey 0x%x，QPN 0x%x", ready.Pid, remote.Addr, remote.Len, remote.RKey, remote.QPN)))
	if err := snd.connect(remote); err != nil {
		return verbsError(emit, err)
	}
	var rconn recvConnected
	if err := rcv.recv(ctx, 30*time.Second, &rconn); err != nil { // receiver connected and about to sleep
		return verbsError(emit, err)
	}
	time.Sleep(100 * time.Millisecond) // let the receiver reach read(2) or its first wait

	base, err := snapshot(ready.Pid, rconn.TID, top)
	if err != nil {
		return err
	}
	phase(emit, "send", map[string]sandbox.Text{
		modeWrite:    say(fmt.Sprintf("WRITE %d × %s into the receiver's buffer", n, human(int64(size))), fmt.Sprintf("向接收方缓冲区 WRITE %d × %s", n, human(int64(size)))),
		modeSendRecv: say(fmt.Sprintf("SEND %d × %s to the receiver's posted RECVs", n, human(int64(size))), fmt.Sprintf("向接收方投递的 RECV 发送 %d × %s", n, human(int64(size)))),
		modeNoRecv:   say("SEND to a receiver that posted no RECV", "向没有投递 RECV 的接收方 SEND"),
	}[mode])
	smp := startSampler(ctx, emit, ready.Pid, rconn.TID, top, base)
	sent, wcFail, sendErr := sendPaced(ctx, snd, remote, mode, n, slots, size, spread, top.Client.Dev)
	time.Sleep(300 * time.Millisecond) // the chart keeps running: nothing moves after the sender stops
	smp.stop()
	if sendErr != nil {
		return verbsError(emit, sendErr)
	}
	end, err := snapshot(ready.Pid, rconn.TID, top)
	if err != nil {
		return err
	}

	phase(emit, "wake", say("Waking the receiver to look at its buffer", "唤醒接收方查看它的缓冲区"))
	if err := rcv.send(recvWake{Slot: max(sent-1, 0) % slots}); err != nil {
		return err
	}
	var done recvDone
	if err := rcv.recv(ctx, 30*time.Second, &done); err != nil {
		return verbsError(emit, err)
	}
	if err := rcv.wait(); err != nil {
		return err
	}
	return reportWriteSilent(emit, wsOutcome{mode: mode, n: n, sent: sent, size: size, slots: slots, top: top,
		base: base, end: end, done: done, wcFail: wcFail})
}

// sendPaced posts the messages spread over the given time and reaps their
// completions. It stops at the first failed completion (the QP is then in
// the error state) and returns it.
func sendPaced(ctx context.Context, snd *rc, remote verbs.Endpoint, mode string, n, slots, size int, spread time.Duration, from string) (sent int, fail *verbs.WC, err error) {
	wcs := make([]verbs.WC, 16)
	outstanding := 0
	reap := func(block bool) error {
		deadline := time.Now().Add(30 * time.Second)
		for {
			k, err := snd.sendCQ.Poll(wcs)
			if err != nil {
				return err
			}
			for _, wc := range wcs[:k] {
				outstanding--
				if wc.Status != verbs.WCSuccess && fail == nil {
					w := wc
					fail = &w
				}
			}
			if k > 0 || !block || fail != nil {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("write-silent: %w", errCompletionTimeout)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	start := time.Now()
	op := verbs.OpWrite
	if mode != modeWrite {
		op = verbs.OpSend
	}
	for i := 0; i < n && fail == nil; i++ {
		if d := time.Until(start.Add(spread * time.Duration(i) / time.Duration(n))); d > time.Millisecond {
			time.Sleep(d)
		}
		for outstanding >= slots && fail == nil {
			if err := reap(true); err != nil {
				return sent, fail, err
			}
		}
		if fail != nil {
			break
		}
		slot := i % slots
		copy(snd.buf.Bytes()[slot*size:(slot+1)*size], content(i, size, from))
		wr := verbs.SendWR{ID: uint64(i), Op: op, Flags: verbs.SendSignaled, MR: snd.mr, Offset: slot * size, Length: size}
		if op == verbs.OpWrite {
			wr.RemoteAddr, wr.RKey = remote.Addr+uint64(slot*size), remote.RKey
		}
		if err := snd.qp.PostSend(wr); err != nil {
			return sent, fail, err
		}
		outstanding++
		sent++
		if err := reap(false); err != nil {
			return sent, fail, err
		}
	}
	for outstanding > 0 && fail == nil {
		if err := reap(true); err != nil {
			return sent, fail, err
		}
	}
	return sent, fail, nil
}

// wsSnap is the state the experiment compares before and after sending.
type wsSnap struct {
	recv   procCPU
	thread threadSched // the receiving thread
	srvCnt map[string]int64
	cliCnt map[string]int64
	kernel kernelCPU
	at     time.Time
}

func snapshot(pid, tid int, top topology) (wsSnap, error) {
	var s wsSnap
	var err error
	s.at = time.Now()
	if s.recv, err = readProcCPU(pid); err != nil {
		return s, err
	}
	if s.thread, err = readThreadSched(pid, tid); err != nil {
		return s, err
	}
	if s.srvCnt, err = verbs.Counters(top.Server.Dev, 1); err != nil {
		return s, err
	}
	if s.cliCnt, err = verbs.Counters(top.Client.Dev, 1); err != nil {
		return s, err
	}
	s.kernel, _ = readKernelCPU()
	return s, nil
}

type sampler struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startSampler streams, every 100 ms, the receiver's CPU time and voluntary
// context switches and the server device's received packets since base.
func startSampler(ctx context.Context, emit sandbox.Emitter, pid, tid int, top topology, base wsSnap) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{cancel: cancel}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				x := now.Sub(base.at).Seconds()
				if c, err := readProcCPU(pid); err == nil {
					emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: "receiver_cpu_ms", X: x, Y: float64((c.Ticks() - base.recv.Ticks()) * 1000 / clkTck), Unit: "ms",
						Messages: say("receiver's CPU time", "接收方进程的 CPU 时间")})
				}
				if th, err := readThreadSched(pid, tid); err == nil {
					// The receiving thread's switches: /proc/pid/status only
					// counts the main thread, which is not the one that waits.
					emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: "receiver_voluntary_cs", X: x, Y: float64(th.VoluntaryCS - base.thread.VoluntaryCS), Unit: "switches",
						Messages: say("receiving thread's context switches (woken up)", "接收线程的上下文切换（被唤醒）")})
					// ms like the process's tick-based CPU time beside it, but
					// exact: a single microsecond of running shows.
					emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: "receiver_thread_run_ms", X: x, Y: float64(th.RunNs-base.thread.RunNs) / 1e6, Unit: "ms",
						Messages: say("receiving thread's run time (schedstat)", "接收线程的运行时间（schedstat）")})
				}
				if m, err := verbs.Counters(top.Server.Dev, 1); err == nil {
					emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: top.Server.Dev + "_rcvd_pkts", X: x, Y: float64(m["rcvd_pkts"] - base.srvCnt["rcvd_pkts"]), Unit: "packets",
						Messages: say("packets received by "+top.Server.Dev, top.Server.Dev+" 收到的包")})
				}
			}
		}
	}()
	return s
}

func (s *sampler) stop() {
	s.cancel()
	s.wg.Wait()
}

type wsOutcome struct {
	mode                 string
	n, sent, size, slots int
	top                  topology
	base, end            wsSnap
	done                 recvDone
	wcFail               *verbs.WC
}

func reportWriteSilent(emit sandbox.Emitter, o wsOutcome) error {
	dTicks := o.end.recv.Ticks() - o.base.recv.Ticks()
	thRun := o.end.thread.RunNs - o.base.thread.RunNs
	thVol := o.end.thread.VoluntaryCS - o.base.thread.VoluntaryCS
	dPkts := o.end.srvCnt["rcvd_pkts"] - o.base.srvCnt["rcvd_pkts"]
	dKernel := (o.end.kernel.System + o.end.kernel.SoftIRQ) - (o.base.kernel.System + o.base.kernel.SoftIRQ)
	secs := o.end.at.Sub(o.base.at).Seconds()

	// counters that moved, on both devices
	t := sandbox.NewTable(say("device counters that moved", "变化了的设备计数器"), say("device", "设备"), say("counter", "计数器"), say("before", "之前"), say("after", "之后"), say("delta", "变化"))
	for _, d := range []struct {
		dev       string
		from, to  map[string]int64
		duplicate bool
	}{{o.top.Server.Dev, o.base.srvCnt, o.end.srvCnt, false}, {o.top.Client.Dev, o.base.cliCnt, o.end.cliCnt, !o.top.Wire()}} {
		if d.duplicate {
			continue
		}
		names := make([]string, 0, len(d.to))
		for k := range d.to {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if d.to[k] != d.from[k] {
				t.AddRow(sandbox.Same(d.dev), sandbox.Same(k), sandbox.Same(fmt.Sprint(d.from[k])), sandbox.Same(fmt.Sprint(d.to[k])), sandbox.Same(fmt.Sprint(d.to[k]-d.from[k])))
			}
		}
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})

	figs := map[string]float64{
		"messages": float64(o.n), "sent": float64(o.sent), "size": float64(o.size), "seconds": secs,
		"receiver_cpu_ticks": float64(dTicks), "receiver_cpu_ms": float64(dTicks * 1000 / clkTck),
		"receiver_voluntary_cs": float64(o.end.thread.VoluntaryCS - o.base.thread.VoluntaryCS), "rcvd_pkts": float64(dPkts),
		"machine_kernel_ms":      float64(dKernel * 1000 / clkTck),
		"receiver_thread_run_ns": float64(thRun), "receiver_thread_voluntary_cs": float64(thVol),
	}
	cli := o.end.cliCnt
	if !o.top.Wire() {
		cli = o.end.srvCnt
	}
	cliBase := o.base.cliCnt
	if !o.top.Wire() {
		cliBase = o.base.srvCnt
	}
	figs["rcvd_rnr_err"] = float64(cli["rcvd_rnr_err"] - cliBase["rcvd_rnr_err"])

	honest := say(fmt.Sprintf("Honesty: Soft-RoCE is software. Whatever the receiving process did, this machine's kernel did the NIC's work — building and parsing packets, copying payloads, computing the ICRC: %d ms of kernel time across the machine while the messages flowed. A hardware RNIC does that work in silicon, with no CPU on the receiving host.", dKernel*1000/clkTck),
		fmt.Sprintf("说句老实话：Soft-RoCE 是软件。无论接收进程做了什么，网卡的活都由本机内核干了——构造和解析报文、拷贝数据、计算 ICRC：消息传输期间全机内核时间 %d ms。硬件 RDMA 网卡用芯片完成这些工作，接收端主机的 CPU 不参与。", dKernel*1000/clkTck))

	switch o.mode {
	case modeNoRecv:
		if o.wcFail == nil {
			v := say("Every SEND completed although the receiver posted no RECV — not what RC promises; the device did not report RNR.", "接收方没有投递 RECV，所有 SEND 却都完成了——这不符合 RC 的语义；设备没有报告 RNR。")
			result(emit, false, v, figs)
			return nil
		}
		figs["wc_status"] = float64(o.wcFail.Status)
		why := say("The receiver had no RECV posted, so its side answered every SEND with “receiver not ready” (RNR NAK); after the allowed retries the sender's QP gave up and moved to the error state.",
			"接收方没有投递 RECV，它对每个 SEND 都回复“接收方未就绪”（RNR NAK）；重试次数用完后，发送方 QP 放弃并进入错误状态。")
		wcError(emit, *o.wcFail, why)
		ok := o.wcFail.Status == verbs.WCRNRRetryExcErr
		v := say(fmt.Sprintf("SEND needs a RECV posted by the peer: with none, the completion was %s (%s) and %s counted %d RNR NAKs (rcvd_rnr_err). Two-sided operations need the receiver's cooperation; WRITE does not.",
			o.wcFail.Status, o.wcFail.Status.Description(), o.top.Client.Dev, int64(figs["rcvd_rnr_err"])),
			fmt.Sprintf("SEND 需要对端先投递 RECV：没有 RECV 时，完成状态是 %s（%s），%s 记录了 %d 次 RNR NAK（rcvd_rnr_err）。双边操作需要接收方配合，WRITE 不需要。",
				o.wcFail.Status, wcStatusZh(o.wcFail.Status), o.top.Client.Dev, int64(figs["rcvd_rnr_err"])))
		result(emit, ok, v, figs)
		return nil
	}

	if o.wcFail != nil {
		wcError(emit, *o.wcFail, say("A message did not complete.", "有消息没有完成。"))
		// wcError explained it: the agent must not add a generic event.
		return sandbox.Reported(fmt.Errorf("write-silent: message %d completed with %s", o.wcFail.WRID, o.wcFail.Status))
	}
	want := expectedBuffer(o.sent, o.slots, o.size, o.top.Client.Dev)
	match := crc32.ChecksumIEEE(want) == o.done.CRC && o.done.Bytes == len(want)
	figs["bytes_match"] = b2f(match)
	figs["bytes"] = float64(o.sent * o.size)
	sample := strings.TrimRight(o.done.Sample, "\x00")
	note(emit, "info", say(fmt.Sprintf("The receiver woke up and found in its buffer: %q… (%d bytes checked, match: %v)", sample, o.done.Bytes, match),
		fmt.Sprintf("接收方醒来，在缓冲区里看到：“%s”……（校验 %d 字节，一致：%s）", quotedInner(sample), o.done.Bytes, yesNoIn(match, "zh"))))

	if o.mode == modeSendRecv {
		figs["receiver_completions"] = float64(o.done.Completions)
		perMsg := float64(thRun) / 1e3 / float64(max(o.sent, 1))
		v := say(fmt.Sprintf("With SEND/RECV the receiver had to take part: for %d messages its thread was woken %d times (voluntary context switches) by completion events and ran %.0f µs in all (%.1f µs per message, from schedstat) to take %d completions and post the RECVs again (%d packets arrived). That per-message work of the receiving process is what one-sided WRITE removes. The receiver slept between messages here; a receiver that busy-polls instead spends a whole core, whatever the traffic.",
			o.sent, thVol, float64(thRun)/1e3, perMsg, o.done.Completions, dPkts),
			fmt.Sprintf("用 SEND/RECV 时接收方必须参与：%d 条消息，它的线程被完成事件唤醒了 %d 次（自愿上下文切换），一共运行 %.0f µs（每条消息 %.1f µs，来自 schedstat），取走 %d 个完成并重新投递 RECV（到达 %d 个报文）。单边 WRITE 去掉的正是接收进程这份逐条消息的工作。这里接收方在消息之间是睡着的；如果改成忙轮询，不管有没有流量，它都要占满一个核。",
				o.sent, thVol, float64(thRun)/1e3, perMsg, o.done.Completions, dPkts))
		result(emit, match && o.done.Completions == o.sent && thRun > 0 && thVol > 0, v, figs)
		note(emit, "info", honest)
		return nil
	}
	ok := thRun == 0 && thVol == 0 && dPkts >= int64(o.sent) && match
	var v sandbox.Text
	if thRun == 0 && thVol == 0 {
		v = say(fmt.Sprintf("%d RDMA WRITEs (%s) landed in the receiver's memory while it slept in read(): the sleeping thread ran exactly %d ns (schedstat) and made %d voluntary context switches — it was never woken — while %s received %d packets. The whole process was charged +%d ticks of 10 ms. The bytes are there: a one-sided WRITE does not need the receiving process.",
			o.sent, human(int64(o.sent*o.size)), thRun, thVol, o.top.Server.Dev, dPkts, dTicks),
			fmt.Sprintf("接收方睡在 read() 里时，%d 次 RDMA WRITE（%s）写进了它的内存：睡着的线程恰好运行了 %d ns（schedstat），自愿上下文切换 %d 次——它从未被唤醒——而 %s 收到了 %d 个报文。整个进程被记了 +%d 个 10 ms 的时钟滴答。字节都在：单边 WRITE 不需要接收进程参与。",
				o.sent, human(int64(o.sent*o.size)), thRun, thVol, o.top.Server.Dev, dPkts, dTicks))
	} else {
		v = say(fmt.Sprintf("The receiving thread ran %d ns and was woken %d times while the WRITEs landed — it should have stayed at 0. Something woke it (a signal, or the machine's own housekeeping); run again.", thRun, thVol),
			fmt.Sprintf("WRITE 到达期间接收线程运行了 %d ns、被唤醒了 %d 次——本应都是 0。有东西唤醒了它（信号，或机器自己的例行工作）；请再运行一次。", thRun, thVol))
	}
	result(emit, ok, v, figs)
	note(emit, "info", honest)
	return nil
}

// receiverHelper is the receiver process: register, share address and
// rkey, then sleep in read(2) on stdin (write, no-recv) or post RECVs and
// poll (send-recv); when woken, report what the buffer holds.
func receiverHelper(ctx context.Context, in io.Reader, out io.Writer) error {
	h := newHelperIO(in, out)
	var req recvReq
	if err := h.read(&req); err != nil {
		return err
	}
	if req.Slots <= 0 || req.Size <= 0 || req.Slots*req.Size > 16<<20 {
		return h.fail(fmt.Errorf("bad receiver request: %d slots of %d bytes", req.Slots, req.Size))
	}
	r, err := openRC(rcOpts{Side: req.Side, BufSize: req.Slots * req.Size, Access: verbs.AccessLocalWrite | verbs.AccessRemoteWrite,
		SendWR: 1, RecvWR: req.Slots, Event: req.Mode == modeSendRecv})
	if err != nil {
		return h.fail(err)
	}
	defer r.Close()
	l, err := verbs.Listen(req.Side.IP() + ":0")
	if err != nil {
		return h.fail(err)
	}
	defer l.Close()
	if err := h.reply(recvReady{Port: l.Addr().(*net.TCPAddr).Port, Pid: os.Getpid()}); err != nil {
		return err
	}
	conn, err := verbs.Accept(ctx, l, 20*time.Second)
	if err != nil {
		return h.fail(err)
	}
	defer conn.Close()
	remote, err := verbs.Exchange(conn, r.local(), 10*time.Second)
	if err != nil {
		return h.fail(err)
	}
	if err := r.connect(remote); err != nil {
		return h.fail(err)
	}
	if req.Mode == modeSendRecv { // before the sender hears we are ready
		for s := 0; s < req.Slots; s++ {
			if err := r.qp.PostRecv(uint64(s), r.mr, s*req.Size, req.Size); err != nil {
				return h.fail(err)
			}
		}
	}
	// From here on one thread does all the receiving and all the sleeping:
	// the experiment watches exactly that thread.
	runtime.LockOSThread()
	if err := h.reply(recvConnected{TID: unix.Gettid()}); err != nil {
		return err
	}
	var done recvDone
	if req.Mode == modeSendRecv {
		// two-sided: this process must take every message off its CQ and
		// give the buffer back to the device. It sleeps on the completion
		// channel between messages (not busy-polling), so its run time and
		// wakeups measure the per-message work, not spinning.
		for done.Completions < req.Messages {
			wc, err := r.waitCQ(ctx, r.recvCQ, 60*time.Second)
			if err != nil {
				return h.fail(err)
			}
			if wc.Status != verbs.WCSuccess {
				return h.fail(fmt.Errorf("RECV completion: %w", wc.Err()))
			}
			done.Completions++
			done.RecvBytes += int64(wc.ByteLen)
			if err := r.qp.PostRecv(wc.WRID, r.mr, int(wc.WRID)*req.Size, req.Size); err != nil {
				return h.fail(err)
			}
		}
	}
	var wake recvWake
	if err := h.read(&wake); err != nil { // sleeps in read(2) until the experiment wakes us
		return err
	}
	b := r.buf.Bytes()
	done.CRC = crc32.ChecksumIEEE(b)
	done.Bytes = len(b)
	if wake.Slot >= 0 && wake.Slot < req.Slots {
		s := b[wake.Slot*req.Size:]
		done.Sample = string(s[:min(40, req.Size)])
	}
	return h.reply(done)
}
