package rdmaexp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// Syscalls is the experiment "how many system calls does one message
// cost?": the same ping-pong as the pingpong experiment, once over kernel
// TCP and once over Soft-RoCE SEND/RECV, with strace attached to exactly
// the two threads that send and receive (one per side) for the measured
// round trips only. Every system call those threads make is counted and
// sorted by what it was for: the message path (the TCP socket, or the rxe
// command file /dev/infiniband/uverbsN that rdma-core's rxe provider
// write()s a doorbell to), the report pipe to the lab, the lab's own
// courtesy sched_yield in a polling loop, and the Go runtime.
//
// What a hardware RNIC does instead (rdma-core providers/mlx5: the doorbell
// is an MMIO store to a page mapped into the process, polling reads the CQ
// ring in memory) is shown as a labelled reference, not measured.
func Syscalls() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "syscalls",
		Title: say("System calls per message: TCP vs Soft-RoCE", "每条消息几次系统调用：TCP 对比 Soft-RoCE"),
		Summary: say(
			"strace counts every system call of the two threads that exchange messages, for the same round trips over kernel TCP and over Soft-RoCE SEND/RECV: read()/write() per message for TCP, one write() doorbell per send-queue post and none per RECV or poll for rxe, beside what a hardware RNIC does (an MMIO doorbell, no system call).",
			"用 strace 统计收发消息的两个线程所做的每一次系统调用，同样的往返分别走内核 TCP 和 Soft-RoCE 的 SEND/RECV：TCP 每条消息一次 read()/write()，rxe 每向发送队列投递一次 write() 门铃、投递 RECV 和轮询一次也不需要；并与硬件 RDMA 网卡的做法（MMIO 门铃，没有系统调用）并列。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Shareable, // counts system calls; timing does not matter
		Params: []sandbox.Param{
			{Name: "round_trips", Kind: sandbox.ParamInt, Title: say("Round trips counted", "统计的往返次数"), Min: 20, Max: 2000, Default: int64(200)},
			{Name: "size", Kind: sandbox.ParamBytes, Title: say("Message size", "消息大小"), Min: 2, Max: 4096, Default: int64(64)},
			{Name: "mode", Kind: sandbox.ParamEnum, Title: say("How RDMA waits for completions", "RDMA 等待完成的方式"), Default: mPoll,
				Help: say("Busy polling the CQ, or sleeping on the completion channel (events bring system calls back).", "在 CQ 上忙轮询，或睡在完成通道上（用事件就又有系统调用了）。"),
				Choices: []sandbox.Choice{
					{Value: mPoll, Title: say("busy polling", "忙轮询")},
					{Value: mEvent, Title: say("completion events", "完成事件")},
				}},
		},
		Presets: []sandbox.Preset{
			{ID: "poll", Title: say("RDMA polling", "RDMA 轮询"), Values: map[string]any{"mode": mPoll}},
			{ID: "event", Title: say("RDMA with completion events", "RDMA 用完成事件"), Values: map[string]any{"mode": mEvent}},
		},
		Timeout: 4 * time.Minute,
		Run:     runSyscalls,
	}
}

// Kinds of system call, by what they were for.
const (
	scMessage = "message" // on the TCP socket or the uverbs command file / completion channel
	scReport  = "report"  // the helper's reply pipe to the experiment (not part of a message)
	// scControl is the TCP socket of an RDMA leg: the lab's out-of-band
	// channel (the QP exchange, the end of the run), not the message
	// path. A run slowed by a busy machine once caught its last read()
	// inside the traced window and counted it as a message call.
	scControl = "control"
	scYield   = "yield"   // the lab's sched_yield in a polling loop
	scRuntime = "runtime" // anything else: Go runtime, clock reads
)

// scCount is one (syscall, what its fd is) pair and how often it was seen.
type scCount struct {
	Name  string // write, read, poll…
	FD    string // "TCP socket", "/dev/infiniband/uverbs0", "" for no fd
	Kind  string
	Calls int
}

// legCount is what strace saw on one side of one transport.
type legCount struct {
	Side   string // "client" or "server"
	Counts []scCount
	Polls  int // ibv_poll_cq calls in the measured round trips (RDMA)
}

