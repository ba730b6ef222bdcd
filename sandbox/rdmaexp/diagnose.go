package rdmaexp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// Diagnose is the experiment "three broken runs": each mystery breaks one
// thing — a wrong rkey, no RECV posted, a lossy link — and shows only what
// an operator sees first: the work completions, the QP state, how long it
// took and the device counters that moved. The learner names the cause in
// a question, then captures the same fault with wire-capture to prove it.
// case=all runs the three and builds the table symptom → counter → cause.
func Diagnose() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "diagnose",
		Title: say("Diagnose a broken run from its symptoms", "从症状诊断一次出错的运行"),
		Summary: say(
			"Runs RDMA traffic with one hidden fault — a wrong rkey, a missing RECV or a lossy link — and shows only the symptoms: the work completions, the queue pair's state, the time taken and the device counters (rdma statistic) that moved. With case=all it runs the three and builds the table symptom → counter → cause.",
			"运行带有一个隐藏故障的 RDMA 流量——错误的 rkey、缺失的 RECV 或有丢包的链路——只给出症状：工作完成、QP 状态、耗时以及变化了的设备计数器（rdma statistic）。case=all 时依次运行三种故障，并生成“症状 → 计数器 → 原因”表。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Timing, // the counters are device-wide: another run beside it would move them too
		Params: []sandbox.Param{
			{Name: "case", Kind: sandbox.ParamEnum, Title: say("Broken run", "出错的运行"), Default: "a", Choices: []sandbox.Choice{
				{Value: "a", Title: say("mystery A", "谜题 A")},
				{Value: "b", Title: say("mystery B", "谜题 B")},
				{Value: "c", Title: say("mystery C", "谜题 C")},
				{Value: "all", Title: say("all three, with their causes", "三个都运行，并给出原因")},
			}},
		},
		Presets: []sandbox.Preset{
			{ID: "a", Title: say("mystery A", "谜题 A"), Values: map[string]any{"case": "a"}},
			{ID: "b", Title: say("mystery B", "谜题 B"), Values: map[string]any{"case": "b"}},
			{ID: "c", Title: say("mystery C", "谜题 C"), Values: map[string]any{"case": "c"}},
			{ID: "all", Title: say("symptom → counter → cause", "症状 → 计数器 → 原因"), Values: map[string]any{"case": "all"}},
		},
		Timeout: 90 * time.Second,
		Run:     runDiagnose,
	}
}

// mystery is one hidden fault.
type mystery struct {
	id, op string
	cause  sandbox.Text
}

var mysteries = []mystery{
	{"a", wireRKey, say("wrong rkey: the responder NAKed with Remote Access Error", "rkey 错误：响应方以“远程访问错误”NAK")},
	{"b", wireRNR, say("no RECV posted: the responder answered RNR NAK until rnr_retry ran out", "没有投递 RECV：响应方一直回 RNR NAK，直到 rnr_retry 用完")},
	{"c", wireLossy, say("lossy link: packets lost, NAK PSN sequence error and timeouts, go-back-N retransmissions", "有丢包的链路：报文丢失，PSN 序列错误 NAK 与超时，回退 N 重传")},
}

// lossyWrites is how many 3-MTU WRITEs the lossy mystery sends (and its
// clean baseline before).
const lossyWrites = 30

type symptom struct {
	wcs     []wireWC
	state   verbs.QPState
	elapsed time.Duration
	clean   time.Duration // c: the same WRITEs on a clean link
	moves   []counterMove
	before  counterSnap
	after   counterSnap
}

func runDiagnose(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	which := p["case"].(string)
	top, err := pickTopology()
	if err != nil {
		return err
	}
	if !top.Wire() {
		return explained(emit, say("diagnose needs two Soft-RoCE devices on two netdevs (the lab's guest has rxe0 and rxe1 on a veth pair)",
			"diagnose 需要位于两个网络设备上的两个 Soft-RoCE 设备（实验室虚拟机里是 veth 对上的 rxe0 和 rxe1）"))
	}
	note(emit, "info", top.describe())
	summary := sandbox.NewTable(say("symptom → counter → cause (your own runs)", "症状 → 计数器 → 原因（你自己的运行）"),
		say("mystery", "谜题"), say("symptom (completion, QP, time)", "症状（完成状态、QP、耗时）"), say("counters that moved", "变化了的计数器"), say("cause", "原因"))
	figs := map[string]float64{}
	allTypical := true
	var syms []sandbox.Text
	for _, m := range mysteries {
		if which != "all" && which != m.id {
			continue
		}
		phase(emit, "mystery-"+m.id, say("Mystery "+strings.ToUpper(m.id)+": run it and look at the symptoms", "谜题 "+strings.ToUpper(m.id)+"：运行并观察症状"))
		s, err := runMystery(ctx, top, m)
		if err != nil {
			return faultError(emit, err)
		}
		sym := describeSymptom(m, s)
		note(emit, "info", sym)
		t := countersTable(s.moves, s.before, s.after, wireRoles(top), say("mystery "+strings.ToUpper(m.id)+": ", "谜题 "+strings.ToUpper(m.id)+"："))
		emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
		var moved []string
		for _, mv := range s.moves {
			if mv.Name == "sent_pkts" || mv.Name == "rcvd_pkts" {
				continue // every run moves these
			}
			moved = append(moved, fmt.Sprintf("%s %s %+d", mv.Dev, mv.Name, mv.Delta))
			figs[m.id+"."+mv.Dev+"."+mv.Name] = float64(mv.Delta)
		}
		figs[m.id+".status"] = float64(firstStatus(s))
		figs[m.id+".ms"] = float64(s.elapsed.Microseconds()) / 1000
		typical := typicalSymptom(m, s)
		allTypical = allTypical && typical
		figs[m.id+".typical"] = b2f(typical)
		syms = append(syms, say("Mystery "+strings.ToUpper(m.id)+": "+sym["en"], "谜题 "+strings.ToUpper(m.id)+"："+sym["zh"]))
		if which == "all" {
			summary.AddRow(sandbox.Same(strings.ToUpper(m.id)), sym, sandbox.Same(strings.Join(moved, ", ")), m.cause)
		}
	}
	if which == "all" {
		emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: summary})
	}
	en, zh := "", ""
	for _, t := range syms {
		en += t["en"] + " "
		zh += t["zh"]
	}
	switch {
	case !allTypical:
		en += "This run did not show the usual symptom of its fault (see the counters above); run it again, or capture it to see what happened on the wire."
		zh += "这次运行没有表现出该故障通常的症状（见上面的计数器）；再运行一次，或抓包看看线上发生了什么。"
	case which == "all":
		en += "Side by side: the completion status names the symptom, the counters point at the layer (access, receiver not ready, sequence and retries), and wire-capture shows the packet that proves the cause."
		zh += "并排来看：完成状态给出症状，计数器指向出问题的环节（访问权限、接收方未就绪、序号与重传），而 wire-capture 的抓包给出证明原因的那个报文。"
	default:
		en += "Which cause fits? Answer the question below, then capture the same fault to check."
		zh += "哪个原因与它吻合？先回答下面的问题，再抓包验证。"
	}
	result(emit, allTypical, say(strings.TrimSpace(en), zh), figs)
	return nil
}

