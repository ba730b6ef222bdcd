package lessons

import "html/template"

// Interactive lesson visuals. The web layer renders them per request (the
// calculator reads the learner's own measurement and its GET query), so
// their directive HTML here is only an anchor; "tcp-vs-rdma" keeps its SVG
// and gets its step-through data from DiagramSteps.
func init() {
	diagrams["cpu-budget"] = widgetAnchor("cpu-budget")
	diagrams["worth-it"] = widgetAnchor("worth-it")
}

// WidgetIDs are the ::diagram ids whose HTML the web layer must render
// itself (a form with a server-side result); their Segment.HTML is a bare
// anchor.
var WidgetIDs = []string{"cpu-budget", "worth-it"}

func widgetAnchor(id string) func(string) template.HTML {
	return func(string) template.HTML {
		return template.HTML(`<div class="rd-widget" data-widget="` + id + `"></div>`)
	}
}

// DiagramStep is one step of a path drawing, for the step-through controls
// and the no-JavaScript step list the web layer renders under the drawing.
type DiagramStep struct {
	ID      string // the SVG's data-step
	Path    string // "tcp" or "rdma" (the SVG's data-path)
	Zone    string // where it happens, in the page language
	Title   string
	Detail  string
	Removed bool   // a kernel TCP step RDMA does not have
	Bypass  bool   // drawn aside: not on the data path
	Cost    string // what the step costs (set for removed steps)
}

// stepCosts says what each step RDMA removes costs, in the lesson's terms
// (zh, en). Figures are the lesson's own: 12.5 GB/s at 100 Gbps, ~1 GHz of
// CPU per Gbps, 10–25 µs one-way kernel TCP latency against 1–3 µs for RDMA.
var stepCosts = map[string][2]string{
	"tcp-copy": {
		"代价（硬件参考，按课文的数算）：100 Gbps 时每一端每秒要拷贝 12.5 GB，还要占用同样多的内存带宽，光这一项就能占满至少一个核。",
		"Cost (hardware reference, from the lesson's figures): at 100 Gbps that is 12.5 GB to copy every second on each side, and as much memory bandwidth — enough to keep at least one core busy on its own.",
	},
	"tcp-stack": {
		"代价（硬件参考）：分段、校验和、TCP 状态机和 netfilter 按包在 CPU 上运行，是“每 Gbps 约 1 GHz”这条卸载普及之前的老经验里的一大块。",
		"Cost (hardware reference): segmentation, checksums, the TCP state machine and netfilter run on the CPU for every packet — a large share of the old, pre-offload rule of thumb of ~1 GHz per Gbps.",
	},
	"tcp-driver": {
		"代价（硬件参考）：每次中断和软中断都把 CPU 从应用手里抢走并冲掉它的缓存；每秒数百万个包时，加起来就是好几个核。",
		"Cost (hardware reference): every interrupt and softirq takes the CPU away from the application and cools its caches; at millions of packets per second that adds up to whole cores.",
	},
	"tcp-rx": {
		"代价（硬件参考）：接收端再挨一遍中断，在软中断里再走一遍协议栈——CPU 的账两端各付一次。",
		"Cost (hardware reference): the receiver takes the interrupts and runs the whole stack again in softirq — the CPU bill is paid on both sides.",
	},
	"tcp-wakeup": {
		"代价（硬件参考）：每条消息一次唤醒加上下文切换，要花几微秒（调度、缓存和 TLB 重新预热），接着 CPU 还要再拷贝一次数据；这是内核 TCP 单程延迟约 10–25 µs（往返 20–50 µs）的重要来源，而 RDMA 只要 1–3 µs（课程资料）。",
		"Cost (hardware reference): a wakeup and context switch per message costs microseconds (scheduling, cache and TLB refill), and then the CPU copies the data once more — a big part of kernel TCP's one-way latency of about 10–25 µs (20–50 µs round trip), against 1–3 µs for RDMA (course material).",
	},
}

// DiagramSteps returns the steps of diagram id in lang, TCP path first;
// nil for a diagram without steps.
func DiagramSteps(id, lang string) []DiagramStep {
	if id != "tcp-vs-rdma" {
		return nil
	}
	li := 0
	if lang == "en" {
		li = 1
	}
	var out []DiagramStep
	for _, p := range []struct {
		path  string
		steps []pathStep
	}{{"tcp", tcpSteps}, {"rdma", rdmaSteps}} {
		for _, s := range p.steps {
			out = append(out, DiagramStep{
				ID: s.id, Path: p.path, Zone: zoneLabels[s.zone][li],
				Title: s.title[li], Detail: s.detail[li],
				Removed: s.removed, Bypass: s.bypass, Cost: stepCosts[s.id][li],
			})
		}
	}
	return out
}
