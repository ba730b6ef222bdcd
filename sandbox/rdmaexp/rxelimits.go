package rdmaexp

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/expkit"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// RxeLimits is the experiment "what this device cannot do": for each
// feature lesson 07 teaches as hardware-only — XRC, DC, ODP, device
// memory, CQ moderation, dma-buf (GPUDirect) — the capability the device
// reports and the errno of one real attempt.
func RxeLimits() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "rxe-limits",
		Title: say("What this device cannot show: asked, not assumed", "这台设备演示不了什么：问过，而不是假设"),
		Summary: say(
			"Asks the lab's device about XRC, DC, on-demand paging, device memory, CQ moderation and dma-buf registration: the capability it reports (ibv_query_device_ex) and the errno of one real attempt of each — next to what each feature is for on hardware that has it.",
			"向实验室的设备询问 XRC、DC、按需分页（ODP）、设备内存、CQ 中断合并和 dma-buf 注册：它报告的能力（ibv_query_device_ex），以及逐个真实尝试一次得到的 errno——旁边写着每个功能在支持它的硬件上用来做什么。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Shareable,
		Presets: []sandbox.Preset{{ID: "default", Title: say("ask the device", "询问设备"), Values: map[string]any{}}},
		Timeout: time.Minute,
		Run:     runRxeLimits,
	}
}

func attemptCell(e syscall.Errno) sandbox.Text {
	if e == 0 {
		return say("works (0)", "可用（0）")
	}
	n := errnoShort(e)
	return say(fmt.Sprintf("%s (%s)", n, verbs.Strerror(e)), fmt.Sprintf("%s（%s）", n, expkit.ErrnoZh(n, verbs.Strerror(e))))
}

