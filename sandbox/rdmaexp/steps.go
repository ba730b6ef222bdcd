package rdmaexp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/expkit"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// VerbsSteps is the interactive experiment "connect a QP by hand": the
// learner presses Next and each step makes the real verbs call on rxe1 —
// open, PD, MR, CQ, QP, INIT, the exchange with the peer on rxe0, RTR, RTS,
// a WRITE and its completion, a SEND and its completion, teardown — and
// sees what came back beside the C code of the call. At some steps the
// learner may make a mistake on purpose and see what the device answers.
func VerbsSteps() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "verbs-steps",
		Title: say("Connect a QP by hand, one verbs call at a time", "一次一个 verbs 调用，亲手连通 QP"),
		Summary: say(
			"Press Next: each step makes the real verbs call on the lab's Soft-RoCE device and shows what came back (lkey, rkey, QP number, GID, PSN, each completion's fields) beside its C code. At RTR, RTS and the WRITE you may make a mistake on purpose and see what the device answers.",
			"按“下一步”：每一步都在实验环境的 Soft-RoCE 设备上真正调用一次 verbs，并在 C 代码旁显示返回了什么（lkey、rkey、QP 号、GID、PSN、每个完成事件的字段）。在 RTR、RTS 和 WRITE 这几步，你可以故意犯错，看设备怎么回答。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Shareable, // it shows values and statuses, not timings
		Commands: []sandbox.CommandSpec{
			{Name: "next", Title: say("Next step", "下一步")},
			{Name: "wrong-qpn", Title: say("Mistake: RTR with a wrong remote QPN", "犯错：RTR 时填错对端 QPN")},
			{Name: "post-early", Title: say("Mistake: post a SEND before RTS", "犯错：在 RTS 之前投递 SEND")},
			{Name: "few-rnr", Title: say("Mistake: RTS with rnr_retry 0", "犯错：RTS 时 rnr_retry 设为 0")},
			{Name: "write-oob", Title: say("Mistake: WRITE beyond the peer's MR", "犯错：WRITE 越过对端 MR 的边界")},
			{Name: "reconnect", Title: say("Reset both QPs and connect again", "重置两端 QP 并重新连接")},
			{Name: "finish", Title: say("Tear everything down now", "立即拆除全部资源")},
		},
		Timeout: 20 * time.Minute,
		Idle:    3 * time.Minute,
		Run:     runVerbsSteps,
	}
}

// stepDef is one step of the walk.
type stepDef struct {
	id    string
	title sandbox.Text
	run   func(s *stepper, variant string) (stepOut, error)
}

// stepOut is what a step shows. A returned error is a broken lab, not a
// mistake: mistakes are outcomes (ok false, status set).
type stepOut struct {
	call   string
	code   string
	rows   [][]string
	detail sandbox.Text
	ok     bool
	status string // errno or completion status name when the step failed
	figs   map[string]float64
}

const stepMRSize = 4096

// stepRetryCnt is the RTS retry_cnt of the walk: a peer that never answers
// is given up on after 3 resends (perftest uses 7, which Soft-RoCE's
// completer treats as "retry forever", like rnr_retry 7).
const stepRetryCnt = 3

// stepper is the state kept between steps.
type stepper struct {
	ctx  context.Context
	emit sandbox.Emitter
	top  topology

	i       int // index of the next step
	retryAt int // index of the post step to redo after a reconnect
	broken  bool
	// brokenBy is the completion status that broke the QP ("" while it
	// is not broken): a reconnect repairs the mistake behind it, not one
	// that has not shown yet.
	brokenBy string
	finished bool

	dev  *verbs.Context
	port verbs.PortAttr
	pd   *verbs.PD
	buf  *verbs.Buffer
	mr   *verbs.MR
	cq   *verbs.CQ
	qp   *verbs.QP
	peer *rc

	psn    uint32
	attr   verbs.QPAttr   // what we gave the QP (mistakes included)
	remote verbs.Endpoint // the peer's side of the exchange
	start  map[string]map[string]uint64
}

func stepList() []stepDef {
	return []stepDef{
		{"open", say("Open the device", "打开设备"), (*stepper).open},
		{"pd", say("Allocate a protection domain", "分配保护域"), (*stepper).allocPD},
		{"mr", say("Register a memory region", "注册内存区域"), (*stepper).regMR},
		{"cq", say("Create a completion queue", "创建完成队列"), (*stepper).createCQ},
		{"qp", say("Create an RC queue pair", "创建 RC 队列对"), (*stepper).createQP},
		{"init", say("RESET → INIT", "RESET → INIT"), (*stepper).toInit},
		{"exchange", say("Exchange QPN, PSN, GID, address and rkey out of band", "带外交换 QPN、PSN、GID、地址和 rkey"), (*stepper).exchange},
		{"rtr", say("INIT → RTR (ready to receive)", "INIT → RTR（可接收）"), (*stepper).toRTR},
		{"rts", say("RTR → RTS (ready to send)", "RTR → RTS（可发送）"), (*stepper).toRTS},
		{"write", say("Post an RDMA WRITE", "投递一个 RDMA WRITE"), (*stepper).postWrite},
		{"poll-write", say("Poll the CQ for the WRITE's completion", "轮询 CQ，取 WRITE 的完成"), (*stepper).pollWrite},
		{"send", say("Post a SEND (the peer posts its RECV late)", "投递一个 SEND（对端晚一点才投递 RECV）"), (*stepper).postSend},
		{"poll-send", say("Poll both CQs for the SEND and the RECV", "轮询两端 CQ，取 SEND 和 RECV 的完成"), (*stepper).pollSend},
		{"teardown", say("Tear down in reverse order", "按相反顺序拆除"), (*stepper).teardown},
	}
}

func stepIndex(id string) int {
	return slices.IndexFunc(stepList(), func(d stepDef) bool { return d.id == id })
}

// offers is the set of commands the walk accepts now.
func (s *stepper) offers() []string {
	steps := stepList()
	if s.finished || s.i >= len(steps) {
		return nil
	}
	if s.broken {
		return []string{"reconnect", "finish"}
	}
	o := []string{"next"}
	switch steps[s.i].id {
	case "rtr":
		o = append(o, "wrong-qpn")
	case "rts":
		o = append(o, "few-rnr", "post-early")
	case "write":
		o = append(o, "write-oob")
	}
	if steps[s.i].id != "teardown" && s.i > 0 {
		o = append(o, "finish")
	}
	return o
}

func runVerbsSteps(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	top, err := pickTopology()
	if err != nil {
		return err
	}
	s := &stepper{ctx: ctx, emit: emit, top: top, psn: rand.Uint32() & 0xffffff, retryAt: -1}
	defer s.closeAll()
	s.start, _ = verbs.Resources()
	cmds := sandbox.CommandsFrom(ctx)
	if cmds == nil {
		return fmt.Errorf("verbs-steps is interactive: it needs a command stream (run it from the lesson page)")
	}
	note(emit, "info", top.describe())
	plan := sandbox.NewTable(say("steps", "步骤"), sandbox.Same("#"), say("step", "步骤"))
	for i, d := range stepList() {
		plan.AddRow(sandbox.Same(fmt.Sprint(i+1)), d.title)
	}
	ok := true
	emit.Emit(sandbox.Event{Type: sandbox.EvStep, Name: "start", Message: "Ready", Messages: say("Ready: press Next for the first call", "准备就绪：按“下一步”执行第一个调用"),
		Detail: say(fmt.Sprintf("You drive the client on %s; the peer on %s does its part when the steps need it. Every value shown is what the device returned just now.", top.Client.Dev, top.Server.Dev),
			fmt.Sprintf("你操纵 %s 上的客户端；%s 上的对端在需要时完成自己的部分。显示的每个值都是设备刚刚返回的。", top.Client.Dev, top.Server.Dev)),
		Table: plan, OK: &ok, Offers: s.offers()})

	backstop := time.NewTimer(VerbsSteps().IdleLimit() + sandbox.IdleGrace)
	defer backstop.Stop()
	for !s.finished {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-backstop.C:
			s.abandon()
			return nil
		case c, open := <-cmds:
			if !open {
				s.abandon()
				return nil
			}
			backstop.Reset(VerbsSteps().IdleLimit() + sandbox.IdleGrace)
			if err := s.command(c.Cmd); err != nil {
				return verbsError(emit, err)
			}
		}
	}
	return nil
}

