package rdmaexp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/rdmalab/rdmalab/machines/agentproc"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// perfMTUDecl is lesson 06's "path MTU": the same WRITE stream over a path MTU
// of 1024 (the veth pair at its usual 1500-byte MTU) and of 4096 (the veth
// MTU raised to 9000 inside the guest, put back afterwards — also when the
// run fails or is cancelled).
var perfMTUDecl = perfDecl{
	id:    "perf-mtu",
	title: say("Path MTU 1024 vs 4096", "路径 MTU：1024 对比 4096"),
	summary: say("Streams large RDMA WRITEs at path MTU 1024, then raises the veth pair's MTU to 9000 so Soft-RoCE offers 4096 and streams again; counts the packets per message on the device counters and compares the bandwidth. The MTU is put back afterwards.",
		"先在路径 MTU 1024 下流式发送大的 RDMA WRITE，再把 veth 对的 MTU 提高到 9000，让 Soft-RoCE 提供 4096，再发一次；从设备计数器数出每条消息的报文数，比较带宽。结束后恢复原来的 MTU。"),
	params: []sandbox.Param{
		{Name: "size", Kind: sandbox.ParamBytes, Title: say("Message size", "消息大小"), Min: 4 << 10, Max: 256 << 10, Default: int64(64 << 10)},
		{Name: "seconds", Kind: sandbox.ParamInt, Title: say("Seconds per MTU", "每种 MTU 的秒数"), Min: 1, Max: 4, Default: int64(2)},
	},
	presets: []sandbox.Preset{{ID: "default", Title: say("64 KiB", "64 KiB"), Values: map[string]any{"size": int64(64 << 10)}}},
	setup:   say("Finding the veth pair under the RDMA devices", "找到 RDMA 设备下面的 veth 对"),
	// a loaded TCG guest (two guests, load 25) needed over 60 s: each
	// MTU change waits for rxe to follow, and each of the perfRounds
	// streams drains its 16 WRITEs in flight
	timeout: 90 * time.Second,
	run:     runPerfMTU,
}

// jumboMTU is the netdev MTU that lets rxe offer a 4096-byte path MTU:
// 4096 plus the RoCEv2 headers (Ethernet payload: IP 20, UDP 8, BTH 12,
// RETH 16, ICRC 4) must fit, and rxe asks for room for the largest headers.
const jumboMTU = 9000

// mtuRow is one path MTU's stream and packet count.
type mtuRow struct {
	PathMTU int
	St      streamStats // the rounds together
	BW      floatSpread // MB/s per round
	Pkts    int64
}