// typicalSymptom reports whether a mystery showed the symptom its fault
// usually has, so the verdict can say when it did not.
func typicalSymptom(m mystery, s symptom) bool {
	moved := func(names ...string) bool {
		for _, mv := range s.moves {
			for _, n := range names {
				if mv.Name == n && mv.Delta > 0 {
					return true
				}
			}
		}
		return false
	}
	switch m.op {
	case wireRKey:
		return firstStatus(s) == verbs.WCRemAccessErr
	case wireRNR:
		return firstStatus(s) == verbs.WCRNRRetryExcErr
	case wireLossy:
		return firstStatus(s) == verbs.WCSuccess && moved("rcvd_seq_err", "out_of_seq_request", "duplicate_request", "completer_retry_err")
	}
	return false
}

func firstStatus(s symptom) verbs.WCStatus {
	for _, w := range s.wcs {
		if w.WC.Status != verbs.WCSuccess {
			return w.WC.Status
		}
	}
	return verbs.WCSuccess
}

// runMystery runs one fault on a fresh pair and records its symptoms.
func runMystery(ctx context.Context, top topology, m mystery) (symptom, error) {
	var s symptom
	rnr := 7
	if m.op == wireRNR {
		rnr = 1
	}
	pair, err := openWirePair(top, rnr)
	if err != nil {
		return s, err
	}
	defer pair.Close()
	n := 1
	if m.op == wireLossy {
		n = lossyWrites
		start := time.Now()
		if _, err := pair.do(ctx, wireWrite, n); err != nil {
			return s, err
		}
		s.clean = time.Since(start)
	}
	undo, err := pair.fault(ctx, m.op)
	if err != nil {
		return s, err
	}
	defer undo()
	s.before = pair.counters()
	start := time.Now()
	s.wcs, err = pair.do(ctx, m.op, n)
	s.elapsed = time.Since(start)
	if err != nil {
		return s, err
	}
	time.Sleep(50 * time.Millisecond) // the last ACK and the responder's counters
	s.after = pair.counters()
	s.moves = counterDelta(s.before, s.after)
	s.state, _ = pair.req.qp.State()
	return s, nil
}

// describeSymptom says what was measured, nothing about the cause.
func describeSymptom(m mystery, s symptom) sandbox.Text {
	st := firstStatus(s)
	ok := 0
	for _, w := range s.wcs {
		if w.WC.Status == verbs.WCSuccess {
			ok++
		}
	}
	ms := float64(s.elapsed.Microseconds()) / 1000
	if m.op == wireLossy {
		clean := float64(s.clean.Microseconds()) / 1000
		return say(fmt.Sprintf("%d of %d WRITEs completed with IBV_WC_SUCCESS, requester QP %s; they took %.0f ms against %.0f ms for the same WRITEs a moment before (×%.1f).",
			ok, len(s.wcs), s.state, ms, clean, ms/max(clean, 0.001)),
			fmt.Sprintf("%d/%d 个 WRITE 完成状态为 IBV_WC_SUCCESS，请求方 QP 为 %s；耗时 %.0f ms，而片刻之前同样的 WRITE 只用了 %.0f ms（×%.1f）。",
				ok, len(s.wcs), s.state, ms, clean, ms/max(clean, 0.001)))
	}
	return say(fmt.Sprintf("The requester's completion: %s (%s) after %.0f ms; requester QP now %s.", st, st.Description(), ms, s.state),
		fmt.Sprintf("请求方的完成状态：%s（%s），耗时 %.0f ms；请求方 QP 现在是 %s。", st, wcStatusZh(st), ms, s.state))
}