// abandon tears down because no more commands will come.
func (s *stepper) abandon() {
	note(s.emit, "warn", say("No more commands (the page was left or stayed idle): tearing everything down.", "不会再有命令了（页面已离开或长时间无操作）：拆除全部资源。"))
	s.run(stepIndex("teardown"), "")
}

func (s *stepper) command(cmd string) error {
	if !slices.Contains(s.offers(), cmd) {
		note(s.emit, "warn", say(fmt.Sprintf("%q is not possible at this step; choose one of %v.", cmd, s.offers()), fmt.Sprintf("这一步不能执行“%s”；可选：%s。", quotedInner(cmd), strings.Join(s.offers(), "、"))))
		return nil
	}
	switch cmd {
	case "finish":
		return s.run(stepIndex("teardown"), "")
	case "reconnect":
		return s.reconnect()
	case "next":
		return s.run(s.i, "")
	}
	return s.run(s.i, cmd)
}

// run performs step i with a variant (a mistake, or "" for the right way).
func (s *stepper) run(i int, variant string) error {
	d := stepList()[i]
	out, err := d.run(s, variant)
	if err != nil {
		return err
	}
	if variant != "post-early" { // a side trip: the walk stays where it was
		s.i = i + 1
	}
	if d.id == "teardown" {
		s.finished = true
	}
	if !out.ok && strings.HasPrefix(d.id, "poll-") {
		s.broken = true
		s.brokenBy = out.status
		s.retryAt = i - 1
	}
	title := d.title
	if variant != "" && variant != "post-early" {
		v := say(variant, variant)
		for _, c := range VerbsSteps().Commands {
			if c.Name == variant {
				v = c.Title
			}
		}
		title = sandbox.Text{"en": title["en"] + " — " + v["en"], "zh": title["zh"] + "——" + v["zh"]}
	}
	if variant == "post-early" {
		title = say("Mistake: post a SEND while the QP is in RTR", "犯错：QP 还在 RTR 时投递 SEND")
	}
	ok := out.ok
	if out.figs == nil {
		out.figs = map[string]float64{}
	}
	out.figs["step"] = float64(i + 1)
	s.emit.Emit(sandbox.Event{Type: sandbox.EvStep, Name: d.id, Message: title["en"], Messages: title, Call: out.call, Code: out.code,
		Detail: out.detail, Table: stepTable(out.rows), OK: &ok, ErrnoName: out.status,
		Offers: s.offers(), Figures: out.figs})
	return nil
}

// refused turns a verbs error into a shown outcome (errno), or returns it
// when it is not a verbs error.
func refused(err error, out *stepOut) error {
	ve, ok := asVerbsError(err)
	if !ok {
		return err
	}
	out.ok = false
	out.status = verbs.ErrnoName(ve.Errno)
	out.rows = append(out.rows, []string{"returned", fmt.Sprintf("%s (%s)", verbs.ErrnoName(ve.Errno), verbs.Strerror(ve.Errno))})
	t := explain(ve.Call, ve.Errno)
	out.detail = t
	return nil
}

func (s *stepper) kernelCount(kind string) string {
	res, err := verbs.Resources()
	if err != nil {
		return "?"
	}
	return fmt.Sprintf("%d on %s (every process)", res[s.top.Client.Dev][kind], s.top.Client.Dev)
}

func (s *stepper) open(string) (stepOut, error) {
	dev := s.top.Client.Dev
	out := stepOut{call: "ibv_open_device", ok: true}
	var err error
	if s.dev, err = verbs.Open(dev); err != nil {
		return out, err
	}
	if s.port, err = s.dev.QueryPort(1); err != nil {
		return out, err
	}
	g := s.top.Client.GID
	out.code = fmt.Sprintf(`int n;
struct ibv_device **list = ibv_get_device_list(&n);   /* %v */
struct ibv_context *ctx = ibv_open_device(list[i]);   /* "%s" */
struct ibv_port_attr port;
ibv_query_port(ctx, 1, &port);
union ibv_gid gid;
ibv_query_gid(ctx, 1, %d, &gid);`, verbs.DeviceNames(), dev, g.Index)
	state := "ACTIVE"
	if !s.port.Active() {
		state = fmt.Sprint(s.port.State)
	}
	out.rows = [][]string{
		{"device", dev},
		{"port.state", state},
		{"port.active_mtu", fmt.Sprintf("%d bytes", s.port.ActiveMTU.Bytes())},
		{"port.link_layer", map[int]string{1: "InfiniBand", 2: "Ethernet (RoCE)"}[s.port.LinkLayer]},
		{"gid_index", fmt.Sprint(g.Index)},
		{"gid", g.GID.String() + " (" + g.GID.IP().String() + ", " + g.Type + ")"},
	}
	out.detail = say(fmt.Sprintf("Everything starts from a device context. The port's GID is its address: on RoCE v2 the IPv4 address %s written as an IPv6 address. Entry 0 of the GID table is the link-local fe80:: address, which cannot be routed, so the lab picked entry %d. The active MTU (%d bytes) is the largest payload one packet may carry.", g.GID.IP(), g.Index, s.port.ActiveMTU.Bytes()),
		fmt.Sprintf("一切从设备上下文开始。端口的 GID 就是它的地址：在 RoCE v2 上，就是写成 IPv6 形式的 IPv4 地址 %s。GID 表的第 0 项是不可路由的链路本地地址 fe80::，所以这里选了第 %d 项。活动 MTU（%d 字节）是一个包能携带的最大负载。", g.GID.IP(), g.Index, s.port.ActiveMTU.Bytes()))
	out.figs = map[string]float64{"mtu": float64(s.port.ActiveMTU.Bytes()), "gid_index": float64(g.Index)}
	return out, nil
}

func (s *stepper) allocPD(string) (stepOut, error) {
	out := stepOut{call: "ibv_alloc_pd", ok: true, code: "struct ibv_pd *pd = ibv_alloc_pd(ctx);"}
	var err error
	if s.pd, err = s.dev.AllocPD(); err != nil {
		return out, err
	}
	out.rows = [][]string{{"pd", "allocated"}, {"kernel's PD count", s.kernelCount("pd")}}
	out.detail = say("A protection domain groups QPs and MRs: a QP may only use memory registered in its own PD. It has no number the peer needs — it is a boundary inside this process, kept by the NIC.",
		"保护域把 QP 和 MR 分组：QP 只能使用注册在同一个 PD 里的内存。它没有需要告诉对端的编号——它是本进程内部、由网卡守护的边界。")
	return out, nil
}

var stepAccess = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead

func accessC(a verbs.Access) string {
	parts := strings.Split(a.String(), "|")
	for i, p := range parts {
		parts[i] = "IBV_ACCESS_" + p
	}
	return strings.Join(parts, " | ")
}