func runPerfMTU(ctx context.Context, p sandbox.Params, top topology, emit sandbox.Emitter) error {
	size := int(p["size"].(int64))
	secs := time.Duration(p["seconds"].(int64)) * time.Second
	if !top.Wire() {
		err := errors.New("perf-mtu needs two RDMA devices on the two ends of a veth pair (the lab guest has them)")
		return failWith(emit, err, say(err.Error(), "perf-mtu 需要分别位于 veth 对两端的两个 RDMA 设备（实验室的虚拟机里有）。"))
	}
	links, err := netdevsOf(top)
	if err != nil {
		return failWith(emit, err, say(err.Error(), "找不到 RDMA 设备下面的网络设备："+quoteZh(err)))
	}
	orig := map[string]int{}
	for _, l := range links {
		orig[l.Attrs().Name] = l.Attrs().MTU
	}
	// A run killed before it could restore leaves a raised MTU: start
	// from the usual 1500 either way.
	raised := false
	for name, m := range orig {
		if m != 1500 {
			raised = true
			note(emit, "warn", say(fmt.Sprintf("%s had MTU %d (left by an earlier run?): setting 1500", name, m), fmt.Sprintf("%s 的 MTU 是 %d（之前的运行留下的？）：改回 1500", name, m)))
			orig[name] = 1500
		}
	}
	// The agent is killed with SIGKILL when a run is cancelled or times
	// out, and a killed process runs no deferred code. So a guard process
	// outside the run's process group holds the MTUs to restore and puts
	// them back as soon as its stdin closes — when this process ends, in
	// any way.
	guard, err := startMTUGuard(ctx, orig)
	if err != nil {
		return failWith(emit, err, say(err.Error(), "负责恢复 MTU 的守护进程没能启动："+quoteZh(err)))
	}
	defer guard.release()
	defer func() {
		if err := setMTUs(links, orig); err != nil {
			note(emit, "warn", say("Could not put the MTU back: "+err.Error(), "未能恢复 MTU："+quoteZh(err)))
			return
		}
		note(emit, "info", say("MTU back to "+mtuList(orig, ", "), "MTU 已恢复："+mtuList(orig, "，")))
	}()
	if err := setMTUs(links, orig); err != nil {
		return failWith(emit, err, say(err.Error(), "无法设置 veth 的 MTU："+quoteZh(err)))
	}
	defer lockThread()()
	var rows []mtuRow
	for _, want := range []struct {
		netMTU int
		path   verbs.MTU
	}{{1500, 3}, {jumboMTU, 5}} {
		if want.netMTU != 1500 {
			phase(emit, "raise", say(fmt.Sprintf("Raising the veth MTU to %d", want.netMTU), fmt.Sprintf("把 veth 的 MTU 提高到 %d", want.netMTU)))
			m := map[string]int{}
			for name := range orig {
				m[name] = want.netMTU
			}
			if err := setMTUs(links, m); err != nil {
				return failWith(emit, err, say(err.Error(), "无法设置 veth 的 MTU："+quoteZh(err)))
			}
		}
		if err := waitActiveMTU(ctx, top, want.path); err != nil {
			if ctx.Err() != nil {
				return err
			}
			return failWith(emit, err, say(err.Error(), fmt.Sprintf("改变 veth 的 MTU 之后，RDMA 设备没有提供路径 MTU %d：", want.path.Bytes())+quoteZh(err)))
		}
		row, err := mtuStream(ctx, emit, top, size, secs)
		if err != nil {
			return verbsError(emit, err)
		}
		rows = append(rows, row)
	}
	return reportMTU(emit, size, rows, raised)
}

// mtuStream opens a pair at the port's current MTU and streams for secs.
func mtuStream(ctx context.Context, emit sandbox.Emitter, top topology, size int, secs time.Duration) (mtuRow, error) {
	pr, err := openPair(top, rcOpts{BufSize: size, Access: verbs.AccessLocalWrite, SendWR: 16, RecvWR: 1},
		rcOpts{BufSize: size, Access: verbs.AccessLocalWrite | verbs.AccessRemoteWrite, SendWR: 1, RecvWR: 1})
	if err != nil {
		return mtuRow{}, err
	}
	defer pr.Close()
	path := pr.cli.port.ActiveMTU.Bytes()
	phase(emit, fmt.Sprintf("mtu-%d", path), say(fmt.Sprintf("Path MTU %d: streaming %s WRITEs", path, human(int64(size))), fmt.Sprintf("路径 MTU %d：流式发送 %s 的 WRITE", path, human(int64(size)))))
	if _, err := pr.stream(ctx, streamOpts{Size: size, Depth: 16, SignalEvery: 8, Msgs: 16}); err != nil {
		return mtuRow{}, err
	}
	c0, err := verbs.Counters(top.Client.Dev, 1)
	if err != nil {
		return mtuRow{}, err
	}
	// perfRounds short streams, each charted on its own: their spread is
	// what the verdict weighs (changing the MTU takes seconds, so the
	// rounds of one MTU run back to back rather than alternating)
	var total streamStats
	var bw []float64
	for i := 0; i < perfRounds; i++ {
		st, err := pr.stream(ctx, streamOpts{Size: size, Depth: 16, SignalEvery: 8, Budget: secs / perfRounds})
		if err != nil {
			return mtuRow{}, err
		}
		total, bw = addStats(total, st), append(bw, st.MBps())
		metric(emit, fmt.Sprintf("bw_%d", path), say(fmt.Sprintf("path MTU %d", path), fmt.Sprintf("路径 MTU %d", path)), float64(i+1)*secs.Seconds()/perfRounds, st.MBps(), "MB/s")
	}
	c1, err := verbs.Counters(top.Client.Dev, 1)
	if err != nil {
		return mtuRow{}, err
	}
	row := mtuRow{PathMTU: path, St: total, BW: floatSpreadOf(bw), Pkts: c1["sent_pkts"] - c0["sent_pkts"]}
	note(emit, "info", say(fmt.Sprintf("path MTU %d: %d WRITEs of %d B, %d packets sent (%.1f per WRITE), %s MB/s (median, lowest–highest of %d rounds)", path, total.Msgs, size, row.Pkts, ratio(float64(row.Pkts), float64(total.Msgs)), row.BW.say(1)["en"], row.BW.N),
		fmt.Sprintf("路径 MTU %d：%d 个 %d B 的 WRITE，发出 %d 个报文（每个 WRITE %.1f 个），%s MB/s（%d 轮的中位数，最低–最高）", path, total.Msgs, size, row.Pkts, ratio(float64(row.Pkts), float64(total.Msgs)), row.BW.say(1)["zh"], row.BW.N)))
	return row, nil
}

