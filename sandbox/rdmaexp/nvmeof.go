package rdmaexp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	wirecap "github.com/rdmalab/rdmalab/sandbox/capture"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
	"golang.org/x/sys/unix"
)

// NVMeoF is lesson 08's NVMe over Fabrics experiment: one namespace
// (null_blk) exported by the kernel's target over RDMA and over TCP,
// connected by the kernel's host with nvme-cli, and read at random in
// 4 KiB blocks at a few queue depths over each — IOPS, latency percentiles
// and CPU per read. Target and host are one kernel and share the server's
// device (rxe0), which loops the packets back to itself: over the veth
// pair (host on rxe1) reads at queue depth 4 stalled for tens of seconds
// on the guest's 6.1 kernel (NVMe I/O timeouts), at depth 1 they did not.
func NVMeoF() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "nvmeof",
		Title: say("NVMe over Fabrics: RDMA vs TCP", "NVMe-oF：RDMA 与 TCP 对比"),
		Summary: say("Exports a namespace with the kernel's NVMe target over RDMA and TCP, connects it with nvme connect, checks the transport in the kernel's view and reads 4 KiB blocks at random at a few queue depths: IOPS, latency percentiles and CPU per read.",
			"用内核的 NVMe 目标端经 RDMA 和 TCP 导出一个命名空间，用 nvme-cli 连接，从内核视图核实传输，再以几种队列深度随机读取 4 KiB 块：IOPS、时延百分位和每次读取的 CPU 时间。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Timing,
		Params: []sandbox.Param{
			transportParam(),
			{Name: "max_depth", Kind: sandbox.ParamInt, Title: say("Deepest queue depth (1, 4, 16 up to it)", "最大队列深度（1、4、16，直到它为止）"), Min: 1, Max: 16, Default: int64(16)},
			{Name: "seconds", Kind: sandbox.ParamInt, Title: say("Seconds per depth", "每种深度的秒数"), Min: 1, Max: 5, Default: int64(2)},
			{Name: "capture", Kind: sandbox.ParamBool, Title: say("Capture one read on the wire (rxe1 → rxe0)", "抓下线上的一次读取（rxe1 → rxe0）"), Default: true},
		},
		Timeout: 5 * time.Minute,
		Run:     runNVMeoF,
	}
}

// nvmeofPoint is one measured row: one read run at each depth, and
// upperRounds at the deepest, whose figures the verdict compares
// (DESIGN.md: a verdict must survive a rerun).
type nvmeofPoint struct {
	transport string
	depth     int
	rounds    []readResult
}

// of is the spread of f over the point's rounds.
func (pt nvmeofPoint) of(f func(readResult) float64) floatSpread {
	v := make([]float64, len(pt.rounds))
	for i, r := range pt.rounds {
		v[i] = f(r)
	}
	return floatSpreadOf(v)
}

// cell prints a figure of the point as the table does: one run's value,
// or median (lowest–highest) of its rounds, with no decimals.
func (pt nvmeofPoint) cell(f func(readResult) float64) sandbox.Text {
	if len(pt.rounds) == 1 {
		return sandbox.Same(f0(f(pt.rounds[0])))
	}
	return pt.of(f).say(0)
}

// The figures of one read run a row shows.
var (
	readIOPS  = func(r readResult) float64 { return r.iops() }
	readP50   = func(r readResult) float64 { return r.pct(50) }
	readP99   = func(r readResult) float64 { return r.pct(99) }
	readCPU   = func(r readResult) float64 { all, _ := r.cpuPerIO(); return all }
	readerCPU = func(r readResult) float64 { _, rd := r.cpuPerIO(); return rd }
	readPkts  = func(r readResult) float64 { return float64(r.RoCEPkts) / float64(max(1, r.IOs)) }
)