func (s *stepper) regMR(string) (stepOut, error) {
	out := stepOut{call: "ibv_reg_mr", ok: true}
	var err error
	if s.buf, err = verbs.NewBuffer(stepMRSize); err != nil {
		return out, err
	}
	if s.mr, err = s.pd.RegMR(s.buf, 0, stepMRSize, stepAccess); err != nil {
		return out, err
	}
	out.code = fmt.Sprintf(`void *buf = mmap(NULL, %d, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
struct ibv_mr *mr = ibv_reg_mr(pd, buf, %d,
        %s);`, stepMRSize, stepMRSize, accessC(stepAccess))
	out.rows = [][]string{
		{"mr->addr", fmt.Sprintf("0x%x", s.mr.Addr())},
		{"mr->length", fmt.Sprint(s.mr.Len())},
		{"mr->lkey", fmt.Sprintf("0x%x", s.mr.LKey())},
		{"mr->rkey", fmt.Sprintf("0x%x", s.mr.RKey())},
		{"access", s.mr.Access().String()},
		{"kernel's MR count", s.kernelCount("mr")},
	}
	out.detail = say(fmt.Sprintf("Registration pinned these 4 KiB and returned two keys. lkey 0x%x names this memory in our own work requests (each SGE carries addr, length, lkey); rkey 0x%x is what we will hand the peer, so its WRITEs and READs may touch exactly [addr, addr+4096) with the rights in access. LOCAL_WRITE lets the NIC write into it (a RECV or a READ's answer).", s.mr.LKey(), s.mr.RKey()),
		fmt.Sprintf("注册把这 4 KiB 钉在内存里，并返回两把钥匙。lkey 0x%x 在我们自己的工作请求里指代这块内存（每个 SGE 带着 addr、length、lkey）；rkey 0x%x 要交给对端，让它的 WRITE 和 READ 能按 access 里的权限访问恰好 [addr, addr+4096) 这一段。LOCAL_WRITE 允许网卡往里写（RECV 或 READ 的返回数据）。", s.mr.LKey(), s.mr.RKey()))
	out.figs = map[string]float64{"lkey": float64(s.mr.LKey()), "rkey": float64(s.mr.RKey())}
	return out, nil
}

func (s *stepper) createCQ(string) (stepOut, error) {
	out := stepOut{call: "ibv_create_cq", ok: true, code: "struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);"}
	var err error
	if s.cq, err = s.dev.NewCQ(16, nil); err != nil {
		return out, err
	}
	out.rows = [][]string{{"cqe (asked)", "16"}, {"completion channel", "none: we will poll"}, {"kernel's CQ count", s.kernelCount("cq")}}
	out.detail = say("The completion queue is where the NIC reports finished work requests. We give the QP this one CQ for both its send and its receive queue; without a completion channel it can only be polled.",
		"完成队列是网卡报告工作请求已完成的地方。这里让 QP 的发送队列和接收队列共用这一个 CQ；没有完成通道，只能轮询。")
	return out, nil
}

func (s *stepper) createQP(string) (stepOut, error) {
	out := stepOut{call: "ibv_create_qp", ok: true}
	var err error
	if s.qp, err = s.pd.NewQP(s.cq, s.cq, verbs.QPCaps{MaxSendWR: 16, MaxRecvWR: 16, MaxInline: 64}); err != nil {
		return out, err
	}
	st, _ := s.qp.State()
	out.code = `struct ibv_qp_init_attr init = {
    .send_cq = cq, .recv_cq = cq,
    .qp_type = IBV_QPT_RC,              /* or IBV_QPT_UC, IBV_QPT_UD */
    .cap = { .max_send_wr = 16, .max_recv_wr = 16,
             .max_send_sge = 1, .max_recv_sge = 1,
             .max_inline_data = 64 },
};
struct ibv_qp *qp = ibv_create_qp(pd, &init);`
	out.rows = [][]string{
		{"qp->qp_num", fmt.Sprintf("0x%x (%d)", s.qp.Num(), s.qp.Num())},
		{"qp_type", "RC"},
		{"state", st.String()},
		{"cap.max_inline_data (granted)", fmt.Sprint(s.qp.Caps().MaxInline)},
		{"kernel's QP count", s.kernelCount("qp")},
	}
	out.detail = say(fmt.Sprintf("The QP number 0x%x is what the peer must address. A new QP is in RESET: it can neither send nor receive. RC (reliable connected) talks to exactly one peer QP and gets every packet acknowledged; UC drops the acknowledgements; UD talks to any QP, one MTU per message, with an address handle per destination.", s.qp.Num()),
		fmt.Sprintf("QP 号 0x%x 是对端发包时要填的地址。新建的 QP 处于 RESET：既不能发也不能收。RC（可靠连接）只与一个对端 QP 通信，每个包都要确认；UC 去掉了确认；UD 可以发往任意 QP，每条消息最多一个 MTU，每个目的地需要一个地址句柄。", s.qp.Num()))
	out.figs = map[string]float64{"qp_num": float64(s.qp.Num())}
	return out, nil
}

func (s *stepper) toInit(string) (stepOut, error) {
	out := stepOut{call: "ibv_modify_qp", ok: true}
	s.attr = verbs.DefaultQPAttr(1, s.top.Client.GID.Index, s.port.ActiveMTU)
	s.attr.AccessFlags = stepAccess
	s.attr.MinRNRTimer = 1
	s.attr.RetryCnt = stepRetryCnt
	if err := s.qp.Modify(verbs.StateInit, s.attr); err != nil {
		return out, refused(err, &out)
	}
	st, _ := s.qp.State()
	out.code = fmt.Sprintf(`struct ibv_qp_attr a = {
    .qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0,
    .qp_access_flags = %s,
};
ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);`, accessC(stepAccess))
	out.rows = [][]string{{"port_num", "1"}, {"pkey_index", "0"}, {"qp_access_flags", stepAccess.String()}, {"state", st.String()}}
	out.detail = say("INIT binds the QP to a port and says what a remote peer may do through it (here: write and read our memory, given the rkey). In INIT we could already post receive buffers; nothing can be sent yet — the QP does not know its peer.",
		"INIT 把 QP 绑定到端口，并规定远端通过它能做什么（这里：凭 rkey 写和读我们的内存）。在 INIT 状态已经可以投递接收缓冲区，但还不能发送——QP 还不知道对端是谁。")
	return out, nil
}

func (s *stepper) local() verbs.Endpoint {
	return verbs.Endpoint{QPN: s.qp.Num(), PSN: s.psn, GID: s.top.Client.GID.GID.String(), Addr: s.mr.Addr(), RKey: s.mr.RKey(), Len: stepMRSize}
}