func (l legCount) of(kind string) int {
	n := 0
	for _, c := range l.Counts {
		if c.Kind == kind {
			n += c.Calls
		}
	}
	return n
}

func (l legCount) named(kind, name string) int {
	n := 0
	for _, c := range l.Counts {
		if c.Kind == kind && c.Name == name {
			n += c.Calls
		}
	}
	return n
}

func runSyscalls(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	n := int(p["round_trips"].(int64))
	size := int(p["size"].(int64))
	mode := p["mode"].(string)
	strace, err := exec.LookPath("strace")
	if err != nil {
		return fmt.Errorf("syscalls: strace is not installed where the experiment runs (apt-get install strace): %w", err)
	}
	top, err := pickTopology()
	if err != nil {
		return err
	}
	note(emit, "info", top.describe())
	note(emit, "info", say("strace stops a traced thread at every system call, so these round trips are much slower than in the pingpong experiment; they are counted here, not timed.",
		"strace 会在每次系统调用时让被跟踪的线程停下来，所以这里的往返比 pingpong 实验慢得多：这里只数次数，不计时间。"))
	dir, err := os.MkdirTemp("", "syscalls-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	legs := map[string][2]legCount{}
	for _, tr := range []string{trTCP, trSend} {
		progress := legProgress(emit, tr, mode, n)
		progress(say("starting both sides", "启动两端"))
		lc, err := countLeg(ctx, emit, progress, strace, dir, top, tr, mode, size, n)
		if err != nil {
			return err
		}
		legs[tr] = lc
		emitLegTable(emit, tr, mode, n, lc)
	}
	return reportSyscalls(emit, mode, n, legs)
}

// legProgress says where a leg is as its phase again, "Counting …: what":
// the page updates the phase's line in place (a phase with the name of the
// current one is its progress), so the minute strace takes under TCG is
// seen moving.
func legProgress(emit sandbox.Emitter, tr, mode string, n int) func(sandbox.Text) {
	return func(what sandbox.Text) {
		phase(emit, "count-"+tr, say(fmt.Sprintf("Counting the system calls of %d round trips over %s: %s", n, ppName(tr, mode), what["en"]),
			fmt.Sprintf("统计 %d 次往返（%s）的系统调用：%s", n, ppNameZh(tr, mode), what["zh"])))
	}
}

// roundTripsDone is the progress of the counted round trips.
func roundTripsDone(k, n int) sandbox.Text {
	return say(fmt.Sprintf("%d of %d round trips under strace", k, n), fmt.Sprintf("strace 下已完成 %d / %d 次往返", k, n))
}

// progressEvery is how often the counted round trips report how far they are.
const progressEvery = 2 * time.Second

// countLeg runs one ping-pong with both answering threads under strace.
func countLeg(ctx context.Context, emit sandbox.Emitter, progress func(sandbox.Text), strace, dir string, top topology, tr, mode string, size, n int) (out [2]legCount, err error) {
	warm := 20
	srv, err := startChild(ctx, helperPong, pongReq{Side: top.Server, Transport: tr, Mode: mode, Sizes: []int{size}, Iters: n, Warmup: warm, ReportTID: true}, emit)
	if err != nil {
		return out, err
	}
	defer srv.kill()
	var ready pongReady
	if err := srv.recv(ctx, 30*time.Second, &ready); err != nil {
		return out, verbsError(emit, err)
	}
	conn, err := verbs.Dial(ctx, fmt.Sprintf("%s:%d", top.Server.IP(), ready.Port), 10*time.Second)
	if err != nil {
		return out, fmt.Errorf("syscalls: reach the server: %w", err)
	}
	defer conn.Close()
	end, err := newPPEnd(ctx, top.Client, tr, mode, size, conn, false)
	if err != nil {
		return out, verbsError(emit, err)
	}
	defer end.Close()
	var stid pongTID
	if err := srv.recv(ctx, 30*time.Second, &stid); err != nil {
		return out, verbsError(emit, err)
	}

	// From here to the last ping this goroutine owns its thread: every
	// system call of a round trip on the client side happens on it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer pinThread(runtime.NumCPU() - 1)()
	ctid := unix.Gettid()
	progress(say(fmt.Sprintf("connected, %d round trips to warm up, then strace attaches to one thread on each side", warm),
		fmt.Sprintf("已连接，先热身 %d 次往返，然后 strace 附着到两端各一个线程", warm)))
	k := 0
	for i := 0; i < warm; i++ {
		if err := end.ping(ctx, k, size); err != nil {
			return out, verbsError(emit, err)
		}
		k++
	}
	// strace is started, watched and stopped from another goroutine (so
	// another thread): its own system calls must not land in the count of
	// this one. This thread only blocks on the channel meanwhile.
	var tc, ts *trace
	defer func() {
		if tc != nil {
			tc.stop()
		}
		if ts != nil {
			ts.stop()
		}
	}()
	errc := make(chan error, 1)
	go func() {
		var err error
		if ts, err = startTrace(ctx, strace, filepath.Join(dir, tr+"-server.txt"), srv.Pid(), stid.TID); err == nil {
			tc, err = startTrace(ctx, strace, filepath.Join(dir, tr+"-client.txt"), os.Getpid(), ctid)
		}
		errc <- err
	}()
	if err := <-errc; err != nil {
		return out, err
	}
	// The traced thread only stores how far it is (no system call); a
	// goroutine on another thread reports it.
	var done atomic.Int64
	stopTick, ticked := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ticked)
		progress(roundTripsDone(0, n))
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		last := int64(0)
		for {
			select {
			case <-stopTick:
				return
			case <-tick.C:
				if k := done.Load(); k != last && k < int64(n) {
					last = k
					progress(roundTripsDone(int(k), n))
				}
			}
		}
	}()
	defer func() {
		select {
		case <-stopTick:
		default:
			close(stopTick)
		}
		<-ticked
	}()
	polls0 := end.polls()
	for i := 0; i < n; i++ {
		if err := end.ping(ctx, k, size); err != nil {
			return out, verbsError(emit, err)
		}
		k++
		done.Store(int64(i + 1))
	}
	cpolls := end.polls() - polls0
	go func() { errc <- tc.stop() }()
	if err := <-errc; err != nil {
		return out, err
	}
	close(stopTick)
	<-ticked
	progress(say(fmt.Sprintf("%d of %d round trips under strace; strace detaches and its logs are read", n, n),
		fmt.Sprintf("strace 下已完成 %d / %d 次往返；strace 正在脱离，读取它的记录", n, n)))
	var ps pongSize
	if err := srv.recv(ctx, 30*time.Second, &ps); err != nil {
		return out, verbsError(emit, err)
	}
	if err := ts.stop(); err != nil {
		return out, err
	}
	if err := end.goodbye(false); err != nil {
		return out, err
	}
	if err := srv.wait(); err != nil {
		return out, err
	}
	cc, err := parseStrace(tc.file, tr)
	if err != nil {
		return out, err
	}
	sc, err := parseStrace(ts.file, tr)
	if err != nil {
		return out, err
	}
	return [2]legCount{{Side: "client", Counts: cc, Polls: cpolls}, {Side: "server", Counts: sc, Polls: ps.Polls}}, nil
}

