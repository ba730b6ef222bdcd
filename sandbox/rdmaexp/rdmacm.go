package rdmaexp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// RDMACM is the experiment "let the connection manager do it": rping (from
// rdmacm-utils) connects a client to a server with librdmacm, and the run
// lists the CM events each side saw next to the step of the manual
// exchange each one replaces.
func RDMACM() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "rdma-cm",
		Title: say("Connect with rdma_cm instead of by hand", "用 rdma_cm 建连，而不是手工交换"),
		Summary: say(
			"rping connects an RC QP through the RDMA connection manager: an IP address and a port instead of a QPN, GID and PSN sent over a TCP socket. The run shows every CM event on both sides and which manual step each one replaced.",
			"rping 通过 RDMA 连接管理器（rdma_cm）连接一个 RC QP：只需 IP 地址和端口，而不是用 TCP 套接字交换 QPN、GID 和 PSN。运行结果列出两端看到的每个 CM 事件，以及它替代了手工交换中的哪一步。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Shareable, // it shows events, not timings
		Params: []sandbox.Param{
			{Name: "count", Kind: sandbox.ParamInt, Title: say("Pings", "ping 次数"), Min: 1, Max: 10, Default: int64(3),
				Help: say("Each ping is a SEND of the buffer's address and rkey, then an RDMA READ and an RDMA WRITE by the server.", "每次 ping 是一次携带缓冲区地址和 rkey 的 SEND，随后服务端发起一次 RDMA READ 和一次 RDMA WRITE。")},
		},
		Presets: []sandbox.Preset{{ID: "three", Title: say("3 pings", "3 次 ping"), Values: map[string]any{"count": 3}}},
		Timeout: 40 * time.Second,
		Run:     runRDMACM,
	}
}

// cmEvent is one "cma_event type … (parent|child)" line of rping -d.
type cmEvent struct {
	Side  string
	Event string
}

var cmEventRe = regexp.MustCompile(`cma_event type (RDMA_CM_EVENT_[A-Z_]+)`)

// cmMeaning says what each CM event did for the program that, in the
// manual exchange, it had to do itself.
func cmMeaning(ev string) sandbox.Text {
	switch ev {
	case "RDMA_CM_EVENT_ADDR_RESOLVED":
		return say("rdma_resolve_addr turned the server's IP address into a local device, port and source GID — by hand we read the GID table in sysfs and picked the IPv4-mapped index.",
			"rdma_resolve_addr 把服务端的 IP 地址解析成本地设备、端口和源 GID——手工方式下我们要读 sysfs 的 GID 表，自己挑出 IPv4 映射的那一项。")
	case "RDMA_CM_EVENT_ROUTE_RESOLVED":
		return say("rdma_resolve_route found the path: the destination GID, hop limit and path MTU that we put into ah_attr and path_mtu at INIT → RTR.",
			"rdma_resolve_route 找到了路径：目的 GID、跳数限制和路径 MTU——手工方式下这些要在 INIT → RTR 时填进 ah_attr 和 path_mtu。")
	case "RDMA_CM_EVENT_CONNECT_REQUEST":
		return say("The client's CM sent a REQ (a management datagram on QP1) carrying its QP number and starting PSN: what our TCP socket carried in the manual exchange.",
			"客户端的 CM 发出 REQ（QP1 上的管理数据报），里面带着它的 QP 号和起始 PSN：手工方式下这些靠我们的 TCP 套接字传递。")
	case "RDMA_CM_EVENT_ESTABLISHED":
		return say("REP and RTU answered the REQ; the CM moved the QP RESET → INIT → RTR → RTS with the peer's values — the three ibv_modify_qp calls we made by hand.",
			"REP 和 RTU 回应了 REQ；CM 用对端的参数把 QP 推进 RESET → INIT → RTR → RTS——就是我们手工调用的三次 ibv_modify_qp。")
	case "RDMA_CM_EVENT_DISCONNECTED":
		return say("DREQ/DREP told the other side the connection is over; by hand, a program must tell its peer itself before destroying the QP.",
			"DREQ/DREP 告诉对方连接已结束；手工方式下，程序必须在销毁 QP 之前自己通知对端。")
	case "RDMA_CM_EVENT_REJECTED", "RDMA_CM_EVENT_UNREACHABLE", "RDMA_CM_EVENT_ADDR_ERROR", "RDMA_CM_EVENT_ROUTE_ERROR", "RDMA_CM_EVENT_CONNECT_ERROR":
		return say("The CM could not connect: nobody listens on that address and port, or there is no route.", "CM 无法建立连接：该地址和端口没有人监听，或没有路由。")
	}
	return say("", "")
}