func runRxeLimits(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	top, err := pickTopology()
	if err != nil {
		return err
	}
	dev := top.Server.Dev
	phase(emit, "query", say("ibv_query_device_ex on "+dev, dev+" 上的 ibv_query_device_ex"))
	c, err := verbs.Open(dev)
	if err != nil {
		return verbsError(emit, err)
	}
	defer c.Close()
	caps, err := c.QueryCaps()
	if err != nil {
		return verbsError(emit, err)
	}
	pd, err := c.AllocPD()
	if err != nil {
		return verbsError(emit, err)
	}
	defer pd.Close()
	cq, err := c.NewCQ(4, nil)
	if err != nil {
		return verbsError(emit, err)
	}
	defer cq.Close()
	buf, err := verbs.NewBuffer(4096)
	if err != nil {
		return err
	}
	defer buf.Close()

	phase(emit, "probe", say("one real attempt of each feature", "每个功能真实尝试一次"))
	probe := func(f string) syscall.Errno {
		e, err := pd.Probe(f, cq, buf)
		if err != nil {
			return syscall.EIO
		}
		return e
	}
	figs := map[string]float64{"query_ex": b2f(caps.Extended)}
	yesNo := func(b bool) sandbox.Text {
		return say(map[bool]string{true: "set", false: "not set"}[b], map[bool]string{true: "已设置", false: "未设置"}[b])
	}
	tab := sandbox.NewTable(say("features this lab's device ("+dev+") was asked about", "向本实验室设备（"+dev+"）询问的功能"),
		say("feature", "功能"), say("what it is for", "用途"), say("capability the device reports", "设备报告的能力"), say("one real attempt", "一次真实尝试"))
	row := func(_ string, name, purpose, capText sandbox.Text, attempt sandbox.Text) {
		tab.AddRow(name, purpose, capText, attempt)
	}

	xrcE := probe("xrc")
	figs["xrc_cap"], figs["xrc_errno"] = b2f(caps.Has(verbs.DevCapXRC)), float64(xrcE)
	row("xrc", say("XRC (extended reliable connected)", "XRC（扩展可靠连接）"),
		say("a sending process needs one XRC initiator QP per remote node, not one RC QP per remote process, and names the destination process's XRC SRQ in each message; the receiving node's target QPs are shared through an XRC domain: far fewer QPs in MPI jobs", "发送进程对每个远端节点只需一个 XRC 发起端（INI）QP，而不是对每个远端进程一个 RC QP，每条消息指明目的进程的 XRC SRQ；接收节点上的目标端（TGT）QP 通过 XRC 域共享：MPI 作业需要的 QP 少得多"),
		say("IBV_DEVICE_XRC: "+yesNo(caps.Has(verbs.DevCapXRC))["en"], "IBV_DEVICE_XRC："+yesNo(caps.Has(verbs.DevCapXRC))["zh"]),
		say("ibv_open_xrcd → "+attemptCell(xrcE)["en"], "ibv_open_xrcd → "+attemptCell(xrcE)["zh"]))

	row("dc", say("DC (dynamically connected)", "DC（动态连接）"),
		say("one QP reaches any peer, connecting on demand: RC semantics at UD's QP count (NVIDIA mlx5 only)", "一个 QP 按需连接任意对端：以 UD 的 QP 数量获得 RC 的语义（仅 NVIDIA mlx5）"),
		say("no generic verbs bit: mlx5dv_query_device, an mlx5 device", "通用 verbs 没有这个能力位：需要 mlx5dv_query_device 和 mlx5 设备"),
		say("not tried: the device's driver is rxe, not mlx5", "未尝试：设备的驱动是 rxe，不是 mlx5"))

	odpE := probe("odp")
	figs["odp_caps"], figs["odp_errno"] = float64(caps.ODPGeneralCaps), float64(odpE)
	row("odp", say("ODP (on-demand paging)", "ODP（按需分页）"),
		say("register memory without pinning it: the NIC faults pages in like the CPU does", "注册内存而不钉住：网卡像 CPU 一样按缺页调入页面"),
		sandbox.Same(fmt.Sprintf("odp_caps.general_caps = 0x%x", caps.ODPGeneralCaps)),
		say("ibv_reg_mr(IBV_ACCESS_ON_DEMAND) → "+attemptCell(odpE)["en"], "ibv_reg_mr(IBV_ACCESS_ON_DEMAND) → "+attemptCell(odpE)["zh"]))

	dmE := probe("dm")
	figs["max_dm_size"], figs["dm_errno"] = float64(caps.MaxDMSize), float64(dmE)
	row("dm", say("device memory", "设备内存"),
		say("the NIC's own memory (how much is the device's: max_dm_size; ConnectX's MEMIC offers 100+ KiB), for counters or flags that remote atomics hit without a PCIe round trip", "网卡自身的内存（有多少由设备决定：看 max_dm_size；ConnectX 的 MEMIC 有 100 多 KiB），放远程原子操作频繁访问的计数器或标志，免去 PCIe 往返"),
		sandbox.Same(fmt.Sprintf("max_dm_size = %d", caps.MaxDMSize)),
		say("ibv_alloc_dm(4096) → "+attemptCell(dmE)["en"], "ibv_alloc_dm(4096) → "+attemptCell(dmE)["zh"]))

	modE := probe("cq-moderation")
	figs["cq_mod_max_count"], figs["cq_mod_errno"] = float64(caps.CQModMaxCount), float64(modE)
	row("cq-moderation", say("CQ moderation", "CQ 中断合并"),
		say("one completion event per N completions or per T µs, instead of one per completion", "每 N 个完成或每 T 微秒才产生一次完成事件，而不是每个完成一次"),
		sandbox.Same(fmt.Sprintf("cq_mod_caps.max_cq_count = %d", caps.CQModMaxCount)),
		say("ibv_modify_cq(count 8, period 16) → "+attemptCell(modE)["en"], "ibv_modify_cq（count 8，period 16）→ "+attemptCell(modE)["zh"]))

	dbE := probe("dmabuf")
	figs["dmabuf_errno"] = float64(dbE)
	row("dmabuf", say("dma-buf registration (GPUDirect RDMA)", "dma-buf 注册（GPUDirect RDMA）"),
		say("register a GPU's memory so the NIC moves it without a copy through host memory", "注册 GPU 显存，让网卡直接搬运它，不经主机内存中转"),
		say("no bit: the provider implements ibv_reg_dmabuf_mr or not", "没有能力位：要看驱动是否实现了 ibv_reg_dmabuf_mr"),
		say("ibv_reg_dmabuf_mr(fd −1) → "+attemptCell(dbE)["en"]+" (EBADF would mean: implemented)", "ibv_reg_dmabuf_mr(fd −1) → "+attemptCell(dbE)["zh"]+"（若为 EBADF 则说明已实现）"))

	// Beside them, what the device does support from this lesson.
	figs["mw_type2"] = b2f(caps.Has(verbs.DevCapMemWindow2B) || caps.Has(verbs.DevCapMemWindow2A))
	figs["atomic_cap"] = float64(caps.AtomicCap)
	figs["max_srq"], figs["max_mcast_grp"] = float64(caps.MaxSRQ), float64(caps.MaxMcastGrp)
	row("have", say("what it does support (this lesson)", "它支持的（本课）"),
		say("atomics, SRQ, memory windows, multicast", "原子操作、SRQ、内存窗口、组播"),
		sandbox.Same(fmt.Sprintf("atomic_cap %s, max_srq %d, MEM_WINDOW_TYPE_2B %v, max_mcast_grp %d", caps.AtomicCap, caps.MaxSRQ, caps.Has(verbs.DevCapMemWindow2B), caps.MaxMcastGrp)),
		say("see the experiments above", "见上面的实验"))
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: tab})

	unsupported := 0
	for _, e := range []syscall.Errno{xrcE, odpE, dmE, modE, dbE} {
		if e != 0 {
			unsupported++
		}
	}
	figs["unsupported"] = float64(unsupported)
	v := say(fmt.Sprintf("%s refused %d of the 5 features it was asked to use (XRC %s, ODP %s, device memory %s, CQ moderation %s, dma-buf %s), and DC exists only behind mlx5's own interface. These are taught from their specification and vendor documents; what the lab runs for real is what the device accepted.",
		dev, unsupported, errnoShort(xrcE), errnoShort(odpE), errnoShort(dmE), errnoShort(modE), errnoShort(dbE)),
		fmt.Sprintf("%s 拒绝了被要求使用的 5 个功能中的 %d 个（XRC %s，ODP %s，设备内存 %s，CQ 中断合并 %s，dma-buf %s），而 DC 只存在于 mlx5 自己的接口之后。这些功能按规范和厂商文档讲授；实验室真正运行的，是设备接受了的那些。",
			dev, unsupported, errnoShort(xrcE), errnoShort(odpE), errnoShort(dmE), errnoShort(modE), errnoShort(dbE)))
	result(emit, true, v, figs)
	return nil
}

// errnoShort is an errno's name, or "0" for success. Errno 95 has two
// names on Linux; the verbs man pages say EOPNOTSUPP.
func errnoShort(e syscall.Errno) string {
	switch e {
	case 0:
		return "0"
	case syscall.EOPNOTSUPP:
		return "EOPNOTSUPP"
	}
	return verbs.ErrnoName(e)
}