func (s *stepper) exchange(string) (stepOut, error) {
	// the calls its code makes: "(out of band)" was English in the zh page
	out := stepOut{call: "write() / read()", ok: true}
	var err error
	if s.peer, err = openRC(rcOpts{Side: s.top.Server, BufSize: stepMRSize, Access: stepAccess, SendWR: 16, RecvWR: 16, RNRRetry: 7}); err != nil {
		return out, err
	}
	me := s.local()
	if err := s.peer.connect(me); err != nil {
		return out, err
	}
	s.remote = s.peer.local()
	pst, _ := s.peer.qp.State()
	out.code = `struct endpoint { uint32_t qpn, psn; union ibv_gid gid;
                  uint64_t addr; uint32_t rkey; };
struct endpoint me = { qp->qp_num, my_psn, gid,
                       (uintptr_t)buf, mr->rkey }, peer;
write(sock, &me, sizeof me);     /* a TCP socket, or rdma_cm's private_data */
read(sock, &peer, sizeof peer);`
	out.rows = [][]string{
		{"ours: qpn", fmt.Sprintf("0x%x", me.QPN)}, {"ours: psn", fmt.Sprint(me.PSN)}, {"ours: gid", me.GID},
		{"ours: addr, rkey", fmt.Sprintf("0x%x, 0x%x", me.Addr, me.RKey)},
		{"peer: qpn", fmt.Sprintf("0x%x", s.remote.QPN)}, {"peer: psn", fmt.Sprint(s.remote.PSN)}, {"peer: gid", s.remote.GID},
		{"peer: addr, rkey, length", fmt.Sprintf("0x%x, 0x%x, %d", s.remote.Addr, s.remote.RKey, s.remote.Len)},
		{"peer's QP state", pst.String()},
	}
	out.detail = say(fmt.Sprintf("Verbs has no call for this step. Before two RC QPs can talk, each must learn the other's QP number, first packet sequence number (PSN) and GID — and, for one-sided WRITE and READ, the address and rkey of the memory it may touch. Programs send these out of band over a TCP socket — perftest writes them as one line of colon-separated hex fields (its KEY_PRINT_FMT_GID), the sketch here a struct — or the connection manager carries them. The peer on %s already used our values to move its QP to %s.", s.top.Server.Dev, pst),
		fmt.Sprintf("这一步没有对应的 verbs 调用。两个 RC QP 通信之前，双方都必须知道对方的 QP 号、起始包序号（PSN）和 GID——做单边 WRITE、READ 还要知道可访问内存的地址和 rkey。程序通过带外方式在 TCP 套接字上传递这些——perftest 把它们写成一行以冒号分隔的十六进制字段（它的 KEY_PRINT_FMT_GID），这里的示意代码发的是一个结构体——或者交给连接管理器携带。%s 上的对端已经用我们的值把它的 QP 推进到了 %s。", s.top.Server.Dev, pst))
	out.figs = map[string]float64{"peer_qpn": float64(s.remote.QPN), "psn": float64(s.psn), "peer_psn": float64(s.remote.PSN)}
	return out, nil
}

func (s *stepper) toRTR(variant string) (stepOut, error) {
	out := stepOut{call: "ibv_modify_qp", ok: true}
	g, err := s.remote.RemoteGID()
	if err != nil {
		return out, err
	}
	s.attr.DestQPN, s.attr.RQPSN, s.attr.DGID = s.remote.QPN, s.remote.PSN, g
	if variant == "wrong-qpn" {
		s.attr.DestQPN = s.remote.QPN ^ 0x10000 // a number no QP on the peer's device has
	}
	if err := s.qp.Modify(verbs.StateRTR, s.attr); err != nil {
		return out, refused(err, &out)
	}
	st, _ := s.qp.State()
	a := s.attr
	out.code = fmt.Sprintf(`struct ibv_qp_attr a = {
    .qp_state = IBV_QPS_RTR,
    .path_mtu = IBV_MTU_%d,
    .dest_qp_num = 0x%x,          /* the peer's QPN */
    .rq_psn = %d,                 /* the peer's first PSN */
    .max_dest_rd_atomic = %d, .min_rnr_timer = %d,
    .ah_attr = { .is_global = 1, .port_num = 1,
                 .grh = { .dgid = peer.gid, .sgid_index = %d,
                          .hop_limit = %d } },
};
ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
    IBV_QP_MIN_RNR_TIMER);`, a.PathMTU.Bytes(), a.DestQPN, a.RQPSN, a.MaxDestRdAtomic, a.MinRNRTimer, a.SGIDIndex, a.HopLimit)
	out.rows = [][]string{
		{"path_mtu", fmt.Sprint(a.PathMTU.Bytes())},
		{"dest_qp_num", fmt.Sprintf("0x%x", a.DestQPN)},
		{"rq_psn", fmt.Sprint(a.RQPSN)},
		{"ah_attr.grh.dgid", g.String() + " (" + g.IP().String() + ")"},
		{"sgid_index, hop_limit", fmt.Sprintf("%d, %d", a.SGIDIndex, a.HopLimit)},
		{"max_dest_rd_atomic, min_rnr_timer", fmt.Sprintf("%d, %d", a.MaxDestRdAtomic, a.MinRNRTimer)},
		{"state", st.String()},
	}
	out.detail = say("RTR (ready to receive) is where the QP learns its peer: the path MTU, the peer's QPN and GID (in the address vector), and the PSN the peer's first packet will carry. From now on the QP accepts packets from that peer.",
		"RTR（可接收）这一步让 QP 认识它的对端：路径 MTU、对端的 QPN 和 GID（在地址向量里），以及对端第一个包将携带的 PSN。从此 QP 接受来自这个对端的报文。")
	if variant == "wrong-qpn" {
		out.detail = say(fmt.Sprintf("ibv_modify_qp accepted dest_qp_num 0x%x although the peer's QP is 0x%x: nothing checks it now — no packet is sent at RTR. The mistake will show at the first WRITE: the peer's NIC has no QP with that number and drops the packets; our NIC waits for an acknowledgement that never comes.", a.DestQPN, s.remote.QPN),
			fmt.Sprintf("虽然对端 QP 是 0x%x，ibv_modify_qp 还是接受了 dest_qp_num 0x%x：此时没有任何检查——RTR 不发送任何报文。错误要到第一次 WRITE 才会暴露：对端网卡上没有这个编号的 QP，只能丢弃报文；我们的网卡则一直等一个永远不会来的确认。", s.remote.QPN, a.DestQPN))
	}
	out.figs = map[string]float64{"dest_qp_num": float64(a.DestQPN)}
	return out, nil
}

func (s *stepper) toRTS(variant string) (stepOut, error) {
	if variant == "post-early" {
		return s.postEarly()
	}
	out := stepOut{call: "ibv_modify_qp", ok: true}
	s.attr.SQPSN = s.psn
	s.attr.RNRRetry = 7
	if variant == "few-rnr" {
		s.attr.RNRRetry = 0
	}
	if err := s.qp.Modify(verbs.StateRTS, s.attr); err != nil {
		return out, refused(err, &out)
	}
	st, _ := s.qp.State()
	a := s.attr
	out.code = fmt.Sprintf(`struct ibv_qp_attr a = {
    .qp_state = IBV_QPS_RTS,
    .sq_psn = %d,                 /* our first PSN, the one we sent the peer */
    .timeout = %d,                /* 4.096 us * 2^%d before a retry */
    .retry_cnt = %d,              /* retries when no ACK comes */
    .rnr_retry = %d,              /* retries when the peer has no RECV (7 = forever) */
    .max_rd_atomic = %d,
};
ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);`, a.SQPSN, a.Timeout, a.Timeout, a.RetryCnt, a.RNRRetry, a.MaxRdAtomic)
	timeout := 4.096 * float64(int(1)<<a.Timeout) / 1000
	out.rows = [][]string{
		{"sq_psn", fmt.Sprint(a.SQPSN)},
		{"timeout", fmt.Sprintf("%d (≈ %.0f ms per try)", a.Timeout, timeout)},
		{"retry_cnt", fmt.Sprint(a.RetryCnt)},
		{"rnr_retry", fmt.Sprint(a.RNRRetry)},
		{"state", st.String()},
	}
	out.detail = say(fmt.Sprintf("RTS (ready to send) sets how we send: our first PSN, how long to wait for an acknowledgement (timeout %d ≈ %.0f ms), how many times to resend when none comes (retry_cnt %d) and how many times to retry when the peer answers \"receiver not ready\" (rnr_retry %d; 7 means forever).", a.Timeout, timeout, a.RetryCnt, a.RNRRetry),
		fmt.Sprintf("RTS（可发送）规定怎么发：本端起始 PSN、等待确认多久（timeout %d ≈ %.0f 毫秒）、收不到确认时重发几次（retry_cnt %d），以及对端回答“接收方未就绪”时重试几次（rnr_retry %d；7 表示无限次）。", a.Timeout, timeout, a.RetryCnt, a.RNRRetry))
	if variant == "few-rnr" {
		out.detail = say("rnr_retry 0: the device accepted it. If a SEND arrives while the peer has no receive posted, the peer answers with an RNR NAK (receiver not ready) — and with no RNR retries our NIC gives up at the first one. Watch the SEND step.",
			"rnr_retry 0：设备接受了。如果 SEND 到达时对端没有投递接收请求，对端会回一个 RNR NAK（接收方未就绪）——而不允许 RNR 重试，我们的网卡收到第一个就会放弃。注意看 SEND 那一步。")
	}
	out.figs = map[string]float64{"rnr_retry": float64(a.RNRRetry)}
	return out, nil
}