// lineLog collects a process's output lines with the time each arrived.
type lineLog struct {
	mu    sync.Mutex
	start time.Time
	lines []string
	at    []time.Duration
}

func (l *lineLog) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		l.mu.Lock()
		l.lines = append(l.lines, line)
		l.at = append(l.at, time.Since(l.start))
		l.mu.Unlock()
	}
}

func (l *lineLog) snapshot() ([]string, []time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...), append([]time.Duration(nil), l.at...)
}

// loggedProc is a started tool whose output goes to a lineLog; done is
// closed when it exited and its output was read, err is then its exit.
type loggedProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startLogged(ctx context.Context, l *lineLog, name string, args ...string) (*loggedProc, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &loggedProc{cmd: cmd, done: make(chan struct{})}
	read := make(chan struct{})
	go func() { l.read(pr); close(read) }()
	go func() {
		p.err = cmd.Wait()
		pw.Close()
		<-read
		close(p.done)
	}()
	return p, nil
}

func (p *loggedProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func runRDMACM(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	count := int(p["count"].(int64))
	top, err := pickTopology()
	if err != nil {
		return err
	}
	rping, err := exec.LookPath("rping")
	if err != nil {
		return fmt.Errorf("rping is not installed here (apt-get install rdmacm-utils): %w", err)
	}
	note(emit, "info", top.describe())
	if err := waitCMDevice(ctx); err != nil {
		return err
	}
	port := fmt.Sprint(20000 + rand.IntN(20000))
	start := time.Now()
	srvLog := &lineLog{start: start}
	cliLog := &lineLog{start: start}

	// rping writes through stdio: into a pipe its lines arrive when it
	// exits, so the server's readiness is found by trying to connect.
	phase(emit, "listen", say("Server: rdma_bind_addr + rdma_listen on an IP address and port", "服务端：在 IP 地址和端口上 rdma_bind_addr + rdma_listen"))
	rctx, cancel := context.WithTimeout(ctx, 25*time.Second)
	defer cancel()
	srvArgs := []string{"-s", "-v", "-d", "-a", top.Server.IP(), "-p", port, "-C", fmt.Sprint(count)}
	note(emit, "info", sandbox.Same("$ rping "+strings.Join(srvArgs, " ")))
	srv, err := startLogged(rctx, srvLog, rping, srvArgs...)
	if err != nil {
		return fmt.Errorf("start rping server: %w", err)
	}
	defer srv.kill()

	phase(emit, "connect", say("Client: resolve address and route, connect, ping", "客户端：解析地址和路由、连接、ping"))
	cliArgs := []string{"-c", "-v", "-d", "-I", top.Client.IP(), "-a", top.Server.IP(), "-p", port, "-C", fmt.Sprint(count)}
	note(emit, "info", sandbox.Same("$ rping "+strings.Join(cliArgs, " ")))
	var cliErr error
	for attempt := 1; ; attempt++ {
		cliLog = &lineLog{start: start}
		cli, err := startLogged(rctx, cliLog, rping, cliArgs...)
		if err != nil {
			return fmt.Errorf("start rping client: %w", err)
		}
		select {
		case <-cli.done:
		case <-rctx.Done():
			cli.kill()
		}
		cliErr = cli.err
		lines, _ := cliLog.snapshot()
		refusedEarly := cliErr != nil && !strings.Contains(strings.Join(lines, "\n"), "RDMA_CM_EVENT_ESTABLISHED")
		if !refusedEarly || attempt == 20 || rctx.Err() != nil {
			break
		}
		select {
		case <-srv.done:
		case <-time.After(300 * time.Millisecond):
			continue
		}
		break // the server is gone: no point trying again
	}
	if cliErr != nil {
		note(emit, "warn", say(fmt.Sprintf("rping client: %v", cliErr), "rping 客户端："+quoteZh(cliErr)))
	}
	select {
	case <-srv.done:
	case <-time.After(5 * time.Second):
		srv.kill()
	}

	var events []cmEvent
	pings := 0
	verbsLines := 0
	for _, lg := range []struct {
		name string
		l    *lineLog
	}{{"client", cliLog}, {"server", srvLog}} {
		lines, _ := lg.l.snapshot()
		for _, line := range lines {
			if m := cmEventRe.FindStringSubmatch(line); m != nil {
				events = append(events, cmEvent{Side: lg.name, Event: m[1]})
			}
			if lg.name == "client" && strings.HasPrefix(strings.TrimSpace(line), "ping data:") {
				pings++
			}
			if strings.HasPrefix(line, "created ") {
				verbsLines++
			}
			// rping's own output: raw tool output, shown as code in every language
			emit.Emit(sandbox.Event{Type: sandbox.EvLog, Level: "stderr", Message: lg.name + ": " + line})
		}
	}
	t := sandbox.NewTable(say("rdma_cm events", "rdma_cm 事件"), say("side", "端"), say("event", "事件"),
		say("what it replaced in the manual exchange", "它替代了手工交换中的哪一步"))
	sideText := map[string]sandbox.Text{"server": say("server", "服务端"), "client": say("client", "客户端")}
	established, teardown := 0, 0
	for _, e := range events {
		switch e.Event {
		case "RDMA_CM_EVENT_ESTABLISHED":
			established++
		case "RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_TIMEWAIT_EXIT":
			teardown++ // after the pings: not part of connecting
		}
		m := cmMeaning(e.Event)
		t.AddRow(sideText[e.Side], sandbox.Same(e.Event), m)
		if m["en"] != "" {
			note(emit, "info", say(e.Side+": "+e.Event+" — "+m["en"], map[string]string{"server": "服务端", "client": "客户端"}[e.Side]+"："+e.Event+"——"+m["zh"]))
		}
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
	ok := cliErr == nil && established == 2 && pings == count
	connect := len(events) - teardown
	figs := map[string]float64{"cm_events": float64(len(events)), "connect_events": float64(connect), "disconnect_events": float64(teardown), "established": float64(established), "pings": float64(pings),
		"client_ok": b2f(cliErr == nil), "verbs_objects": float64(verbsLines)}
	v := say(fmt.Sprintf("rping connected with %d CM events (%d more came with the disconnect) and %d pings went through. The program gave the CM an IP address and a port; the CM found the device and GID, the route and MTU, carried the QP number and PSN to the peer in REQ/REP/RTU, and moved both QPs to RTS — every step of the manual exchange. What stays the same: PD, MR, CQ, QP, post and poll are ordinary verbs.", connect, teardown, pings),
		fmt.Sprintf("rping 经过 %d 个 CM 事件完成连接（断开时又来了 %d 个），%d 次 ping 成功。程序只给了 CM 一个 IP 地址和端口；CM 找到了设备和 GID、路由和 MTU，用 REQ/REP/RTU 把 QP 号和 PSN 带给对端，并把两端 QP 推进到 RTS——手工交换的每一步都替我们做了。不变的是：PD、MR、CQ、QP、投递和轮询仍是普通的 verbs。", connect, teardown, pings))
	if !ok {
		reason, reasonZh := "", ""
		if cliErr != nil {
			reason = cliErr.Error()
			reasonZh = "rping 客户端：" + reason
		}
		if errors.Is(rctx.Err(), context.DeadlineExceeded) {
			reason, reasonZh = "rping did not finish within 25 s", "rping 未在 25 秒内结束"
		}
		v = say(fmt.Sprintf("The CM connection did not complete as expected: %d ESTABLISHED events (want 2), %d of %d pings. %s", established, pings, count, reason),
			fmt.Sprintf("CM 连接没有按预期完成：%d 个 ESTABLISHED 事件（应为 2），%d/%d 次 ping。%s", established, pings, count, reasonZh))
	}
	result(emit, ok, v, figs)
	return nil
}

// cmDevice is the character device librdmacm talks to; the rdma_ucm module
// creates it, and the lab's guest loads that module just after boot.
const cmDevice = "/dev/infiniband/rdma_cm"

func waitCMDevice(ctx context.Context) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(cmDevice); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not exist: the rdma_ucm kernel module is not loaded (modprobe rdma_ucm)", cmDevice)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