func runNVMeoF(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) (err error) {
	top, err := pickTopology()
	if err != nil {
		return err
	}
	transports := []string{"rdma", "tcp"}
	if t := p["transport"].(string); t != "both" {
		transports = []string{t}
	}
	var depths []int
	for d := 1; d <= int(p["max_depth"].(int64)); d *= 4 {
		depths = append(depths, d)
	}
	dur := time.Duration(p["seconds"].(int64)) * time.Second
	// one device for both ends (see the doc comment); the veth pair only
	// for the capture of one read
	wire := top
	top.Client = top.Server
	note(emit, "info", top.describe())

	// What an earlier run left (its guard killed too) is counted — the
	// guest tests assert a cancelled run left nothing — and removed; then
	// a guard cleans up when this run ends, however it ends.
	unlock, err := lockNVMeoF(2 * time.Minute)
	if err != nil {
		return err
	}
	lc, ls, lm := nvmeofLeft(nvmeofUnload)
	figs := map[string]float64{"left_ctrls_at_start": float64(lc), "left_subsystems_at_start": float64(ls), "left_modules_at_start": float64(lm)}
	_ = cleanNVMeoF(nil)
	unlock()
	guard, unload, err := armUnloadGuard(helperNVMeoFGuard, "the NVMe-oF clean-up guard", nvmeofUnload)
	if err != nil {
		return err
	}
	defer guard.release()

	phase(emit, "target", say("Target: nvmet over RDMA and TCP, a null_blk namespace", "目标端：经 RDMA 和 TCP 的 nvmet，命名空间为 null_blk"))
	if err := loadNVMeoFModules(ctx); err != nil {
		return err
	}
	if err := exportNVMeoF(top.Server.IP()); err != nil {
		return err
	}
	note(emit, "info", say(fmt.Sprintf("configfs: subsystem %s, namespace 1 on /dev/nullb0, port %s (rdma) and port %s (tcp) on %s:%s", nvmeofNQN, nvmeofPortRDMA, nvmeofPortTCP, top.Server.IP(), nvmeofSvcID),
		fmt.Sprintf("configfs：子系统 %s，命名空间 1 位于 /dev/nullb0，端口 %s（rdma）和端口 %s（tcp）监听 %s:%s", nvmeofNQN, nvmeofPortRDMA, nvmeofPortTCP, top.Server.IP(), nvmeofSvcID)))

	roce := func() int64 {
		var n int64
		for _, d := range []string{top.Server.Dev, top.Client.Dev} {
			if c, err := verbs.Counters(d, 1); err == nil {
				n += c["sent_pkts"]
			}
			if !top.Wire() {
				break
			}
		}
		return n
	}
	var points []nvmeofPoint
	seen := map[string]string{}
	for _, tr := range transports {
		phase(emit, "connect-"+tr, say("Host: nvme connect -t "+tr, "主机端：用 nvme-cli 经 "+tr+" 连接"))
		c, args, err := connectNVMeoF(ctx, tr, top.Server.IP(), top.Client.IP())
		if err != nil {
			return err
		}
		note(emit, "info", sandbox.Same("$ nvme "+strings.Join(args, " ")))
		seen[tr] = c.Transport
		note(emit, "info", say(fmt.Sprintf("kernel's view: /sys/class/nvme/%s/transport = %s, address %s; namespace /dev/%s", c.Name, c.Transport, c.Address, c.Disk),
			fmt.Sprintf("内核视图：/sys/class/nvme/%s/transport = %s，地址 %s；命名空间 /dev/%s", c.Name, c.Transport, c.Address, c.Disk)))
		for _, d := range depths {
			n := 1
			if d == depths[len(depths)-1] {
				n = upperRounds // the depth the verdict compares
			}
			pt := nvmeofPoint{transport: tr, depth: d}
			for round := range n {
				what := say(fmt.Sprintf("4 KiB random reads over %s, queue depth %d", tr, d), fmt.Sprintf("经 %s 随机读取 4 KiB，队列深度 %d", tr, d))
				if n > 1 {
					what = say(fmt.Sprintf("%s, round %d of %d", what["en"], round+1, n), fmt.Sprintf("%s，第 %d 轮（共 %d 轮）", what["zh"], round+1, n))
				}
				phase(emit, fmt.Sprintf("read-%s-%d", tr, d), what)
				r, err := randRead(ctx, c.Disk, d, dur, roce)
				if err != nil {
					return err
				}
				pt.rounds = append(pt.rounds, r)
			}
			points = append(points, pt)
		}
		phase(emit, "disconnect-"+tr, say("nvme disconnect", "断开连接"))
		if err := disconnectAndWait(); err != nil {
			return err
		}
		if tr == "rdma" && p["capture"].(bool) {
			if err := captureOneRead(ctx, emit, wire, figs); err != nil {
				return err
			}
		}
	}

	phase(emit, "clean", say("Clean-up: disconnect, unexport, unload the modules", "清理：断开连接、撤销导出、卸载模块"))
	if err := guard.release(); err != nil {
		return fmt.Errorf("clean-up: %w", err)
	}
	lc, ls, lm = nvmeofLeft(unload)

	t := sandbox.NewTable(say(fmt.Sprintf("4 KiB random reads over NVMe-oF (measured here, Soft-RoCE under emulation); at the deepest queue, median (lowest–highest) of %d rounds", upperRounds),
		fmt.Sprintf("经 NVMe-oF 随机读取 4 KiB（本机实测，仿真环境中的 Soft-RoCE）；最深队列处为 %d 轮的中位数（最低–最高）", upperRounds)),
		say("transport", "传输"), say("queue depth", "队列深度"), sandbox.Same("IOPS"), say("p50 µs", "p50（µs）"), say("p99 µs", "p99（µs）"),
		say("CPU µs per read, all", "每次读取的 CPU µs（全部）"), say("CPU µs per read, reader", "每次读取的 CPU µs（读取进程）"), say("RoCE packets per read", "每次读取的 RoCE 报文"))
	figs["controllers_left"], figs["subsystems_left"], figs["modules_left"] = float64(lc), float64(ls), float64(lm)
	for _, pt := range points {
		ppi := pt.of(readPkts)
		t.AddRow(sandbox.Same(pt.transport), sandbox.Same(fmt.Sprint(pt.depth)), pt.cell(readIOPS), pt.cell(readP50), pt.cell(readP99),
			pt.cell(readCPU), pt.cell(readerCPU), sandbox.Same(f1(ppi.Med)))
		k := fmt.Sprintf("%s_%d", pt.transport, pt.depth)
		ios := 0
		for _, r := range pt.rounds {
			ios += r.IOs
		}
		cpu := pt.of(readCPU)
		figs["ios_"+k] = float64(ios)
		figs["iops_"+k] = pt.of(readIOPS).Med
		figs["p50_us_"+k] = pt.of(readP50).Med
		figs["p99_us_"+k] = pt.of(readP99).Med
		figs["cpu_us_"+k] = cpu.Med
		figs["cpu_us_min_"+k], figs["cpu_us_max_"+k] = cpu.Min, cpu.Max
		figs["reader_cpu_us_"+k] = pt.of(readerCPU).Med
		figs["roce_pkts_per_io_"+k] = ppi.Med
		figs["rounds_"+k] = float64(len(pt.rounds))
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
	for tr, got := range seen {
		if got == tr {
			figs["transport_"+tr] = 1
		}
	}
	v, ok, cpuOrder := nvmeofVerdict(points, seen, depths[len(depths)-1])
	if cpuOrder != nil {
		figs["cpu_order"] = *cpuOrder
	}
	result(emit, ok && lc+ls+lm == 0, v, figs)
	return nil
}

func f0(v float64) string { return fmt.Sprintf("%.0f", v) }

// disconnectAndWait deletes the lab's controllers and waits until they are
// gone (deleting returns before the queues are torn down).
func disconnectAndWait() error {
	if err := disconnectNVMeoF(); err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); len(findNVMeoFCtrls()) > 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// captureOneRead connects the host on rxe1 to the target on rxe0 across
// the veth pair, captures the RoCEv2 packets of one 4 KiB read on the
// host's port and shows them in the packet view (lesson 05's): the command
// capsule SEND, the target's RDMA WRITE of the data, the response SEND.
// One read at a time: over the veth pair deeper queues stalled (see
// NVMeoF). Keep-alive commands on the admin queue may join the capture.
func captureOneRead(ctx context.Context, emit sandbox.Emitter, top topology, figs map[string]float64) error {
	if !top.Wire() || top.Client.GID.Netdev == "" {
		note(emit, "info", say("No capture: it needs two Soft-RoCE devices on two netdevs (the lab's guest has rxe0 and rxe1 on a veth pair).",
			"不抓包：这需要位于两个网络设备上的两个 Soft-RoCE 设备（实验室虚拟机里是 veth 对上的 rxe0 和 rxe1）。"))
		return nil
	}
	phase(emit, "capture", say(fmt.Sprintf("Capture one 4 KiB read: host on %s → target on %s", top.Client.Dev, top.Server.Dev),
		fmt.Sprintf("抓下一次 4 KiB 读取：主机端在 %s 上 → 目标端在 %s 上", top.Client.Dev, top.Server.Dev)))
	c, _, err := connectNVMeoF(ctx, "rdma", top.Server.IP(), top.Client.IP())
	if err != nil {
		return err
	}
	defer func() { _ = disconnectAndWait() }()
	fd, err := unix.Open("/dev/"+c.Disk, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /dev/%s: %w", c.Disk, err)
	}
	defer unix.Close(fd)
	mem, err := unix.Mmap(-1, 0, readBlock, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	defer unix.Munmap(mem)
	capt, err := wirecap.Start(top.Client.GID.Netdev, wirecap.Limits{Packets: 40}, wirecap.IsRoCEv2)
	if err != nil {
		return err
	}
	_, rerr := unix.Pread(fd, mem, 8*readBlock)
	time.Sleep(300 * time.Millisecond) // the last acknowledgements
	res := capt.Stop()
	if rerr != nil {
		return fmt.Errorf("pread /dev/%s: %w", c.Disk, rerr)
	}
	if res.Err != nil {
		return fmt.Errorf("capture: %w", res.Err)
	}
	hostIP, tgtIP := top.Client.IP(), top.Server.IP()
	ev, err := res.Event(map[string]sandbox.Text{hostIP: say(top.Client.Dev+" (NVMe host)", top.Client.Dev+"（NVMe 主机端）"), tgtIP: say(top.Server.Dev+" (NVMe target)", top.Server.Dev+"（NVMe 目标端）")})
	if err != nil {
		return err
	}
	packets, err := wirecap.Decode(ev.Capture.Pcap, map[string]string{hostIP: "host", tgtIP: "target"})
	if err != nil {
		return err
	}
	// Linux's host registers every I/O buffer (nvme-rdma register_always)
	// and asks for remote invalidation (NVME_SGL_FMT_INVALIDATE in the keyed
	// SGL); the target then answers with SEND with Invalidate naming that
	// rkey (nvmet_rdma_queue_response). inv counts those responses.
	var cmd, writes, wbytes, resp, inv int
	for _, pk := range packets {
		switch {
		case pk.Src == hostIP && strings.HasPrefix(pk.OpName, "SEND"):
			cmd++
		case pk.Src == tgtIP && strings.HasPrefix(pk.OpName, "RDMA WRITE"):
			writes++
			wbytes += pk.PayloadLen
		case pk.Src == tgtIP && strings.HasPrefix(pk.OpName, "SEND"):
			resp++
			if strings.Contains(pk.OpName, "Invalidate") {
				inv++
			}
		}
	}
	emit.Emit(ev)
	invEn, invZh := "", ""
	if inv > 0 {
		invEn = fmt.Sprintf(" — %d of them SEND with Invalidate: the reply also invalidates the rkey the host exposed for this read (the host asked for it in the keyed SGL; lesson 07's remote invalidation, in production)", inv)
		invZh = fmt.Sprintf("——其中 %d 个是带失效的 SEND：回复同时让主机为这次读取公开的 rkey 失效（主机在带钥匙的 SGL 里要求了这一点；这就是第 07 课讲的远程失效，用在生产里）", inv)
	}
	note(emit, "info", say(fmt.Sprintf("On the wire: %d SEND from the host (the command capsule), %d RDMA WRITE packets from the target carrying %d bytes into the host's buffer, %d SEND from the target (the response capsule%s), and the acknowledgements.", cmd, writes, wbytes, resp, invEn),
		fmt.Sprintf("线上：主机端发出 %d 个 SEND（命令胶囊），目标端发出 %d 个 RDMA WRITE 报文、把 %d 字节写进主机的缓冲区，目标端再发出 %d 个 SEND（响应胶囊%s），另有确认报文。", cmd, writes, wbytes, resp, invZh)))
	figs["capture_cmd_sends"], figs["capture_data_writes"], figs["capture_write_bytes"], figs["capture_resp_sends"] = float64(cmd), float64(writes), float64(wbytes), float64(resp)
	figs["capture_resp_invalidate"] = float64(inv)
	return nil
}

// nvmeofVerdict reads the deepest point of each transport; with both, it
// compares their CPU per read over the rounds (cpuOrder: order's figure,
// rdma against tcp; nil without both).
func nvmeofVerdict(points []nvmeofPoint, seen map[string]string, depth int) (v sandbox.Text, ok bool, cpuOrder *float64) {
	at := map[string]nvmeofPoint{}
	for _, pt := range points {
		if pt.depth == depth {
			at[pt.transport] = pt
		}
	}
	ok = true
	for tr, got := range seen {
		ok = ok && got == tr && at[tr].of(func(r readResult) float64 { return float64(r.IOs) }).Min > 0
	}
	rd, hasR := at["rdma"]
	tc, hasT := at["tcp"]
	ok = ok && (!hasR || rd.of(func(r readResult) float64 { return float64(r.RoCEPkts) }).Min > 0)
	hw := say(" Hardware reference (NVMe RDMA transport specification; Linux drivers/nvme/target/rdma.c and tcp.c): on an RDMA NIC the target's RDMA WRITE of the 4 KiB and the transport's acknowledgements are done by the NIC by DMA — no CPU copies the data on either side, the CPU only submits the command and handles one completion per read; NVMe/TCP still copies every byte in the kernel on both ends — checksums and segmentation are offloaded to the NIC (checksum offload, TSO) and NVMe/TCP's digests are off unless nvme connect asks for them, so the copies are what TCP keeps.",
		"硬件参考（NVMe RDMA 传输规范；Linux drivers/nvme/target/rdma.c 与 tcp.c）：在 RDMA 网卡上，目标端对 4 KiB 数据的 RDMA WRITE 和传输层确认都由网卡以 DMA 完成——两端都没有 CPU 复制数据，CPU 只提交命令、为每次读取处理一个完成；NVMe/TCP 则仍要在两端的内核里复制每个字节——校验和与分段已卸载给网卡（校验和卸载、TSO），NVMe/TCP 的摘要除非连接时用 --hdr-digest、--data-digest 要求，否则是关闭的，所以 TCP 留下的代价是这些复制。")
	here := say(" Here both transports run on the CPU: Soft-RoCE builds each RoCE packet, copies the payload and computes the ICRC in the kernel, as TCP copies (over the veth pair TCP does not even checksum: packets pass as CHECKSUM_PARTIAL in 64 KiB GSO segments) — so these figures compare two software paths, not an offload.",
		"这里两种传输都跑在 CPU 上：Soft-RoCE 在内核里构造每个 RoCE 报文、复制载荷、计算 ICRC，正如 TCP 要复制（在 veth 对上 TCP 连校验和都不算：报文以 CHECKSUM_PARTIAL、最多 64 KiB 的 GSO 段交过去）——所以这些数字比较的是两条软件路径，而不是卸载。")
	switch {
	case hasR && hasT:
		ra, ta := rd.of(readCPU), tc.of(readCPU)
		// the rounds name a cheaper transport only when every round of
		// one lies below every round of the other, as the table prints them
		o := order(ra, ta, 0)
		cheaper := say(fmt.Sprintf("over %d rounds the CPU per read of the two overlaps, so neither was cheaper here (a rerun could order them either way)", ra.N),
			fmt.Sprintf("%d 轮中两者每次读取的 CPU 时间互相重叠，在这里分不出谁更省（重跑一次先后可能颠倒）", ra.N))
		switch o {
		case -1:
			cheaper = say(fmt.Sprintf("rdma cost less CPU per read here, in each of %d rounds", ra.N), fmt.Sprintf("在这里 rdma 每次读取花的 CPU 更少，%d 轮都是如此", ra.N))
		case 1:
			cheaper = say(fmt.Sprintf("tcp cost less CPU per read here, in each of %d rounds", ra.N), fmt.Sprintf("在这里 tcp 每次读取花的 CPU 更少，%d 轮都是如此", ra.N))
		}
		ri, rp, rc := rd.cell(readIOPS), rd.cell(readP99), rd.cell(readCPU)
		ti, tp, tcc := tc.cell(readIOPS), tc.cell(readP99), tc.cell(readCPU)
		ppi := f1(rd.of(readPkts).Med)
		en := fmt.Sprintf("The same namespace over both transports: the kernel reports transport rdma for one controller and tcp for the other, and only the rdma reads moved RoCE packets (%s per read). At queue depth %d: rdma %s IOPS, p99 %s µs, %s µs of CPU per read; tcp %s IOPS, p99 %s µs, %s µs of CPU per read — %s.",
			ppi, depth, ri["en"], rp["en"], rc["en"], ti["en"], tp["en"], tcc["en"], cheaper["en"])
		zh := fmt.Sprintf("同一个命名空间经两种传输：内核报告一个控制器的传输为 rdma、另一个为 tcp，并且只有 rdma 的读取产生了 RoCE 报文（每次读取 %s 个）。队列深度 %d 时：rdma %s IOPS，p99 %s µs，每次读取 %s µs CPU；tcp %s IOPS，p99 %s µs，每次读取 %s µs CPU——%s。",
			ppi, depth, ri["zh"], rp["zh"], rc["zh"], ti["zh"], tp["zh"], tcc["zh"], cheaper["zh"])
		return sandbox.Text{"en": en + here["en"] + hw["en"], "zh": zh + here["zh"] + hw["zh"]}, ok, &o
	case hasR:
		ri, rp, rc := rd.cell(readIOPS), rd.cell(readP99), rd.cell(readCPU)
		ppi := f1(rd.of(readPkts).Med)
		en := fmt.Sprintf("The kernel reports transport rdma for the controller, and the reads moved %s RoCE packets each. At queue depth %d: %s IOPS, p99 %s µs, %s µs of CPU per read.", ppi, depth, ri["en"], rp["en"], rc["en"])
		zh := fmt.Sprintf("内核报告这个控制器的传输为 rdma，每次读取产生 %s 个 RoCE 报文。队列深度 %d 时：%s IOPS，p99 %s µs，每次读取 %s µs CPU。", ppi, depth, ri["zh"], rp["zh"], rc["zh"])
		return sandbox.Text{"en": en + here["en"] + hw["en"], "zh": zh + here["zh"] + hw["zh"]}, ok, nil
	case hasT:
		ti, tp, tcc := tc.cell(readIOPS), tc.cell(readP99), tc.cell(readCPU)
		en := fmt.Sprintf("The kernel reports transport tcp for the controller. At queue depth %d: %s IOPS, p99 %s µs, %s µs of CPU per read.", depth, ti["en"], tp["en"], tcc["en"])
		zh := fmt.Sprintf("内核报告这个控制器的传输为 tcp。队列深度 %d 时：%s IOPS，p99 %s µs，每次读取 %s µs CPU。", depth, ti["zh"], tp["zh"], tcc["zh"])
		return sandbox.Text{"en": en + hw["en"], "zh": zh + hw["zh"]}, ok, nil
	}
	return say("No reads were measured.", "没有测到任何读取。"), false, nil
}