// postEarly posts a SEND on a twin of our QP that is in RTR, as our QP is:
// Soft-RoCE refuses the post but keeps the request queued, and it would
// run once the QP reached RTS, so the real QP is not used.
func (s *stepper) postEarly() (stepOut, error) {
	out := stepOut{call: "ibv_post_send", ok: false}
	cq, err := s.dev.NewCQ(4, nil)
	if err != nil {
		return out, err
	}
	defer cq.Close()
	twin, err := s.pd.NewQP(cq, cq, verbs.QPCaps{MaxSendWR: 4, MaxRecvWR: 4})
	if err != nil {
		return out, err
	}
	defer twin.Close()
	for _, st := range []verbs.QPState{verbs.StateInit, verbs.StateRTR} {
		if err := twin.Modify(st, s.attr); err != nil {
			return out, err
		}
	}
	copy(s.buf.Bytes(), "sent too early")
	out.code = fmt.Sprintf(`/* the QP is in RTR */
struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 14, .lkey = 0x%x };
struct ibv_send_wr wr = { .wr_id = 99, .opcode = IBV_WR_SEND,
                          .send_flags = IBV_SEND_SIGNALED,
                          .sg_list = &sge, .num_sge = 1 }, *bad;
int rc = ibv_post_send(qp, &wr, &bad);`, s.mr.LKey())
	perr := twin.PostSend(verbs.SendWR{ID: 99, Op: verbs.OpSend, Flags: verbs.SendSignaled, MR: s.mr, Length: 14})
	st, _ := twin.State()
	out.rows = [][]string{{"QP state", st.String()}}
	if perr != nil {
		if err := refused(perr, &out); err != nil {
			return out, err
		}
		out.detail = say("The send queue of a QP in RTR does not run, and the IB specification asks for an immediate error on such a post (C10-29; C10-25 in INIT): Soft-RoCE returned EINVAL. That check is rxe's kernel module, looking at the QP's state when the doorbell write() arrives — rdma-core's rxe provider had already put the WQE in the send queue before that write(), so the request stays queued and would run once the QP reached RTS (which is why this post went to a twin of our QP, also in RTR, destroyed at once). That leftover WQE is rxe's own quirk. mlx5 follows the spec: since rdma-core v40 (commit 988f90bc1; Debian 12 ships v44) its ibv_post_send returns ENOMEM until the QP is in RTS and queues nothing. Sending needs RTS, where the QP knows its PSN, timeout and retries.",
			"RTR 状态的 QP 发送队列不工作，IB 规范要求对这样的投递立即报错（C10-29；INIT 状态是 C10-25）：Soft-RoCE 返回了 EINVAL。这个检查来自 rxe 内核模块，它在门铃 write() 到达时查看 QP 的状态——而 rdma-core 里 rxe 的用户态驱动在这次 write() 之前已经把 WQE 放进了发送队列，所以请求留在队列里，等 QP 到 RTS 时就会执行（这就是这次投递用了一个同样处于 RTR、随即销毁的替身 QP 的原因）。留下的这个 WQE 是 rxe 自己的怪癖。mlx5 遵守规范：从 rdma-core v40 起（提交 988f90bc1；Debian 12 带的是 v44），QP 进入 RTS 之前它的 ibv_post_send 返回 ENOMEM，什么也不入队。发送需要 RTS——那时 QP 才知道自己的 PSN、超时和重试次数。")
	} else {
		out.rows = append(out.rows, []string{"returned", "0 (accepted)"})
		out.detail = say("This device accepted a post on a QP in RTR, against the IB specification, which asks for an immediate error (C10-29): Soft-RoCE's kernel module refuses such a post with EINVAL, and mlx5 with ENOMEM since rdma-core v40 (commit 988f90bc1). Older mlx5 providers accepted it; either way the send queue only runs in RTS.",
			"本设备接受了对 RTR 状态 QP 的投递，这不符合 IB 规范——规范要求立即报错（C10-29）：Soft-RoCE 的内核模块以 EINVAL 拒绝这种投递，mlx5 从 rdma-core v40 起（提交 988f90bc1）以 ENOMEM 拒绝。更早的 mlx5 用户态驱动会接受；无论哪种，发送队列都只在 RTS 状态工作。")
	}
	return out, nil
}

const stepMsg = "written by an RDMA WRITE   "

func (s *stepper) postWrite(variant string) (stepOut, error) {
	out := stepOut{call: "ibv_post_send", ok: true}
	copy(s.buf.Bytes(), stepMsg)
	wr := verbs.SendWR{ID: 1, Op: verbs.OpWrite, Flags: verbs.SendSignaled, MR: s.mr, Length: len(stepMsg), RemoteAddr: s.remote.Addr, RKey: s.remote.RKey}
	if variant == "write-oob" {
		wr.RemoteAddr = s.remote.Addr + s.remote.Len - 16
		wr.Length = 64
	}
	out.code = fmt.Sprintf(`struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = %d, .lkey = 0x%x };
struct ibv_send_wr wr = {
    .wr_id = 1, .opcode = IBV_WR_RDMA_WRITE,
    .send_flags = IBV_SEND_SIGNALED,    /* we want a completion */
    .sg_list = &sge, .num_sge = 1,
    .wr.rdma = { .remote_addr = 0x%x, .rkey = 0x%x },
}, *bad;
int rc = ibv_post_send(qp, &wr, &bad);`, wr.Length, s.mr.LKey(), wr.RemoteAddr, wr.RKey)
	out.rows = [][]string{
		{"wr_id", "1"}, {"opcode", "IBV_WR_RDMA_WRITE"},
		{"sge", fmt.Sprintf("addr 0x%x, length %d, lkey 0x%x", s.mr.Addr(), wr.Length, s.mr.LKey())},
		{"remote_addr, rkey", fmt.Sprintf("0x%x, 0x%x", wr.RemoteAddr, wr.RKey)},
	}
	if err := s.qp.PostSend(wr); err != nil {
		return out, refused(err, &out)
	}
	out.rows = append(out.rows, []string{"returned", "0"})
	out.detail = say("ibv_post_send returned 0 at once: it only wrote a work queue element (WQE) into the send queue and rang the doorbell. Whether the WRITE worked is not known yet — the answer comes later, as a completion in the CQ.",
		"ibv_post_send 立刻返回了 0：它只是往发送队列写了一个工作队列元素（WQE）并敲了门铃。WRITE 成没成功现在还不知道——答案稍后以完成事件的形式出现在 CQ 里。")
	if variant == "write-oob" {
		out.detail = say(fmt.Sprintf("This WRITE covers [peer addr + %d, + %d): 48 bytes past the end of the peer's %d-byte MR. ibv_post_send still returned 0 — the local NIC cannot know the peer's MR; the peer's NIC will check.", s.remote.Len-16, s.remote.Len+48, s.remote.Len),
			fmt.Sprintf("这个 WRITE 覆盖 [对端 addr + %d, + %d)：超出对端 %d 字节 MR 的末尾 48 字节。ibv_post_send 依然返回 0——本地网卡无从知道对端的 MR；检查由对端网卡来做。", s.remote.Len-16, s.remote.Len+48, s.remote.Len))
	}
	return out, nil
}