func (e *ppEnd) polls() int {
	if e.r == nil {
		return 0
	}
	return e.r.polls
}

// trace is one strace attached to one thread.
type trace struct {
	cmd     *exec.Cmd
	file    string
	stopped bool
	err     error
}

// startTrace attaches strace to thread tid of process pid and returns once
// the kernel says the thread is traced. -yy names what each fd is (a TCP
// socket with its addresses, /dev/infiniband/uverbs0, a pipe); -s 1 keeps
// the data out of the log (one byte or array element: -s 0 would hide
// the fd inside ppoll's array); signals are not logged.
func startTrace(ctx context.Context, strace, file string, pid, tid int) (*trace, error) {
	cmd := exec.CommandContext(ctx, strace, "-qq", "-yy", "-s", "1", "-e", "signal=none", "-o", file, "-p", strconv.Itoa(tid))
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start strace: %w", err)
	}
	t := &trace{cmd: cmd, file: file}
	status := fmt.Sprintf("/proc/%d/task/%d/status", pid, tid)
	want := fmt.Sprintf("TracerPid:\t%d\n", cmd.Process.Pid)
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(status)
		if err == nil && strings.Contains(string(b), want) {
			return t, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.stop()
			return nil, fmt.Errorf("strace did not attach to thread %d of process %d: %s", tid, pid, strings.TrimSpace(errb.String()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop detaches strace (SIGINT makes it detach and flush) and waits.
// SIGINT is sent again every second until strace exits: strace's handler
// only sets a flag, which its loop reads before it waits for the next
// tracee event (next_event in strace.c), so a SIGINT that lands between
// the read and the wait is seen only after the next event — and a tracee
// parked in a futex makes none (seen once in CI: "did not detach within
// 20 s"). A later SIGINT lands inside the wait and ends it.
func (t *trace) stop() error {
	if t.stopped {
		return t.err
	}
	t.stopped = true
	done := make(chan error, 1)
	go func() { done <- t.cmd.Wait() }()
	_ = t.cmd.Process.Signal(syscall.SIGINT)
	again := time.NewTicker(time.Second)
	defer again.Stop()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case err := <-done:
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.err = fmt.Errorf("strace: %w", err)
			}
			return t.err
		case <-again.C:
			_ = t.cmd.Process.Signal(syscall.SIGINT)
		case <-deadline:
			_ = t.cmd.Process.Kill()
			<-done
			t.err = errors.New("strace did not detach within 20 s")
			return t.err
		}
	}
}