func reportMTU(emit sandbox.Emitter, size int, rows []mtuRow, raised bool) error {
	t := sandbox.NewTable(say("path MTU", "路径 MTU"), say("path MTU", "路径 MTU"), say(fmt.Sprintf("MB/s, median (lowest–highest of %d rounds)", rows[0].BW.N), fmt.Sprintf("MB/s，中位数（%d 轮中最低–最高）", rows[0].BW.N)), say("WRITEs", "WRITE 数"), say("packets sent", "发出的报文"), say("packets per WRITE", "每个 WRITE 的报文数"), say("CPU µs per WRITE", "每个 WRITE 的 CPU µs"))
	figs := map[string]float64{"size": float64(size), "raised_at_start": b2f(raised)}
	for _, r := range rows {
		ppw := ratio(float64(r.Pkts), float64(r.St.Msgs))
		t.AddRow(sandbox.Same(fmt.Sprint(r.PathMTU)), r.BW.say(1), sandbox.Same(fmt.Sprint(r.St.Msgs)), sandbox.Same(fmt.Sprint(r.Pkts)), sandbox.Same(f1(ppw)), sandbox.Same(f1(us(r.St.CPUPerMsg()))))
		k := fmt.Sprint(r.PathMTU)
		figs["mbps_"+k], figs["pkts_per_msg_"+k], figs["cpu_us_"+k] = r.BW.Med, ppw, us(r.St.CPUPerMsg())
		figs["mbps_min_"+k], figs["mbps_max_"+k] = r.BW.Min, r.BW.Max
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
	lo, hi := rows[0], rows[1]
	gain := ratio(hi.BW.Med, lo.BW.Med)
	kind := order(hi.BW, lo.BW, 1)
	figs["gain"], figs["verdict"] = gain, kind
	plo, phi := figs[fmt.Sprintf("pkts_per_msg_%d", lo.PathMTU)], figs[fmt.Sprintf("pkts_per_msg_%d", hi.PathMTU)]
	// the general rule is arithmetic, not a measurement: a measured
	// average (retransmissions, a counter read mid-packet) printed 65 in
	// one run and 64 in another (issue 30)
	nlo, nhi := (size+lo.PathMTU-1)/lo.PathMTU, (size+hi.PathMTU-1)/hi.PathMTU
	figs["rule_pkts_"+fmt.Sprint(lo.PathMTU)], figs["rule_pkts_"+fmt.Sprint(hi.PathMTU)] = float64(nlo), float64(nhi)
	gen := say(fmt.Sprintf("In general: a message is cut into packets of the path MTU, each with its own headers (and, on RoCE, its own ICRC) — %d B is ⌈%d ÷ %d⌉ = %d packets at path MTU %d and ⌈%d ÷ %d⌉ = %d at %d. Hardware does per-packet work in silicon, so a bigger MTU mostly saves header bytes (a few %%); every switch and NIC on the path must accept the larger frames.", size, size, lo.PathMTU, nlo, lo.PathMTU, size, hi.PathMTU, nhi, hi.PathMTU),
		fmt.Sprintf("一般规律：消息按路径 MTU 切成报文，每个报文都有自己的报头（在 RoCE 上还有自己的 ICRC）——%d B 在路径 MTU %d 时是 ⌈%d ÷ %d⌉ = %d 个报文，在 %d 时是 ⌈%d ÷ %d⌉ = %d 个。硬件用芯片做逐包处理，所以更大的 MTU 主要省下报头字节（百分之几）；路径上每台交换机和网卡都必须接受更大的帧。", size, lo.PathMTU, size, lo.PathMTU, nlo, hi.PathMTU, size, hi.PathMTU, nhi))
	rxe := say("Specific to rxe: every packet is an skb the kernel allocates, fills, checksums and hands through the veth pair, and the receiver parses and ACKs — per-packet work on the CPU, so fewer, larger packets pay off far more than on hardware.",
		"rxe 特有：每个报文都是内核分配、填充、计算校验并经 veth 对递交的一个 skb，接收方还要解析并回 ACK——这是 CPU 上的逐包开销，所以更少、更大的报文在这里的收益远大于硬件。")
	bEn := fmt.Sprintf("%s MB/s at path MTU %d against %s MB/s at %d (median, lowest–highest of %d rounds; ×%.2f)", hi.BW.say(1)["en"], hi.PathMTU, lo.BW.say(1)["en"], lo.PathMTU, hi.BW.N, gain)
	bZh := fmt.Sprintf("路径 MTU %d 下 %s MB/s，%d 下 %s MB/s（%d 轮的中位数，最低–最高；×%.2f）", hi.PathMTU, hi.BW.say(1)["zh"], lo.PathMTU, lo.BW.say(1)["zh"], hi.BW.N, gain)
	var v sandbox.Text
	switch kind {
	case 1:
		v = say(fmt.Sprintf("Path MTU %d moved %s WRITEs faster in every round: %s, with %.1f packets per WRITE instead of %.1f. ", hi.PathMTU, human(int64(size)), bEn, phi, plo)+rxe["en"]+" "+gen["en"],
			fmt.Sprintf("路径 MTU %d 下 %s 的 WRITE 每一轮都更快：%s，每个 WRITE 的报文数从 %.1f 降到 %.1f。", hi.PathMTU, human(int64(size)), bZh, plo, phi)+rxe["zh"]+gen["zh"])
	default:
		rxeLow := say("Specific to rxe: every packet is CPU work (an skb built, checksummed, passed through the veth pair, parsed and ACKed), so fewer packets usually pay off well here; this time the time went elsewhere — a shared, emulated machine is noisy: run it again.",
			"rxe 特有：每个报文都是 CPU 的工作（构造 skb、计算校验、经 veth 对递交、解析并回 ACK），所以在这里报文少了通常收益明显；这次时间花在了别处——共享的模拟机器噪声很大，请再运行一次。")
		if kind < 0 {
			v = say(fmt.Sprintf("Fewer packets (%.1f per WRITE at %d, %.1f at %d) but less bandwidth in every round this time: %s — something other than per-packet work limited the stream. ", phi, hi.PathMTU, plo, lo.PathMTU, bEn)+gen["en"]+" "+rxeLow["en"],
				fmt.Sprintf("报文少了（%d 时每个 WRITE %.1f 个，%d 时 %.1f 个），这次每一轮带宽却都更低：%s——限制速度的不是逐包开销。", hi.PathMTU, phi, lo.PathMTU, plo, bZh)+gen["zh"]+rxeLow["zh"])
			break
		}
		why := overlapWhy(say("the two MTUs' bandwidth", "两种 MTU 的带宽"), hi.BW.N)
		v = say(fmt.Sprintf("Fewer packets (%.1f per WRITE at %d, %.1f at %d): %s. Whether that moved more data is %s. ", phi, hi.PathMTU, plo, lo.PathMTU, bEn, why["en"])+gen["en"]+" "+rxeLow["en"],
			fmt.Sprintf("报文少了（%d 时每个 WRITE %.1f 个，%d 时 %.1f 个）：%s。是否因此搬了更多数据，%s。", hi.PathMTU, phi, lo.PathMTU, plo, bZh, why["zh"])+gen["zh"]+rxeLow["zh"])
	}
	result(emit, true, v, figs)
	return nil
}

// mtuList is "veth0 1500, veth1 1500" (sorted by name).
func mtuList(m map[string]int, sep string) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, m[n])
	}
	return strings.Join(parts, sep)
}