func wcRows(who string, wc verbs.WC) [][]string {
	return [][]string{
		{who + " wc.wr_id", fmt.Sprint(wc.WRID)},
		{who + " wc.status", fmt.Sprintf("%s (%s)", wc.Status, wc.Status.Description())},
		{who + " wc.opcode", "IBV_WC_" + wc.Opcode.String()},
		{who + " wc.byte_len", fmt.Sprint(wc.ByteLen)},
		{who + " wc.qp_num", fmt.Sprintf("0x%x", wc.QPNum)},
		{who + " wc.vendor_err", fmt.Sprintf("0x%x", wc.VendorErr)},
	}
}

const pollCode = `struct ibv_wc wc;
int n;
do n = ibv_poll_cq(cq, 1, &wc);      /* 0 = nothing yet */
while (n == 0);
if (wc.status != IBV_WC_SUCCESS)
    fprintf(stderr, "%s\n", ibv_wc_status_str(wc.status));`

func (s *stepper) pollWrite(string) (stepOut, error) {
	out := stepOut{call: "ibv_poll_cq", code: pollCode}
	started := time.Now()
	wc, err := s.peerWait(s.cq)
	if err != nil {
		return out, err
	}
	took := time.Since(started)
	out.rows = wcRows("", wc)
	st, _ := s.qp.State()
	out.rows = append(out.rows, []string{"waited", took.Round(time.Millisecond).String()}, []string{"our QP state now", st.String()})
	out.figs = map[string]float64{"status": float64(wc.Status), "wait_ms": float64(took.Milliseconds())}
	out.ok = wc.Status == verbs.WCSuccess
	if !out.ok {
		out.status = wc.Status.String()
	}
	switch wc.Status {
	case verbs.WCSuccess:
		got := strings.TrimRight(string(s.peer.buf.Bytes()[:len(stepMsg)]), " ")
		out.rows = append(out.rows, []string{"peer's memory now", fmt.Sprintf("%q", got)})
		out.detail = say("One completion: wr_id 1 — the id we chose when posting — finished with IBV_WC_SUCCESS, opcode RDMA_WRITE. The peer's memory holds our bytes, and the peer saw nothing: a WRITE makes no completion on the target, and its application was not asked (on Soft-RoCE the peer's kernel placed the bytes; a hardware RNIC places them by DMA).",
			"一个完成事件：wr_id 1——投递时我们自己选的编号——以 IBV_WC_SUCCESS 结束，opcode 为 RDMA_WRITE。对端内存里已经是我们的数据，而对端什么也没察觉：WRITE 在目标端不产生完成事件，也没有惊动它的应用程序（在 Soft-RoCE 上是对端的内核把数据放进去的；硬件 RNIC 用 DMA 放进去）。")
	case verbs.WCRetryExcErr:
		out.detail = say(fmt.Sprintf("IBV_WC_RETRY_EXC_ERR, transport retry counter exceeded, after %s: no acknowledgement came. With the wrong remote QPN given at RTR, the peer's NIC had no QP to deliver the WRITE to and dropped every packet; our NIC resent it retry_cnt (%d) times, one timeout each, then gave up. The QP is now in ERROR: every request still queued would complete with IBV_WC_WR_FLUSH_ERR. Reset and reconnect to go on.", took.Round(time.Millisecond), s.attr.RetryCnt),
			fmt.Sprintf("等了 %s 后得到 IBV_WC_RETRY_EXC_ERR（传输重试次数超限）：一直没有确认。RTR 时填错了对端 QPN，对端网卡找不到可以交付的 QP，只能丢弃每个报文；我们的网卡每隔一个超时重发一次，共 retry_cnt（%d）次，然后放弃。QP 现在处于 ERROR：队列里剩下的请求都会以 IBV_WC_WR_FLUSH_ERR 完成。重置并重新连接才能继续。", took.Round(time.Millisecond), s.attr.RetryCnt))
	case verbs.WCRemAccessErr:
		out.detail = say("IBV_WC_REM_ACCESS_ERR, remote access error: the peer's NIC checked the rkey, the range and the rights, found the WRITE running past the end of the MR and refused all of it (a NAK) — without its application. (On Soft-RoCE the peer's kernel did that check, on its CPU; a hardware RNIC does it in the NIC.) The error came back to our CQ, and our QP is now in ERROR. Reset and reconnect to go on.",
			"IBV_WC_REM_ACCESS_ERR（远程访问错误）：对端网卡检查了 rkey、范围和权限，发现这个 WRITE 越过了 MR 的末尾，于是整个拒绝（NAK）——全程没有惊动对端的应用程序。（在 Soft-RoCE 上，这个检查是对端的内核在它的 CPU 上做的；硬件 RNIC 在网卡里完成。）错误回到了我们的 CQ，我们的 QP 现在处于 ERROR。重置并重新连接才能继续。")
	default:
		out.detail = say(fmt.Sprintf("The WRITE failed with %s (%s); the QP is in %s.", wc.Status, wc.Status.Description(), st),
			fmt.Sprintf("WRITE 以 %s（%s）失败；QP 处于 %s。", wc.Status, wc.Status.Description(), st))
	}
	return out, nil
}

// peerWait waits for one completion on cq (ours or the peer's).
func (s *stepper) peerWait(cq *verbs.CQ) (verbs.WC, error) {
	wc, ok, err := pollFor(s.ctx, cq, 30*time.Second)
	if err != nil {
		return wc, err
	}
	if !ok {
		return wc, fmt.Errorf("verbs-steps: no completion within 30 s")
	}
	return wc, nil
}

const stepSend = "hello through SEND/RECV"

func rnrCounters(dev string) map[string]int64 {
	c, _ := verbs.Counters(dev, 1)
	out := map[string]int64{}
	for k, v := range c {
		if strings.Contains(k, "rnr") {
			out[k] = v
		}
	}
	return out
}

func (s *stepper) postSend(string) (stepOut, error) {
	out := stepOut{call: "ibv_post_send", ok: true}
	copy(s.buf.Bytes(), stepSend)
	before := rnrCounters(s.top.Client.Dev)
	out.code = fmt.Sprintf(`struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = %d, .lkey = 0x%x };
struct ibv_send_wr wr = { .wr_id = 2, .opcode = IBV_WR_SEND,
                          .send_flags = IBV_SEND_SIGNALED,
                          .sg_list = &sge, .num_sge = 1 }, *bad;
ibv_post_send(qp, &wr, &bad);
/* the peer, 100 ms later: */
struct ibv_recv_wr rwr = { .wr_id = 7, .sg_list = &peer_sge, .num_sge = 1 }, *rbad;
ibv_post_recv(peer_qp, &rwr, &rbad);`, len(stepSend), s.mr.LKey())
	if err := s.qp.PostSend(verbs.SendWR{ID: 2, Op: verbs.OpSend, Flags: verbs.SendSignaled, MR: s.mr, Length: len(stepSend)}); err != nil {
		return out, refused(err, &out)
	}
	time.Sleep(100 * time.Millisecond)
	if err := s.peer.qp.PostRecv(7, s.peer.mr, 0, stepMRSize); err != nil {
		return out, err
	}
	after := rnrCounters(s.top.Client.Dev)
	out.rows = [][]string{{"wr_id, opcode", "2, IBV_WR_SEND"}, {"length", fmt.Sprint(len(stepSend))}, {"returned", "0"}, {"peer: ibv_post_recv", "wr_id 7, 100 ms after our SEND"}}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out.rows = append(out.rows, []string{s.top.Client.Dev + " counter " + k, fmt.Sprintf("+%d", d)})
		}
	}
	out.detail = say("SEND is two-sided: it needs a receive buffer the peer posted. Here the peer posted its RECV 100 ms after our SEND arrived. Meanwhile the peer's NIC answered \"receiver not ready\" (RNR NAK) and our NIC waited and retried, as rnr_retry allows.",
		"SEND 是双边操作：需要对端事先投递的接收缓冲区。这里对端在我们的 SEND 到达 100 毫秒后才投递 RECV。在此期间，对端网卡回答“接收方未就绪”（RNR NAK），我们的网卡按 rnr_retry 的允许等待并重试。")
	return out, nil
}