// A completed call in strace's log: name(fd<what>, … ) = result.
var (
	straceCall = regexp.MustCompile(`^([a-z_0-9]+)\((?:(\d+)<([^>]*)>)?`)
	straceFDs  = regexp.MustCompile(`[(\s=](\d+)<([^>]*)>`) // every fd strace named on a line
	straceFD   = regexp.MustCompile(`\{fd=(\d+)[,<]`)       // ppoll([{fd=7, events=POLLIN}], …): named elsewhere
)

// straceRestarted is the result of a call a signal interrupted and the
// kernel restarts once the handler returns (Go's preemption signal, SIGURG,
// lands on a thread blocked in read() a few times in a hundred): the
// restarted call is the one that completes, so the cut one is not counted.
var straceRestarted = regexp.MustCompile(`\) += \? ERESTART`)

// parseStrace counts the completed calls of one strace log. Lines without
// " = " are calls cut by the attach or the detach, not counted, nor calls
// the kernel restarts after a signal.
func parseStrace(file, tr string) ([]scCount, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("read the strace log: %w", err)
	}
	defer f.Close()
	var lines []string
	names := map[string]string{} // fd number → what strace said it is
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, " = ") || straceRestarted.MatchString(line) {
			continue
		}
		lines = append(lines, line)
		for _, m := range straceFDs.FindAllStringSubmatch(line, -1) {
			names[m[1]] = m[2]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	counts := map[[2]string]*scCount{}
	for _, line := range lines {
		m := straceCall.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		what := m[3]
		if what == "" {
			if f := straceFD.FindStringSubmatch(line); f != nil {
				what = names[f[1]]
			}
		}
		name, fd := m[1], fdKind(what)
		key := [2]string{name, fd}
		c := counts[key]
		if c == nil {
			c = &scCount{Name: name, FD: fd, Kind: classify(name, fd, tr)}
			counts[key] = c
		}
		c.Calls++
	}
	out := make([]scCount, 0, len(counts))
	for _, c := range counts {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return kindOrder(out[i].Kind) < kindOrder(out[j].Kind)
		}
		if out[i].Calls != out[j].Calls {
			return out[i].Calls > out[j].Calls
		}
		return out[i].Name+out[i].FD < out[j].Name+out[j].FD
	})
	return out, nil
}

