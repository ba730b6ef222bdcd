package lessons

import (
	"fmt"
	"html"
	"html/template"
	"sort"
	"strings"
)

// diagrams are the drawings a lesson can place with "::diagram ID". Each
// renders once per page language when the course loads.
var diagrams = map[string]func(lang string) template.HTML{
	"tcp-vs-rdma": tcpVsRDMA,
}

func diagramIDs() []string {
	ids := make([]string, 0, len(diagrams))
	for id := range diagrams {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// pathStep is one box of a path drawing.
type pathStep struct {
	id      string // data-step; also keys the step-by-step version (diagram_visuals.go) and stepCosts
	zone    string // key into zoneLabels
	removed bool   // a TCP step that RDMA does not have
	bypass  bool   // drawn aside: the flow arrow skips it
	title   [2]string
	detail  [2]string
}

var zoneLabels = map[string][2]string{
	"user":   {"用户态", "user space"},
	"kernel": {"内核", "kernel"},
	"nic":    {"网卡", "NIC"},
	"wire":   {"线路", "wire"},
	"peer":   {"对端", "peer"},
}

var tcpSteps = []pathStep{
	{id: "tcp-app", zone: "user",
		title:  [2]string{"应用调用 send()", "App calls send()"},
		detail: [2]string{"系统调用：从用户态进入内核", "system call: user space → kernel"}},
	{id: "tcp-copy", zone: "kernel", removed: true,
		title:  [2]string{"拷贝到 socket 缓冲区", "Copy into the socket buffer"},
		detail: [2]string{"CPU 亲手搬运每一个字节", "the CPU moves every byte itself"}},
	{id: "tcp-stack", zone: "kernel", removed: true,
		title:  [2]string{"TCP/IP 协议栈", "TCP/IP stack"},
		detail: [2]string{"分段、校验和、状态机、netfilter", "segments, checksums, state, netfilter"}},
	{id: "tcp-driver", zone: "kernel", removed: true,
		title:  [2]string{"驱动 · 中断 · 软中断", "Driver, interrupts, softirq"},
		detail: [2]string{"每一批报文都要打断一次 CPU", "each batch of packets interrupts a CPU"}},
	{id: "tcp-wire", zone: "nic",
		title:  [2]string{"网卡发送到线路上", "NIC puts it on the wire"},
		detail: [2]string{"到这里硬件才开始工作", "only now does the hardware take over"}},
	{id: "tcp-rx", zone: "peer", removed: true,
		title:  [2]string{"对端：中断 + 协议栈", "Peer: interrupt + stack again"},
		detail: [2]string{"收包中断，软中断里再走一遍协议栈", "rx interrupt; softirq runs the stack again"}},
	{id: "tcp-wakeup", zone: "peer", removed: true,
		title:  [2]string{"唤醒、切换、再拷贝", "Wakeup, switch, copy out"},
		detail: [2]string{"接收线程被调度回来，把数据拷出内核", "the reader is scheduled in and copies out"}},
}

var rdmaSteps = []pathStep{
	{id: "rdma-post", zone: "user",
		title:  [2]string{"应用提交工作请求（WR）", "App posts a work request"},
		detail: [2]string{"ibv_post_send 写入 QP，仍在用户态", "ibv_post_send into the QP, in user space"}},
	{id: "rdma-kernel", zone: "kernel", bypass: true,
		title:  [2]string{"内核：只管建立", "Kernel: setup only"},
		detail: [2]string{"注册 MR、创建 QP", "register MR, create QP"}},
	{id: "rdma-doorbell", zone: "nic",
		title:  [2]string{"敲门铃（doorbell）", "Ring the doorbell"},
		detail: [2]string{"硬件网卡：一次 MMIO 写，没有系统调用", "hardware NIC: an MMIO store, no syscall"}},
	{id: "rdma-dma", zone: "nic",
		title:  [2]string{"网卡 DMA 读取 MR", "NIC DMA-reads the MR"},
		detail: [2]string{"零拷贝：直接取应用的内存", "zero copy: straight from app memory"}},
	{id: "rdma-wire", zone: "wire",
		title:  [2]string{"硬件传输协议上线路", "Hardware transport → wire"},
		detail: [2]string{"分段、确认、重传都在网卡里", "segments, acks, retries done in the NIC"}},
	{id: "rdma-peer", zone: "peer",
		title:  [2]string{"对端网卡写入注册内存", "Peer NIC writes registered memory"},
		detail: [2]string{"对端应用不运行，没有 CPU 搬数据", "peer app does not run; no CPU copies"}},
	{id: "rdma-cq", zone: "user",
		title:  [2]string{"完成事件进入 CQ", "Completion lands in the CQ"},
		detail: [2]string{"应用轮询 CQ，不必等唤醒", "the app polls the CQ, no wakeup"}},
}

// Geometry of a path drawing (viewBox units).
const (
	dgWidth  = 320
	dgTop    = 40
	dgBoxH   = 60
	dgGap    = 20
	dgLeft   = 10
	dgRight  = 310
	dgBypass = 96 // left edge of a bypassed box; the arrow runs left of it
)

// tcpVsRDMA draws the kernel TCP path beside the RDMA path, one SVG each so
// they sit side by side on a wide screen and stack on a 375 px phone.
func tcpVsRDMA(lang string) template.HTML {
	li := 0
	if lang == "en" {
		li = 1
	}
	head := [2][2]string{{"内核 TCP", "Kernel TCP"}, {"RDMA（硬件网卡）", "RDMA (hardware NIC)"}}
	caption := [2]string{
		"同一条消息的两条路。红色虚线框是 RDMA 省掉的步骤：拷贝、内核协议栈（连同中断/软中断）、唤醒与上下文切换；RDMA 路径上内核只在建立连接和注册内存时出场。右边画的是硬件 RDMA 网卡；本实验室的 Soft-RoCE 用一次 write() 系统调用敲门铃，由内核软件完成网卡的工作（见 syscalls 实验）。",
		"One message, two paths. Dashed red steps are what RDMA removes: the copy, the kernel stack (with its interrupts and softirqs), the wakeup and context switch. On the RDMA path the kernel only appears at setup (registering memory, creating the QP). The right-hand path is a hardware RDMA NIC; this lab's Soft-RoCE rings the doorbell with a write() system call and does the NIC's work in kernel software (see the syscalls experiment).",
	}
	removedTag := [2]string{"RDMA 省掉", "removed by RDMA"}
	bypassTag := [2]string{"不在数据路径上", "off the data path"}

	var b strings.Builder
	b.WriteString(`<figure class="rd-diagram" data-diagram="tcp-vs-rdma">`)
	for pi, steps := range [][]pathStep{tcpSteps, rdmaSteps} {
		class := [2]string{"tcp-path", "rdma-path"}[pi]
		h := dgTop + len(steps)*dgBoxH + (len(steps)-1)*dgGap + 10
		fmt.Fprintf(&b, `<svg class="%s" data-path="%s" viewBox="0 0 %d %d" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`,
			class, strings.TrimSuffix(class, "-path"), dgWidth, h, esc(head[pi][li]+": "+stepTitles(steps, li)))
		fmt.Fprintf(&b, `<text class="rd-head" x="%d" y="22">%s</text>`, dgLeft, esc(head[pi][li]))
		for i, s := range steps {
			y := dgTop + i*(dgBoxH+dgGap)
			x := dgLeft
			if s.bypass {
				x = dgBypass
			}
			cls := "step"
			zone := zoneLabels[s.zone][li]
			switch {
			case s.removed:
				cls += " removed-by-rdma"
				zone += " · " + removedTag[li]
			case s.bypass:
				cls += " bypassed"
				zone = bypassTag[li]
			}
			fmt.Fprintf(&b, `<g class="%s" data-step="%s" data-zone="%s">`, cls, s.id, s.zone)
			fmt.Fprintf(&b, `<rect class="rd-box" x="%d" y="%d" width="%d" height="%d" rx="6"/>`, x, y, dgRight-x, dgBoxH)
			// Three lines (zone, title, detail) rather than a tag beside the
			// title: nothing can overlap whatever the language's text length.
			fmt.Fprintf(&b, `<text class="rd-zone" x="%d" y="%d">%s</text>`, x+12, y+16, esc(zone))
			fmt.Fprintf(&b, `<text class="rd-title" x="%d" y="%d">%s</text>`, x+12, y+34, esc(s.title[li]))
			fmt.Fprintf(&b, `<text class="rd-detail" x="%d" y="%d">%s</text>`, x+12, y+51, esc(s.detail[li]))
			b.WriteString(`</g>`)
		}
		// Flow arrows join consecutive on-path steps; an arrow skipping a
		// bypassed step runs down its left side, which is the point.
		for i := 0; i < len(steps)-1; i++ {
			if steps[i].bypass {
				continue
			}
			j, ax := i+1, dgWidth/2
			if steps[j].bypass && j+1 < len(steps) {
				j, ax = j+1, (dgLeft+dgBypass)/2
			}
			y1 := dgTop + i*(dgBoxH+dgGap) + dgBoxH
			y2 := dgTop + j*(dgBoxH+dgGap)
			fmt.Fprintf(&b, `<g class="flow" data-from="%s" data-to="%s"><line class="rd-arrow" x1="%d" y1="%d" x2="%d" y2="%d"/>`,
				steps[i].id, steps[j].id, ax, y1+2, ax, y2-6)
			fmt.Fprintf(&b, `<path class="rd-head-arrow" d="M%d %dl-5 -7h10z"/></g>`, ax, y2-1)
		}
		b.WriteString(`</svg>`)
	}
	fmt.Fprintf(&b, `<figcaption>%s</figcaption></figure>`, esc(caption[li]))
	return template.HTML(b.String())
}

func stepTitles(steps []pathStep, li int) string {
	var t []string
	for _, s := range steps {
		if !s.bypass {
			t = append(t, s.title[li])
		}
	}
	return strings.Join(t, " → ")
}

func esc(s string) string { return html.EscapeString(s) }