func (s *stepper) pollSend(string) (stepOut, error) {
	out := stepOut{call: "ibv_poll_cq", code: pollCode}
	wc, err := s.peerWait(s.cq)
	if err != nil {
		return out, err
	}
	out.rows = wcRows("ours:", wc)
	out.figs = map[string]float64{"status": float64(wc.Status)}
	out.ok = wc.Status == verbs.WCSuccess
	if !out.ok {
		out.status = wc.Status.String()
		st, _ := s.qp.State()
		out.rows = append(out.rows, []string{"our QP state now", st.String()})
		if wc.Status == verbs.WCRNRRetryExcErr {
			out.detail = say("IBV_WC_RNR_RETRY_EXC_ERR, RNR retry counter exceeded: when our SEND arrived the peer had no receive posted, its NIC answered \"receiver not ready\", and with rnr_retry 0 our NIC gave up at once. The peer posted its RECV 100 ms later — too late. Two-sided operations need the receiver to be ahead: post receives first, and give rnr_retry room (7 = retry forever). Reset and reconnect to go on.",
				"IBV_WC_RNR_RETRY_EXC_ERR（RNR 重试次数超限）：我们的 SEND 到达时对端还没有投递接收请求，对端网卡回答“接收方未就绪”，而 rnr_retry 为 0，我们的网卡立刻放弃。对端 100 毫秒后才投递 RECV——太晚了。双边操作要求接收方先准备好：先投递接收请求，并给 rnr_retry 留出余地（7 = 无限重试）。重置并重新连接才能继续。")
		} else {
			out.detail = say(fmt.Sprintf("The SEND failed with %s (%s).", wc.Status, wc.Status.Description()), fmt.Sprintf("SEND 以 %s（%s）失败。", wc.Status, wc.Status.Description()))
		}
		return out, nil
	}
	rwc, err := s.peerWait(s.peer.recvCQ)
	if err != nil {
		return out, err
	}
	out.rows = append(out.rows, wcRows("peer:", rwc)...)
	out.rows = append(out.rows, []string{"peer's buffer", fmt.Sprintf("%q", string(s.peer.buf.Bytes()[:min(int(rwc.ByteLen), stepMRSize)]))})
	out.ok = rwc.Status == verbs.WCSuccess && int(rwc.ByteLen) == len(stepSend)
	out.detail = say(fmt.Sprintf("Two completions this time: ours (opcode SEND, wr_id 2) and the peer's (opcode RECV, wr_id 7 — the id of the receive buffer the peer posted, byte_len %d: how much of it the message filled). Unlike the WRITE, a SEND makes the peer's CPU look at its CQ.", rwc.ByteLen),
		fmt.Sprintf("这次有两个完成事件：我们的（opcode SEND，wr_id 2）和对端的（opcode RECV，wr_id 7——对端所投递接收缓冲区的编号，byte_len %d：消息填了它多少字节）。与 WRITE 不同，SEND 需要对端 CPU 去查看它的 CQ。", rwc.ByteLen))
	return out, nil
}

// reconnect moves both QPs through RESET and connects them again with the
// right attributes, then returns to the post step that failed.
func (s *stepper) reconnect() error {
	drain := func(cq *verbs.CQ) {
		wc := make([]verbs.WC, 16)
		for {
			if n, err := cq.Poll(wc); err != nil || n == 0 {
				return
			}
		}
	}
	out := stepOut{call: "ibv_modify_qp", ok: true}
	time.Sleep(50 * time.Millisecond) // let the peer's side settle its own error state
	drain(s.cq)
	drain(s.peer.sendCQ)
	drain(s.peer.recvCQ)
	g, err := s.remote.RemoteGID()
	if err != nil {
		return err
	}
	a := verbs.DefaultQPAttr(1, s.top.Client.GID.Index, s.port.ActiveMTU)
	a.AccessFlags, a.MinRNRTimer, a.RetryCnt = stepAccess, 1, stepRetryCnt
	a.DestQPN, a.RQPSN, a.DGID, a.SQPSN = s.remote.QPN, s.remote.PSN, g, s.psn
	// A few-rnr mistake shows only at the SEND: a reconnect for an earlier
	// failure (a wrong QPN, a WRITE out of bounds) keeps it, or its effect
	// would never be seen; the RNR failure itself is what repairs it.
	keptRNR := s.attr.RNRRetry != a.RNRRetry && s.brokenBy != verbs.WCRNRRetryExcErr.String()
	if keptRNR {
		a.RNRRetry = s.attr.RNRRetry
	}
	s.attr = a
	for _, st := range []verbs.QPState{verbs.StateReset, verbs.StateInit, verbs.StateRTR, verbs.StateRTS} {
		if err := s.qp.Modify(st, a); err != nil {
			return err
		}
	}
	if err := s.peer.qp.Modify(verbs.StateReset, verbs.QPAttr{}); err != nil {
		return err
	}
	if err := s.peer.connect(s.local()); err != nil {
		return err
	}
	st, _ := s.qp.State()
	pst, _ := s.peer.qp.State()
	out.code = `ibv_modify_qp(qp, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET }, IBV_QP_STATE);
/* then INIT, RTR, RTS again, as before, with the right values */`
	out.rows = [][]string{{"our QP", "ERROR → RESET → INIT → RTR → RTS: " + st.String()}, {"peer's QP", "→ RESET → INIT → RTR → RTS: " + pst.String()},
		{"dest_qp_num", fmt.Sprintf("0x%x", a.DestQPN)}, {"rnr_retry", fmt.Sprint(a.RNRRetry)}}
	s.broken, s.brokenBy = false, ""
	if s.retryAt >= 0 {
		s.i = s.retryAt
	}
	detail := say("A QP in ERROR never recovers by itself: it must go back to RESET and through INIT, RTR and RTS again. The peer's QP (also in ERROR after a NAK) does the same. Real programs usually destroy the QP and connect a new one.",
		"处于 ERROR 的 QP 不会自己恢复：必须回到 RESET，再依次经过 INIT、RTR、RTS。对端的 QP（收到 NAK 之后也处于 ERROR）同样如此。实际程序通常是销毁这个 QP，再连一个新的。")
	if keptRNR {
		detail = say(detail["en"]+fmt.Sprintf(" The values that caused this failure are set right again; rnr_retry stays %d as you set it at RTS: that mistake has not shown yet — watch the SEND step.", a.RNRRetry),
			detail["zh"]+fmt.Sprintf("引起这次失败的值已经改正；rnr_retry 仍是你在 RTS 时设的 %d：这个错误还没有显现——注意看 SEND 那一步。", a.RNRRetry))
	}
	ok := true
	title := say("Reset and reconnect both QPs", "重置并重新连接两端 QP")
	s.emit.Emit(sandbox.Event{Type: sandbox.EvStep, Name: "reconnect", Message: title["en"], Messages: title, Call: out.call, Code: out.code,
		Detail: detail,
		Table:  stepTable(out.rows), OK: &ok, Offers: s.offers()})
	return nil
}

