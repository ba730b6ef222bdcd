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
			"Two processes bounce a message back and forth over kernel TCP, RDMA SEND/RECV or RDMA WRITE, polling or sleeping for completions; median and p99 round trip and CPU time per round trip for sizes from 2 B up, beside the hardware figures of the lesson.",
			"两个进程来回传递一条消息，经由内核 TCP、RDMA SEND/RECV 或 RDMA WRITE，以轮询或等待事件的方式获取完成；给出从 2 B 起各种大小的往返时延中位数、p99 以及每次往返的 CPU 时间，并与课程中的硬件数据并列。"),
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
			{Name: "iterations", Kind: sandbox.ParamInt, Title: say("Round trips per size", "每种大小的往返次数"), Min: 10, Max: 20000, Default: int64(1000)},
			{Name: "max_size", Kind: sandbox.ParamBytes, Title: say("Largest message", "最大消息"),
				Help: say("Sizes run from 2 B, ×8 each step, up to this.", "消息大小从 2 B 起每次乘 8，直到这个值。"),
				Min:  2, Max: 64 << 10, Default: int64(64 << 10)},
		},
		Presets: []sandbox.Preset{
			{ID: "tcp", Title: say("TCP", "TCP"), Values: map[string]any{"transport": trTCP}},
			{ID: "write-poll", Title: say("RDMA WRITE, polling", "RDMA WRITE，轮询"), Values: map[string]any{"transport": trWrite, "mode": mPoll}},
			{ID: "send-event", Title: say("SEND/RECV, events", "SEND/RECV，事件"), Values: map[string]any{"transport": trSend, "mode": mEvent}},
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
}

type pongReady struct {
	Port int `json:"port"`
	Pid  int `json:"pid"`
}

// pongSize is the server's CPU time for one size's measured round trips.
type pongSize struct {
	Size  int   `json:"size"`
	CPUNs int64 `json:"cpu_ns"`
}

// sizeStats is what one size measured.
type sizeStats struct {
	Size                 int
	Median, P99, Min     time.Duration
	ClientCPU, ServerCPU time.Duration // per round trip
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

	phase(emit, "measure", say(fmt.Sprintf("%d round trips per size over %s", iters, ppName(tr, mode)), fmt.Sprintf("每种大小 %d 次往返，经由 %s", iters, ppName(tr, mode))))
	var stats []sizeStats
	var est clockEstimate
	est.Start()
	time.Sleep(20 * time.Millisecond)
	est.Stop()
	sampleEvery := uint64(float64(100*time.Millisecond) / est.nsPerCycle())
	runtime.LockOSThread() // CPU time per round trip is this thread's
	defer runtime.UnlockOSThread()
	defer pinThread(runtime.NumCPU() - 1)()
	k := 0
	for _, size := range sizes {
		series := "rtt_us_" + human(int64(size))
		for i := 0; i < warm; i++ {
			if err := end.ping(ctx, k, size); err != nil {
				return verbsError(emit, err)
			}
			k++
		}
		// Round trips are timed with the cycle counter, like perftest:
		// time.Now costs microseconds in the TCG guest. The window's
		// wall-clock time converts cycles to nanoseconds afterwards; the
		// live samples use the estimate made before the first size.
		cyc := make([]uint64, 0, iters)
		cpu0 := threadCPU()
		var clk tsc.Clock
		clk.Start()
		lastEmit, window := tsc.Now(), 0
		for i := 0; i < iters; i++ {
			c0 := tsc.Now()
			if err := end.ping(ctx, k, size); err != nil {
				return verbsError(emit, err)
			}
			c1 := tsc.Now()
			if c1 > c0 { // a thread moved between vCPUs whose counters differ: drop the sample
				cyc = append(cyc, c1-c0)
			}
			k++
			if c1 > lastEmit && c1-lastEmit >= sampleEvery {
				emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: series, X: float64(i + 1), Y: us(median(est.durations(cyc[window:]))), Unit: "µs"})
				lastEmit, window = c1, len(cyc)
			}
		}
		clk.Stop()
		cpu := threadCPU() - cpu0
		rtts := make([]time.Duration, len(cyc))
		for i, c := range cyc {
			rtts[i] = clk.Duration(c)
		}
		var ps pongSize
		if err := srv.recv(ctx, 30*time.Second, &ps); err != nil {
			return verbsError(emit, err)
		}
		if window < len(rtts) {
			emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: series, X: float64(iters), Y: us(median(rtts[window:])), Unit: "µs"})
		}
		st := summarize(size, rtts)
		st.ClientCPU = cpu / time.Duration(iters)
		st.ServerCPU = time.Duration(ps.CPUNs) / time.Duration(iters)
		stats = append(stats, st)
		logf(emit, "%s: min %.1f µs median %.1f µs, p99 %.1f µs, CPU per round trip: client %.1f µs, server %.1f µs",
			human(int64(size)), us(st.Min), us(st.Median), us(st.P99), us(st.ClientCPU), us(st.ServerCPU))
	}
	if err := end.goodbye(false); err != nil {
		return err
	}
	if err := srv.wait(); err != nil {
		return err
	}
	return reportPingpong(emit, tr, mode, iters, top, stats)
}

// clockEstimate is a tsc.Clock calibrated once, for live samples.
type clockEstimate struct{ tsc.Clock }

func (c *clockEstimate) nsPerCycle() float64 {
	d := c.Duration(1 << 20)
	if d <= 0 {
		return 1
	}
	return float64(d) / (1 << 20)
}