// fdKind shortens what strace -yy says about an fd.
func fdKind(what string) string {
	switch {
	case what == "":
		return ""
	case strings.HasPrefix(what, "TCP"), strings.HasPrefix(what, "socket:"):
		// -yy names a TCP socket by its addresses when it can ask the
		// kernel (sock_diag), else "socket:[inode]"; the only socket these
		// threads use while counting is the TCP data path.
		return "TCP socket"
	case strings.HasPrefix(what, "/dev/infiniband/"):
		if i := strings.IndexByte(what, '<'); i > 0 { // "/dev/infiniband/uverbs0<char 231:192"
			return what[:i]
		}
		return what
	case strings.Contains(what, "infinibandevent") || strings.Contains(what, "[infiniband"):
		return "completion channel"
	case strings.HasPrefix(what, "pipe:"):
		return "pipe"
	}
	return what
}

func classify(name, fd, tr string) string {
	switch {
	case fd == "TCP socket" && tr != trTCP:
		return scControl
	case fd == "TCP socket" || strings.HasPrefix(fd, "/dev/infiniband/") || fd == "completion channel":
		return scMessage
	case fd == "pipe":
		return scReport
	case name == "sched_yield":
		return scYield
	}
	return scRuntime
}

func kindOrder(k string) int {
	return map[string]int{scMessage: 0, scYield: 1, scControl: 2, scReport: 3, scRuntime: 4}[k]
}

func kindTitle(k string) sandbox.Text {
	return map[string]sandbox.Text{
		scMessage: say("message path", "消息路径"),
		scYield:   say("lab's poll loop: yields to the software NIC", "本实验室的轮询循环：给软件网卡让出 CPU"),
		scReport:  say("lab: report pipe", "本实验室：汇报管道"),
		scControl: say("lab: control socket (set-up, end of run)", "本实验室：控制套接字（建立连接、结束运行）"),
		scRuntime: say("Go runtime and the lab's bookkeeping", "Go 运行时和本实验室的记账"),
	}[k]
}