const helperMTUGuard = "mtu-guard"

// mtuGuardReq is what the guard restores: MTU by link name.
type mtuGuardReq struct {
	MTUs map[string]int `json:"mtus"`
}

// mtuGuard is the running guard process.
type mtuGuard struct {
	p *agentproc.Proc
}

// startMTUGuard starts the guard in its own process group (the run's
// group is killed as a whole) without a parent-death signal, and waits
// until it has the MTUs.
func startMTUGuard(ctx context.Context, mtus map[string]int) (*mtuGuard, error) {
	p, _, err := startGuard(helperMTUGuard, "the MTU guard", mtuGuardReq{MTUs: mtus})
	if err != nil {
		return nil, err
	}
	return &mtuGuard{p: p}, nil
}

// release closes the guard's stdin (it restores the MTUs and exits) and
// waits for it.
func (g *mtuGuard) release() {
	g.p.CloseInput()
	select {
	case <-g.p.Exited():
	case <-time.After(5 * time.Second):
	}
	g.p.Close()
}

// mtuGuardHelper reads the MTUs, says "armed", blocks until stdin closes
// (the experiment finished, or was killed), then sets them.
func mtuGuardHelper(ctx context.Context, in io.Reader, out io.Writer) error {
	var req mtuGuardReq
	r, err := guardRequest(in, &req)
	if err != nil {
		return err
	}
	for name, m := range req.MTUs {
		if m < 1280 || m > jumboMTU || !strings.HasPrefix(name, "veth") {
			return fmt.Errorf("mtu guard: refusing MTU %d for %q", m, name)
		}
	}
	if _, err := io.WriteString(out, "armed\n"); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, r) // until EOF
	var links []netlink.Link
	for name := range req.MTUs {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return err
		}
		links = append(links, l)
	}
	return setMTUs(links, req.MTUs)
}