func (c *clockEstimate) durations(cyc []uint64) []time.Duration {
	out := make([]time.Duration, len(cyc))
	for i, x := range cyc {
		out[i] = c.Duration(x)
	}
	return out
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
	return sizeStats{Size: size, Median: percentile(rtts, 50), P99: percentile(rtts, 99), Min: slices.Min(rtts)}
}

// threadCPU is the calling OS thread's user+system time.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// emulated reports whether the CPU is QEMU's TCG emulation.
func emulated() bool {
	b, err := os.ReadFile("/proc/cpuinfo")
	return err == nil && strings.Contains(string(b), "TCG")
}

func reportPingpong(emit sandbox.Emitter, tr, mode string, iters int, top topology, stats []sizeStats) error {
	t := &sandbox.Table{Title: "round trips: " + ppName(tr, mode),
		Columns: []string{"size", "median RTT µs", "p99 RTT µs", "one-way µs (median/2)", "client CPU µs/RT", "server CPU µs/RT"}}
	figs := map[string]float64{"iterations": float64(iters)}
	for _, s := range stats {
		t.Rows = append(t.Rows, []string{human(int64(s.Size)), f1(us(s.Median)), f1(us(s.P99)), f1(us(s.Median) / 2), f1(us(s.ClientCPU)), f1(us(s.ServerCPU))})
		key := fmt.Sprint(s.Size)
		figs["median_us_"+key] = us(s.Median)
		figs["p99_us_"+key] = us(s.P99)
		figs["cpu_us_"+key] = us(s.ClientCPU + s.ServerCPU)
	}
	first := stats[0]
	figs["median_us"], figs["p99_us"] = us(first.Median), us(first.P99)
	figs["client_cpu_us"], figs["server_cpu_us"] = us(first.ClientCPU), us(first.ServerCPU)
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: &sandbox.Table{Title: "hardware reference (lesson)",
		Columns: []string{"path", "one-way latency"},
		Rows:    [][]string{{"kernel TCP, data centre", "20–50 µs"}, {"RDMA (InfiniBand or RoCE NIC)", "1–3 µs"}, {"measured here: " + ppName(tr, mode) + ", " + human(int64(first.Size)), f1(us(first.Median)/2) + " µs"}}}})

	why := say("Soft-RoCE is a NIC written in software: every RDMA packet is built and parsed by this machine's kernel, so it cannot reach hardware latency; it shows who does the work, not how fast silicon does it.",
		"Soft-RoCE 是用软件写的网卡：每个 RDMA 报文都由本机内核构造和解析，因此达不到硬件时延；它展示的是谁在干活，而不是芯片能有多快。")
	if emulated() {
		why = say(why["en"]+" Here it also runs in a QEMU guest with an emulated CPU (TCG), which multiplies every cost — compare the ratios between transports, not the absolute figures.",
			why["zh"]+"而且这里它运行在 CPU 靠模拟（TCG）的 QEMU 虚拟机里，每一项开销都被放大——请比较不同传输方式之间的比例，而不是绝对数值。")
	}
	note(emit, "info", why)
	var claim sandbox.Text
	oneWay := us(first.Median) / 2
	cpuRT := us(first.ClientCPU + first.ServerCPU)
	switch tr {
	case trTCP:
		claim = say(fmt.Sprintf("Kernel TCP: %.1f µs one way (median) for %s and %.1f µs of CPU per round trip — each message crosses the socket layer, the TCP/IP stack and a wake-up on both sides. Run RDMA WRITE with polling to compare.", oneWay, human(int64(first.Size)), cpuRT),
			fmt.Sprintf("内核 TCP：%s 消息单程 %.1f µs（中位数），每次往返 CPU %.1f µs——每条消息在两端都要经过套接字层、TCP/IP 协议栈和一次唤醒。请运行“RDMA WRITE + 轮询”进行对比。", human(int64(first.Size)), oneWay, cpuRT))
	default:
		claim = say(fmt.Sprintf("%s: %.1f µs one way (median) for %s and %.1f µs of CPU per round trip. The application posts to a queue and the peer's memory changes — no socket, no copy into the kernel, no wake-up when polling. Compare with the TCP run.", ppName(tr, mode), oneWay, human(int64(first.Size)), cpuRT),
			fmt.Sprintf("%s：%s 消息单程 %.1f µs（中位数），每次往返 CPU %.1f µs。应用把请求投递到队列，对端内存随之改变——没有套接字，没有拷贝进内核，轮询时也没有唤醒。请与 TCP 的结果对比。", ppName(tr, mode), human(int64(first.Size)), oneWay, cpuRT))
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
	if e.recvs == 0 { // WRITE, polling: spin on the last byte, as perftest does
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
	k := 0
	for _, size := range req.Sizes {
		for i := 0; i < req.Warmup; i++ {
			if err := e.pong(ctx, k, size); err != nil {
				return h.fail(err)
			}
			k++
		}
		cpu0 := threadCPU()
		for i := 0; i < req.Iters; i++ {
			if err := e.pong(ctx, k, size); err != nil {
				return h.fail(err)
			}
			k++
		}
		if err := h.reply(pongSize{Size: size, CPUNs: int64(threadCPU() - cpu0)}); err != nil {
			return err
		}
	}
	if err := e.goodbye(true); err != nil {
		return h.fail(err)
	}
	return nil
}