func emitLegTable(emit sandbox.Emitter, tr, mode string, n int, lc [2]legCount) {
	t := sandbox.NewTable(say(fmt.Sprintf("system calls, %d round trips: %s", n, ppName(tr, mode)), fmt.Sprintf("系统调用，%d 次往返：%s", n, ppNameZh(tr, mode))),
		say("side", "端"), say("system call", "系统调用"), say("on", "作用于"), say("what for", "用途"), say("calls", "次数"), say("per round trip", "每次往返"))
	sideName := map[string]sandbox.Text{"client": say("client", "客户端"), "server": say("server", "服务端")}
	for _, l := range lc {
		side := sideName[l.Side]
		if len(l.Counts) == 0 {
			t.AddRow(side, say("(none)", "（无）"), sandbox.Same(""), sandbox.Same(""), sandbox.Same("0"), sandbox.Same("0"))
		}
		for _, c := range l.Counts {
			t.AddRow(side, sandbox.Same(c.Name+"()"), sandbox.Same(c.FD), kindTitle(c.Kind), sandbox.Same(strconv.Itoa(c.Calls)), sandbox.Same(f2(float64(c.Calls)/float64(n))))
		}
		if tr != trTCP {
			t.AddRow(side, say("ibv_poll_cq (not a system call)", "ibv_poll_cq（不是系统调用）"), say("CQ ring in shared memory", "共享内存里的 CQ 环"), say("polling", "轮询"),
				sandbox.Same(strconv.Itoa(l.Polls)), sandbox.Same(f2(float64(l.Polls)/float64(n))))
		}
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func ppNameZh(tr, mode string) string {
	m := map[string]string{mPoll: "轮询", mEvent: "完成事件"}[mode]
	switch tr {
	case trTCP:
		return "内核 TCP"
	case trSend:
		return "RDMA SEND/RECV，" + m
	}
	return "RDMA WRITE，" + m
}

func reportSyscalls(emit sandbox.Emitter, mode string, n int, legs map[string][2]legCount) error {
	per := func(v int) float64 { return float64(v) / float64(n) }
	tcp, rd := legs[trTCP], legs[trSend]
	figs := map[string]float64{"round_trips": float64(n)}
	for _, tr := range []string{trTCP, trSend} {
		for _, l := range legs[tr] {
			pfx := tr + "_" + l.Side + "_"
			figs[pfx+"message_per_rt"] = per(l.of(scMessage))
			figs[pfx+"write_per_rt"] = per(l.named(scMessage, "write"))
			figs[pfx+"read_per_rt"] = per(l.named(scMessage, "read"))
			figs[pfx+"yield_per_rt"] = per(l.of(scYield))
			figs[pfx+"other_per_rt"] = per(l.of(scRuntime) + l.of(scReport) + l.of(scControl))
			if tr != trTCP {
				figs[pfx+"polls_per_rt"] = per(l.Polls)
				// every message-path call that is not a doorbell write
				figs[pfx+"nonwrite_message_per_rt"] = per(l.of(scMessage) - l.named(scMessage, "write"))
			}
		}
	}
	ref := sandbox.NewTable(say("hardware reference (rdma-core providers/mlx5, not measured here)", "硬件参考（rdma-core 的 mlx5 驱动，不是这里测的）"),
		say("step", "步骤"), say("Soft-RoCE (rxe), measured above", "Soft-RoCE（rxe），上面测得"), say("hardware RNIC (mlx5)", "硬件 RDMA 网卡（mlx5）"))
	ref.AddRow(say("post a send (ibv_post_send)", "投递发送（ibv_post_send）"),
		say("write() on /dev/infiniband/uverbsN; the kernel's rxe module then builds the packet and copies the payload", "在 /dev/infiniband/uverbsN 上 write()；随后内核的 rxe 模块构造报文、拷贝数据"),
		say("MMIO store to a doorbell page mapped into the process: 0 system calls", "对映射进进程的门铃页做一次 MMIO 写：0 次系统调用"))
	ref.AddRow(say("post a receive (ibv_post_recv)", "投递接收（ibv_post_recv）"),
		say("writes the shared receive queue: 0 system calls", "写共享的接收队列：0 次系统调用"),
		say("writes the receive queue and a doorbell record in memory: 0 system calls", "写内存里的接收队列和门铃记录：0 次系统调用"))
	ref.AddRow(say("poll the CQ (ibv_poll_cq)", "轮询 CQ（ibv_poll_cq）"),
		say("reads the shared CQ ring: 0 system calls", "读共享的 CQ 环：0 次系统调用"),
		say("reads the CQ in memory: 0 system calls", "读内存里的 CQ：0 次系统调用"))
	ref.AddRow(say("arm the CQ for an event (ibv_req_notify_cq)", "为事件给 CQ 布防（ibv_req_notify_cq）"),
		say("ioctl() on the uverbs file", "在 uverbs 文件上 ioctl()"),
		say("MMIO store (mlx5_arm_cq): 0 system calls", "一次 MMIO 写（mlx5_arm_cq）：0 次系统调用"))
	ref.AddRow(say("sleep until the event (ibv_get_cq_event)", "睡到事件到来（ibv_get_cq_event）"),
		say("ppoll() + read() on the completion channel", "在完成通道上 ppoll() + read()"),
		say("the same: the process sleeps until an interrupt wakes it", "一样：进程睡眠，直到中断把它唤醒"))
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: ref})

	tcpSide := (per(tcp[0].of(scMessage)) + per(tcp[1].of(scMessage))) / 2
	rdSide := (per(rd[0].of(scMessage)) + per(rd[1].of(scMessage))) / 2
	rdWrites := (per(rd[0].named(scMessage, "write")) + per(rd[1].named(scMessage, "write"))) / 2
	polls := (per(rd[0].Polls) + per(rd[1].Polls)) / 2
	yields := (per(rd[0].of(scYield)) + per(rd[1].of(scYield))) / 2
	if mode == mPoll {
		// the verdict quotes these means of the two sides: a table shows
		// them as it quotes them (two decimals)
		mt := sandbox.NewTable(say("per round trip, mean of the two sides", "每次往返，两端的平均值"), say("what", "项目"), say("calls", "次数"))
		mt.AddRow(say("kernel TCP: system calls on the message path", "内核 TCP：消息路径上的系统调用"), sandbox.Same(f2(tcpSide)))
		mt.AddRow(say("Soft-RoCE: system calls on the message path", "Soft-RoCE：消息路径上的系统调用"), sandbox.Same(f2(rdSide)))
		mt.AddRow(say("Soft-RoCE: write() doorbells", "Soft-RoCE：write() 门铃"), sandbox.Same(f2(rdWrites)))
		mt.AddRow(say("Soft-RoCE: ibv_poll_cq (not a system call)", "Soft-RoCE：ibv_poll_cq（不是系统调用）"), sandbox.Same(f2(polls)))
		mt.AddRow(say("the lab's poll loop: sched_yield()", "本实验室的轮询循环：sched_yield()"), sandbox.Same(f2(yields)))
		emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: mt})
	}
	figs["tcp_message_per_rt_per_side"] = tcpSide
	figs["rdma_message_per_rt_per_side"] = rdSide

	var claim sandbox.Text
	if mode == mPoll {
		claim = say(fmt.Sprintf("Per round trip and side: kernel TCP made %.2f system calls on the socket (a write() to send, a read() to receive — and the read() is where the thread sleeps until the kernel wakes it). Soft-RoCE made %.2f: %.2f write() doorbell(s) on the uverbs file for the SEND it posted (posting a RECV makes none), and none for its %.2f ibv_poll_cq calls, which only read the CQ ring in memory. The %.2f sched_yield() per round trip are this lab's poll loop making room for the software NIC, not part of verbs. On a hardware RNIC the post is an MMIO store: no system call at all.",
			tcpSide, rdSide, rdWrites, polls, yields),
			fmt.Sprintf("每次往返、每一端：内核 TCP 在套接字上做了 %.2f 次系统调用（发送一次 write()，接收一次 read()——线程就睡在 read() 里，等内核唤醒）。Soft-RoCE 做了 %.2f 次：为投递的 SEND 在 uverbs 文件上 write() 门铃（%.2f 次；投递 RECV 不需要系统调用），而 %.2f 次 ibv_poll_cq 一次系统调用也没有，它只读内存里的 CQ 环。每次往返 %.2f 次 sched_yield() 是本实验室的轮询循环给软件网卡让出 CPU，不属于 verbs。在硬件 RDMA 网卡上，投递只是一次 MMIO 写：完全没有系统调用。",
				tcpSide, rdSide, rdWrites, polls, yields))
	} else {
		c, v := rd[0], rd[1]
		claim = say(fmt.Sprintf("Per round trip: kernel TCP made %.2f system calls on the socket per side. Soft-RoCE with completion events made %.2f on the client and %.2f on the server: besides the doorbell write(), a thread that finds its CQ empty arms it (ioctl()) and sleeps until the event (ppoll() + read() on the completion channel) — the client slept on %.0f%% of its round trips, the server on %.0f%% (when the message is already there at the first ibv_poll_cq, nobody sleeps; strace slows the traced threads, which shifts these shares). Events bring the system call, the sleep and the wakeup back; that is why latency-critical RDMA code polls. A hardware RNIC arms the CQ with an MMIO store but still sleeps in the kernel for the event.",
			tcpSide, per(c.of(scMessage)), per(v.of(scMessage)), 100*per(c.named(scMessage, "read")), 100*per(v.named(scMessage, "read"))),
			fmt.Sprintf("每次往返：内核 TCP 每一端在套接字上做了 %.2f 次系统调用。使用完成事件的 Soft-RoCE 在客户端做了 %.2f 次，服务端 %.2f 次：除了门铃 write()，线程发现 CQ 为空时还要给它布防（ioctl()），再睡到事件到来（在完成通道上 ppoll() + read()）——客户端在 %.0f%% 的往返里睡了，服务端 %.0f%%（第一次 ibv_poll_cq 时消息已经到了，就谁也不用睡；strace 会拖慢被跟踪的线程，这些比例因此会有偏移）。用事件，系统调用、睡眠和唤醒又都回来了；这就是追求低延迟的 RDMA 程序要轮询的原因。硬件网卡给 CQ 布防只需一次 MMIO 写，但等事件时同样要在内核里睡眠。",
				tcpSide, per(c.of(scMessage)), per(v.of(scMessage)), 100*per(c.named(scMessage, "read")), 100*per(v.named(scMessage, "read"))))
	}
	ok := tcpSide > 0 && rd[0].named(scMessage, "write") > 0
	result(emit, ok, claim, figs)
	return nil
}