func (s *stepper) teardown(string) (stepOut, error) {
	out := stepOut{call: "ibv_destroy_qp …", ok: true}
	type closer struct {
		call string
		c    interface{ Close() error }
		nil_ bool
	}
	list := []closer{
		{"ibv_destroy_qp(qp)", s.qp, s.qp == nil},
		{"ibv_dereg_mr(mr)", s.mr, s.mr == nil},
		{"munmap(buf)", s.buf, s.buf == nil},
		{"ibv_destroy_cq(cq)", s.cq, s.cq == nil},
		{"ibv_dealloc_pd(pd)", s.pd, s.pd == nil},
		{"ibv_close_device(ctx)", s.dev, s.dev == nil},
	}
	var code []string
	for _, c := range list {
		code = append(code, c.call+";")
		if c.nil_ {
			out.rows = append(out.rows, []string{c.call, "not created"})
			continue
		}
		if err := c.c.Close(); err != nil {
			out.ok = false
			out.rows = append(out.rows, []string{c.call, err.Error()})
			continue
		}
		out.rows = append(out.rows, []string{c.call, "0"})
	}
	s.qp, s.mr, s.buf, s.cq, s.pd, s.dev = nil, nil, nil, nil, nil, nil
	if s.peer != nil {
		if err := s.peer.Close(); err != nil {
			out.ok = false
			out.rows = append(out.rows, []string{"peer teardown", err.Error()})
		}
		s.peer = nil
	}
	out.code = strings.Join(code, "\n") + "\n/* the peer does the same with its own objects */"
	res, err := verbs.Resources()
	if err == nil && s.start != nil {
		for _, dev := range []string{s.top.Client.Dev, s.top.Server.Dev} {
			var parts []string
			for _, k := range []string{"qp", "mr", "cq", "pd", "ctx"} {
				parts = append(parts, fmt.Sprintf("%s %d→%d", k, s.start[dev][k], res[dev][k]))
			}
			out.rows = append(out.rows, []string{"kernel's counts on " + dev + " (start→now)", strings.Join(parts, ", ")})
		}
	}
	out.detail = say("Teardown runs in reverse order of creation: a QP holds its CQs and PD, an MR its PD, so the QP goes first, then the MR (which unpins the pages), the CQ, the PD and finally the device context. Only two wrong orders are refused, with EBUSY: a PD that still has QPs, MRs or AHs, and a CQ a QP still uses; the rest of the order is the safe habit, not a check. The kernel's counts show what this walk had created is gone.",
		"拆除按创建的相反顺序进行：QP 引用着它的 CQ 和 PD，MR 引用着它的 PD，所以先销毁 QP，再注销 MR（解除页面钉住）、销毁 CQ、释放 PD，最后关闭设备上下文。只有两种错误顺序会被 EBUSY 拒绝：还有 QP、MR 或 AH 的 PD，以及还被 QP 使用的 CQ；其余的顺序是稳妥的习惯，并没有检查。内核计数显示这次演示创建的东西都已清理。")
	return out, nil
}

// closeAll frees whatever is left when the run ends early (cancel, error).
func (s *stepper) closeAll() {
	for _, c := range []interface{ Close() error }{s.qp, s.mr, s.buf, s.cq, s.pd, s.dev} {
		if c != nil && !isNilCloser(c) {
			_ = c.Close()
		}
	}
	if s.peer != nil {
		_ = s.peer.Close()
	}
}

func asVerbsError(err error) (*verbs.Error, bool) {
	var ve *verbs.Error
	ok := errors.As(err, &ve)
	return ve, ok
}

// stepLabels are the Chinese words of the step tables' English labels and
// values; C names (mr->lkey, qp_num…) read the same in both languages.
var stepLabels = map[string]string{
	"device": "设备", "kernel's PD count": "内核的 PD 计数", "kernel's MR count": "内核的 MR 计数",
	"kernel's CQ count": "内核的 CQ 计数", "kernel's QP count": "内核的 QP 计数", "allocated": "已分配",
	"cqe (asked)": "cqe（申请）", "completion channel": "完成通道", "none: we will poll": "无：我们轮询",
	"cap.max_inline_data (granted)": "cap.max_inline_data（实际给予）", "state": "状态", "QP state": "QP 状态",
	"ours: qpn": "本端：qpn", "ours: psn": "本端：psn", "ours: gid": "本端：gid", "ours: addr, rkey": "本端：addr、rkey",
	"peer: qpn": "对端：qpn", "peer: psn": "对端：psn", "peer: gid": "对端：gid",
	"peer: addr, rkey, length": "对端：addr、rkey、length", "peer's QP state": "对端 QP 状态",
	"returned": "返回值", "waited": "等待时间", "our QP state now": "本端 QP 现在的状态",
	"peer's memory now": "对端内存现在的内容", "peer's buffer": "对端缓冲区", "length": "长度",
	"peer: ibv_post_recv": "对端：ibv_post_recv", "wr_id 7, 100 ms after our SEND": "wr_id 7，在我们的 SEND 之后 100 毫秒",
	"our QP": "本端 QP", "peer's QP": "对端 QP", "not created": "未创建", "peer teardown": "对端拆除",
	"0 (accepted)": "0（已接受）",
}

// stepTable is a step's field/value rows with their Chinese version.
func stepTable(rows [][]string) *sandbox.Table {
	t := sandbox.NewTable(say("what the device returned", "设备返回"), say("field", "字段"), say("value", "值"))
	for _, r := range rows {
		cells := make([]sandbox.Text, len(r))
		for i, c := range r {
			cells[i] = sandbox.Same(c)
			if zh, ok := stepLabels[c]; ok {
				cells[i] = say(c, zh)
			} else if strings.HasPrefix(c, "kernel's counts on ") {
				cells[i] = say(c, "内核计数："+strings.TrimSuffix(strings.TrimPrefix(c, "kernel's counts on "), " (start→now)")+"（开始→现在）")
			} else if zh, ok := stepCellZh(c); ok {
				cells[i] = say(c, zh)
			}
		}
		t.AddRow(cells...)
	}
	return t
}

// stepCellPatterns are the step tables' values built from figures, with
// their Chinese wording ($1, $2 … are the figures and names).
var stepCellPatterns = []struct {
	re *regexp.Regexp
	zh string
}{
	{regexp.MustCompile(`^(\d+) on (\S+) \(every process\)$`), "$2 上共 $1 个（所有进程）"},
	{regexp.MustCompile(`^(\d+) bytes$`), "$1 字节"},
	{regexp.MustCompile(`^(\d+) \(≈ (\d+) ms per try\)$`), "$1（每次尝试约 $2 ms）"},
	{regexp.MustCompile(`^(\S+) counter (\S+)$`), "$1 的计数器 $2"},
	{regexp.MustCompile(`^ours: (wc\.\S+)$`), "本端：$1"},
	{regexp.MustCompile(`^peer: (wc\.\S+)$`), "对端：$1"},
	// data the peer holds, quoted as Go quotes it: “” in Chinese
	{regexp.MustCompile(`^"(.*)"$`), "“$1”"},
}

var (
	wcStatusCell = regexp.MustCompile(`^(IBV_WC_[A-Z_]+) \((.*)\)$`)
	errnoCell    = regexp.MustCompile(`^(E[A-Z0-9]+) \((.*)\)$`)
)

// stepCellZh is a value cell of a step table for a Chinese reader: a
// completion status or errno with its description translated, a figure
// with its words; ok is false for cells that read the same in both.
func stepCellZh(c string) (string, bool) {
	if m := wcStatusCell.FindStringSubmatch(c); m != nil {
		for st := verbs.WCStatus(0); st < 64; st++ {
			if st.String() == m[1] {
				return m[1] + "（" + wcStatusZh(st) + "）", true
			}
		}
		return "", false
	}
	if m := errnoCell.FindStringSubmatch(c); m != nil {
		return m[1] + "（" + expkit.ErrnoZh(m[1], m[2]) + "）", true
	}
	for _, p := range stepCellPatterns {
		if p.re.MatchString(c) {
			return p.re.ReplaceAllString(c, p.zh), true
		}
	}
	return "", false
}