// netdevsOf finds the network devices under the client's and the server's
// RDMA device (the two ends of the veth pair).
func netdevsOf(top topology) ([]netlink.Link, error) {
	var out []netlink.Link
	for _, s := range []side{top.Client, top.Server} {
		b, err := os.ReadFile(filepath.Join("/sys/class/infiniband", s.Dev, "ports/1/gid_attrs/ndevs", strconv.Itoa(s.GID.Index)))
		if err != nil {
			return nil, fmt.Errorf("the netdev under %s: %w", s.Dev, err)
		}
		l, err := netlink.LinkByName(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("the netdev under %s: %w", s.Dev, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// setMTUs sets each link's MTU from mtus (by name).
func setMTUs(links []netlink.Link, mtus map[string]int) error {
	var errs []error
	for _, l := range links {
		if m, ok := mtus[l.Attrs().Name]; ok {
			if err := netlink.LinkSetMTU(l, m); err != nil {
				errs = append(errs, fmt.Errorf("set the MTU of %s to %d: %w", l.Attrs().Name, m, err))
			}
		}
	}
	return errors.Join(errs...)
}

// waitActiveMTU waits (up to 5 s) until both devices offer path MTU want:
// rxe follows its netdev's MTU when the kernel notifies it of the change.
func waitActiveMTU(ctx context.Context, top topology, want verbs.MTU) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok := true
		var got verbs.MTU
		for _, s := range []side{top.Client, top.Server} {
			c, err := verbs.Open(s.Dev)
			if err != nil {
				return err
			}
			pa, err := c.QueryPort(1)
			c.Close()
			if err != nil {
				return err
			}
			if pa.ActiveMTU != want {
				ok, got = false, pa.ActiveMTU
			}
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the RDMA devices offer path MTU %d, not %d, after the netdev MTU changed", got.Bytes(), want.Bytes())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
