package lessons

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
)

// Lesson 02's animations: what the lab cannot measure (a switch's PFC
// pause, a pause storm, DCQCN's rate control in a hardware RNIC) drawn as
// SVG with SMIL animations — they run without JavaScript and replay on a
// click. Each carries the label "animation, not a measurement" and a text
// version of its steps for readers who cannot watch it.
func init() {
	diagrams["pfc-pause"] = pfcPause
	diagrams["pause-storm"] = pauseStorm
	diagrams["dcqcn-rate"] = dcqcnRate
}

// pick returns the text of the page's language (zh, else en).
func pick(lang string, t [2]string) string {
	if lang == "zh" {
		return t[0]
	}
	return t[1]
}

var animLabel = [2]string{"动画，不是测量", "Animation, not a measurement"}
var replayLabel = [2]string{"▶ 重新播放", "▶ Replay"}

// animFigure wraps an animated SVG body with its label, replay control,
// caption and the steps as text. diagram is the ::diagram id; id
// prefixes every element id.
func animFigure(lang, diagram, id string, viewBox string, body string, caption [2]string, source [2]string, steps [][2]string) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<figure class="diagram anim-diagram" id="%s" data-diagram="%s" data-animation="true">`, id, diagram)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="%s" role="img" aria-labelledby="%s-title" font-family="system-ui, sans-serif" font-size="12">`, viewBox, id)
	fmt.Fprintf(&b, `<title id="%s-title">%s — %s</title>`, id, html.EscapeString(pick(lang, caption)), html.EscapeString(pick(lang, animLabel)))
	b.WriteString(body)
	// The label and the replay button sit in the top right corner.
	fmt.Fprintf(&b, `<g><rect x="4" y="4" width="210" height="20" rx="4" fill="#fff4d6" stroke="#b7791f"/><text x="12" y="18" fill="#7b4f00" font-weight="600" data-testid="anim-label">%s</text></g>`,
		html.EscapeString(pick(lang, animLabel)))
	fmt.Fprintf(&b, `<g id="%s-replay" cursor="pointer" data-testid="anim-replay"><rect x="220" y="4" width="96" height="20" rx="4" fill="#e8eefc" stroke="#3b5bdb"/><text x="230" y="18" fill="#1d3a9e">%s</text></g>`,
		id, html.EscapeString(pick(lang, replayLabel)))
	b.WriteString(`</svg>`)
	// each language with its own punctuation ("传播. 依据" read as English)
	dash, stop := pick(lang, [2]string{"——", " — "}), pick(lang, [2]string{"。", ". "})
	fmt.Fprintf(&b, `<figcaption><strong>%s</strong>%s%s%s%s</figcaption>`, html.EscapeString(pick(lang, animLabel)), dash,
		html.EscapeString(pick(lang, caption)), stop, html.EscapeString(pick(lang, source)))
	fmt.Fprintf(&b, `<details class="anim-steps"><summary>%s</summary><ol>`, html.EscapeString(pick(lang, [2]string{"动画的每一步（文字版）", "The steps of the animation, as text"})))
	for _, s := range steps {
		fmt.Fprintf(&b, `<li>%s</li>`, html.EscapeString(pick(lang, s)))
	}
	b.WriteString(`</ol></details></figure>`)
	return template.HTML(b.String())
}

// begin is the SMIL begin list of an element that starts at t seconds
// after the animation starts or is replayed.
func begin(id string, t float64) string {
	return fmt.Sprintf("%gs; %s-replay.click+%gs", t, id, t)
}

// showAt makes an element invisible until t, visible until end (0 = stays).
func showAt(id string, t, end float64) string {
	s := fmt.Sprintf(`<set attributeName="opacity" to="0" begin="0s; %s-replay.click"/><set attributeName="opacity" to="1" begin="%s"/>`, id, begin(id, t))
	if end > 0 {
		s += fmt.Sprintf(`<set attributeName="opacity" to="0" begin="%s"/>`, begin(id, end))
	}
	return s
}

func box(x, y, w, h float64, fill, stroke, label string) string {
	return fmt.Sprintf(`<rect x="%g" y="%g" width="%g" height="%g" rx="6" fill="%s" stroke="%s"/><text x="%g" y="%g" text-anchor="middle">%s</text>`,
		x, y, w, h, fill, stroke, x+w/2, y+h+14, html.EscapeString(label))
}

// pfcPause: a congested egress fills the switch's queue for priority 3
// past XOFF; a PAUSE frame goes upstream, the upstream switch's queue
// fills in turn and it pauses the sender; priority 0 keeps flowing.
func pfcPause(lang string) template.HTML {
	const id = "anim-pfc"
	var b strings.Builder
	// Nodes: sender, switch 1, switch 2, receiver.
	xs := []float64{30, 200, 370, 540}
	names := [][2]string{{"发送端 A", "sender A"}, {"交换机 1", "switch 1"}, {"交换机 2", "switch 2"}, {"接收端 B（慢）", "receiver B (slow)"}}
	for i, x := range xs {
		b.WriteString(box(x, 60, 90, 50, "#f4f6f8", "#555", pick(lang, names[i])))
	}
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&b, `<line x1="%g" y1="85" x2="%g" y2="85" stroke="#888" stroke-width="2"/>`, xs[i]+90, xs[i+1])
	}
	// Priority-3 (RoCE) packets: blue squares A → B; they stop at the pauses.
	for k := 0; k < 4; k++ {
		st := float64(k) * 0.5
		fmt.Fprintf(&b, `<rect width="10" height="10" y="70" fill="#3b5bdb"><animate attributeName="x" values="120;200;290;370;460;540" dur="2s" begin="%s" repeatCount="2"/>%s</rect>`,
			begin(id, st), showAt(id, st, st+4))
	}
	// Priority-0 (lossy TCP) packets keep flowing the whole time: grey.
	for k := 0; k < 3; k++ {
		st := float64(k) * 0.7
		fmt.Fprintf(&b, `<rect width="10" height="10" y="92" fill="#999"><animate attributeName="x" values="120;200;290;370;460;540" dur="2s" begin="%s" repeatCount="indefinite"/></rect>`, begin(id, st))
	}
	// Queues (priority 3) of switch 2 and switch 1: bars that fill.
	q := func(x float64, fillAt, drainAt float64) string {
		return fmt.Sprintf(`<rect x="%g" y="130" width="16" height="60" fill="none" stroke="#555"/>`+
			`<line x1="%g" x2="%g" y1="150" y2="150" stroke="#d1343b" stroke-dasharray="3 2"/>`+
			`<rect x="%g" y="190" width="16" height="0" fill="#3b5bdb">`+
			`<animate attributeName="height" values="0;46;56" keyTimes="0;0.7;1" dur="1.6s" begin="%s" fill="freeze"/>`+
			`<animate attributeName="y" values="190;144;134" keyTimes="0;0.7;1" dur="1.6s" begin="%s" fill="freeze"/>`+
			`<animate attributeName="height" to="0" dur="1.2s" begin="%s" fill="freeze"/>`+
			`<animate attributeName="y" to="190" dur="1.2s" begin="%s" fill="freeze"/>`+
			`<set attributeName="height" to="0" begin="0s; %s-replay.click"/><set attributeName="y" to="190" begin="0s; %s-replay.click"/></rect>`,
			x, x-4, x+20, x, begin(id, fillAt), begin(id, fillAt), begin(id, drainAt), begin(id, drainAt), id, id)
	}
	b.WriteString(q(407, 1.0, 7.0))
	b.WriteString(q(237, 3.2, 7.6))
	fmt.Fprintf(&b, `<text x="430" y="146" fill="#d1343b" font-size="10">XOFF</text><text x="430" y="140" fill="#555" font-size="10" dy="-10">%s</text>`,
		html.EscapeString(pick(lang, [2]string{"上方：headroom", "above: headroom"})))
	// PAUSE frames going upstream (red), then XON (green).
	pause := func(x1, x2, t float64, label [2]string) string {
		return fmt.Sprintf(`<g opacity="0">%s<rect y="30" width="64" height="18" rx="3" fill="#d1343b"><animate attributeName="x" from="%g" to="%g" dur="0.9s" begin="%s" fill="freeze"/></rect>`+
			`<text y="43" fill="#fff" font-size="10" font-weight="600"><animate attributeName="x" from="%g" to="%g" dur="0.9s" begin="%s" fill="freeze"/>%s</text></g>`,
			showAt(id, t, 7), x1, x2, begin(id, t), x1+4, x2+4, begin(id, t), html.EscapeString(pick(lang, label)))
	}
	b.WriteString(pause(370, 290, 2.3, [2]string{"PAUSE p3", "PAUSE p3"}))
	b.WriteString(pause(200, 120, 4.4, [2]string{"PAUSE p3", "PAUSE p3"}))
	fmt.Fprintf(&b, `<g opacity="0">%s<rect x="300" y="30" width="64" height="18" rx="3" fill="#1f7a4d"/><text x="306" y="43" fill="#fff" font-size="10" font-weight="600">XON p3</text></g>`, showAt(id, 7, 9.5))
	// Step captions along the bottom.
	caps := []struct {
		t, end float64
		s      [2]string
	}{
		{0, 1, [2]string{"优先级 3（RoCE）和优先级 0（普通 TCP）的流量一起流向 B", "Priority 3 (RoCE) and priority 0 (plain TCP) both flow towards B"}},
		{1, 2.3, [2]string{"B 收得慢：交换机 2 里优先级 3 的队列在涨", "B drains slowly: switch 2's priority-3 queue grows"}},
		{2.3, 3.2, [2]string{"越过 XOFF：交换机 2 向上游发 PAUSE（只暂停优先级 3）", "Past XOFF: switch 2 sends PAUSE upstream (priority 3 only)"}},
		{3.2, 4.4, [2]string{"线上已有的包落进 headroom；交换机 1 的队列开始涨", "Packets already on the wire land in the headroom; switch 1's queue grows"}},
		{4.4, 7, [2]string{"交换机 1 也越过 XOFF，暂停发送端 A：拥塞一跳一跳往回传", "Switch 1 passes XOFF too and pauses sender A: the congestion travels back hop by hop"}},
		{7, 9.5, [2]string{"队列排空到 XON 以下：恢复发送。灰色的优先级 0 全程没停", "Queues drain below XON: sending resumes. Grey priority 0 never stopped"}},
	}
	for _, c := range caps {
		fmt.Fprintf(&b, `<text x="300" y="225" text-anchor="middle" opacity="0">%s%s</text>`, showAt(id, c.t, c.end), html.EscapeString(pick(lang, c.s)))
	}
	steps := make([][2]string, len(caps))
	for i, c := range caps {
		steps[i] = c.s
	}
	return animFigure(lang, "pfc-pause", id, "0 0 640 240", b.String(),
		[2]string{"PFC：暂停帧一跳一跳向上游传播", "PFC: pause frames travel upstream hop by hop"},
		[2]string{"依据 IEEE 802.1Qbb（PFC）；阈值与时间只为示意。", "After IEEE 802.1Qbb (PFC); thresholds and timing are illustrative."}, steps)
}

// pauseStorm: a receiver NIC stops draining and pauses without end; the
// pause spreads through the fabric and stops flows that never go to it,
// until the switch's PFC watchdog stops honouring the pause on that port.
func pauseStorm(lang string) template.HTML {
	const id = "anim-storm"
	var b strings.Builder
	spine := [2]float64{300, 40}
	leaves := [][2]float64{{150, 110}, {450, 110}}
	hosts := [][2]float64{{80, 190}, {220, 190}, {380, 190}, {520, 190}}
	link := func(a, c [2]float64, red float64, green float64) string {
		s := fmt.Sprintf(`<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#1f7a4d" stroke-width="4">`, a[0], a[1], c[0], c[1])
		s += fmt.Sprintf(`<set attributeName="stroke" to="#1f7a4d" begin="0s; %s-replay.click"/>`, id)
		if red > 0 {
			s += fmt.Sprintf(`<set attributeName="stroke" to="#d1343b" begin="%s"/>`, begin(id, red))
		}
		if green > 0 {
			s += fmt.Sprintf(`<set attributeName="stroke" to="#1f7a4d" begin="%s"/>`, begin(id, green))
		}
		return s + `</line>`
	}
	// Host 4 (bottom right) is broken; pause spreads: leaf 2 → spine → leaf 1 → hosts.
	b.WriteString(link(hosts[3], leaves[1], 1.0, 0))
	b.WriteString(link(hosts[2], leaves[1], 2.0, 7.5))
	b.WriteString(link(leaves[1], spine, 2.5, 7.5))
	b.WriteString(link(leaves[0], spine, 3.5, 7.5))
	b.WriteString(link(hosts[0], leaves[0], 4.5, 7.5))
	b.WriteString(link(hosts[1], leaves[0], 4.5, 7.5))
	b.WriteString(box(spine[0]-45, spine[1]-15, 90, 30, "#f4f6f8", "#555", ""))
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`, spine[0], spine[1]+4, html.EscapeString(pick(lang, [2]string{"核心交换机", "spine"})))
	for i, l := range leaves {
		fmt.Fprintf(&b, `<rect x="%g" y="%g" width="90" height="30" rx="6" fill="#f4f6f8" stroke="#555"/><text x="%g" y="%g" text-anchor="middle">%s %d</text>`,
			l[0]-45, l[1]-15, l[0], l[1]+4, html.EscapeString(pick(lang, [2]string{"接入交换机", "leaf"})), i+1)
	}
	for i, h := range hosts {
		fill := "#f4f6f8"
		name := pick(lang, [2]string{"主机", "host"}) + fmt.Sprintf(" %d", i+1)
		if i == 3 {
			fill = "#ffe3e3"
			name = pick(lang, [2]string{"主机 4（网卡卡死）", "host 4 (NIC stuck)"})
		}
		fmt.Fprintf(&b, `<rect x="%g" y="%g" width="100" height="30" rx="6" fill="%s" stroke="#555"/><text x="%g" y="%g" text-anchor="middle" font-size="11">%s</text>`,
			h[0]-50, h[1]-15, fill, h[0], h[1]+4, html.EscapeString(name))
	}
	// The watchdog on leaf 2's port to host 4.
	fmt.Fprintf(&b, `<g opacity="0">%s<rect x="470" y="140" width="130" height="20" rx="4" fill="#1f7a4d"/><text x="476" y="154" fill="#fff" font-size="10">%s</text></g>`,
		showAt(id, 7.0, 0), html.EscapeString(pick(lang, [2]string{"PFC 看门狗：忽略该端口的暂停", "PFC watchdog: ignore this port's pause"})))
	caps := []struct {
		t, end float64
		s      [2]string
	}{
		{0, 1, [2]string{"一切正常：所有链路都在转发", "All is well: every link forwards"}},
		{1, 2, [2]string{"主机 4 的网卡卡住不再收包，却一直发 PAUSE", "Host 4's NIC stops receiving but keeps sending PAUSE"}},
		{2, 3.5, [2]string{"接入交换机 2 的队列塞满，又去暂停它的上游", "Leaf 2's queue fills, so it pauses its own upstream"}},
		{3.5, 4.5, [2]string{"核心交换机被暂停，接入交换机 1 也被暂停", "The spine is paused, then leaf 1"}},
		{4.5, 7, [2]string{"主机 1、2 之间的流量根本不经过主机 4，也停了：队头阻塞", "Hosts 1 and 2 never talk to host 4, yet they stop too: head-of-line blocking"}},
		{7, 9.5, [2]string{"看门狗发现该队列被暂停太久，丢弃它的包并不再理会暂停：其余网络恢复", "The watchdog sees a queue paused too long, drops its packets and ignores the pause: the rest recovers"}},
	}
	for _, c := range caps {
		fmt.Fprintf(&b, `<text x="300" y="235" text-anchor="middle" opacity="0">%s%s</text>`, showAt(id, c.t, c.end), html.EscapeString(pick(lang, c.s)))
	}
	steps := make([][2]string, len(caps))
	for i, c := range caps {
		steps[i] = c.s
	}
	return animFigure(lang, "pause-storm", id, "0 0 640 250", b.String(),
		[2]string{"暂停风暴：一块卡死的网卡让整张网停下来", "A pause storm: one stuck NIC stops the whole fabric"},
		[2]string{"依据 Guo 等，《RDMA over Commodity Ethernet at Scale》，SIGCOMM 2016 中的事故描述；拓扑为示意。", "After the incidents described by Guo et al., \"RDMA over Commodity Ethernet at Scale\", SIGCOMM 2016; the topology is illustrative."}, steps)
}

// dcqcnPoints simulates a simplified DCQCN reaction point against one
// bottleneck: rate in % of line rate over time in µs. Parameters after Zhu
// et al. (SIGCOMM 2015, section 3 and its parameter list): g = 1/256, at
// most one CNP per flow every 50 µs, α and the rate updated every 55 µs
// without a CNP: five fast-recovery steps (halfway back to the target),
// then additive increase.
func dcqcnPoints() (t, rate, queue []float64, cnps []float64) {
	const (
		dt       = 1.0       // µs
		capacity = 50.0      // % of line rate the bottleneck leaves this flow
		kmin     = 10.0      // queue (KB) where the switch starts marking
		g        = 1.0 / 256 // Zhu et al. 2015; DCTCP's 1/16 is a different algorithm
		cnpGap   = 50.0
		incEvery = 55.0
		rai      = 4.0 // additive increase, % of line rate
	)
	r, rt, alpha, q := 100.0, 100.0, 1.0, 0.0
	lastCNP, lastInc, stage := -1e9, 0.0, 0
	for now := 0.0; now <= 1200; now += dt {
		q = math.Max(0, q+(r-capacity)*dt*0.02) // KB per µs at this rate gap (scaled)
		if q > kmin && now-lastCNP >= cnpGap {
			// CE-marked packets reached the receiver; its NIC sent a CNP.
			rt = r
			r = r * (1 - alpha/2)
			alpha = (1-g)*alpha + g
			lastCNP, lastInc, stage = now, now, 0
			cnps = append(cnps, now)
		} else if now-lastInc >= incEvery {
			alpha = (1 - g) * alpha
			if stage >= 5 {
				rt = math.Min(100, rt+rai)
			}
			r = (r + rt) / 2
			lastInc = now
			stage++
		}
		if int(now)%6 == 0 {
			t = append(t, now)
			rate = append(rate, r)
			queue = append(queue, q)
		}
	}
	return
}

// dcqcnRate draws the simulated rate (and the bottleneck queue) being
// traced out left to right, with a marker at every CNP.
func dcqcnRate(lang string) template.HTML {
	const id = "anim-dcqcn"
	t, rate, queue, cnps := dcqcnPoints()
	const x0, y0, w, h = 60.0, 40.0, 540.0, 150.0
	tmax := t[len(t)-1]
	qmax := 0.0
	for _, q := range queue {
		qmax = math.Max(qmax, q)
	}
	px := func(v float64) float64 { return x0 + v/tmax*w }
	py := func(v float64) float64 { return y0 + h - v/100*h }
	qy := func(v float64) float64 { return y0 + h - v/math.Max(qmax, 1)*h*0.4 }
	var rp, qp strings.Builder
	for i := range t {
		fmt.Fprintf(&rp, "%.1f,%.1f ", px(t[i]), py(rate[i]))
		fmt.Fprintf(&qp, "%.1f,%.1f ", px(t[i]), qy(queue[i]))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#555"/><line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#555"/>`, x0, y0+h, x0+w, y0+h, x0, y0, x0, y0+h)
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="end" font-size="10">100 %%</text><text x="%g" y="%g" text-anchor="end" font-size="10">50 %%</text><text x="%g" y="%g" text-anchor="end" font-size="10">0</text>`,
		x0-4, py(100)+4, x0-4, py(50)+4, x0-4, py(0)+4)
	fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%g" y2="%g" stroke="#1f7a4d" stroke-dasharray="4 3"/><text x="%g" y="%g" fill="#1f7a4d" font-size="10" text-anchor="end">%s</text>`,
		x0, x0+w, py(50), py(50), x0+w-4, py(50)-4, html.EscapeString(pick(lang, [2]string{"瓶颈留给这条流的带宽", "the bottleneck's share for this flow"})))
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle" font-size="11">%s</text>`, x0+w/2, y0+h+28, html.EscapeString(pick(lang, [2]string{"时间（µs，模型）", "time (µs, model)"})))
	fmt.Fprintf(&b, `<text x="14" y="%g" font-size="11" transform="rotate(-90 14 %g)" text-anchor="middle">%s</text>`, y0+h/2, y0+h/2, html.EscapeString(pick(lang, [2]string{"发送速率（线速的 %）", "sending rate (% of line rate)"})))
	// The traced lines: a long dash revealed by animating its offset.
	draw := func(points, color string, width float64) string {
		return fmt.Sprintf(`<polyline points="%s" fill="none" stroke="%s" stroke-width="%g" pathLength="1000" stroke-dasharray="1000" stroke-dashoffset="1000">`+
			`<animate attributeName="stroke-dashoffset" from="1000" to="0" dur="8s" begin="%s" fill="freeze"/></polyline>`, points, color, width, begin(id, 0))
	}
	b.WriteString(draw(qp.String(), "#b7791f", 1.5))
	b.WriteString(draw(rp.String(), "#3b5bdb", 2.5))
	for _, c := range cnps {
		at := c / tmax * 8
		fmt.Fprintf(&b, `<g opacity="0">%s<line x1="%.1f" x2="%.1f" y1="%g" y2="%g" stroke="#d1343b" stroke-dasharray="2 2"/><text x="%.1f" y="%g" fill="#d1343b" font-size="9" text-anchor="middle">CNP</text></g>`,
			showAt(id, at, 0), px(c), px(c), y0, y0+h, px(c), y0-4)
	}
	fmt.Fprintf(&b, `<g font-size="10"><rect x="%g" y="230" width="12" height="4" fill="#3b5bdb"/><text x="%g" y="235">%s</text><rect x="%g" y="230" width="12" height="4" fill="#b7791f"/><text x="%g" y="235">%s</text></g>`,
		x0, x0+16, html.EscapeString(pick(lang, [2]string{"发送端速率 Rc", "sender's rate Rc"})), x0+220, x0+236, html.EscapeString(pick(lang, [2]string{"交换机队列（越过 Kmin 就打 CE）", "switch queue (CE marks past Kmin)"})))
	steps := [][2]string{
		{"发送端以线速起步；瓶颈只留给它一半带宽，交换机队列开始上涨", "The sender starts at line rate; the bottleneck leaves it half, so the switch queue rises"},
		{"队列越过 Kmin，交换机给经过的包打上 CE（ECN = 11）", "Past Kmin the switch marks passing packets CE (ECN = 11)"},
		{"接收端网卡（通知点）看到 CE，向发送端回一个 CNP（每个流至多每 50 µs 一个）", "The receiver's NIC (notification point) sees CE and sends a CNP back (at most one per flow every 50 µs)"},
		{"发送端网卡（反应点）收到 CNP：Rt = Rc，Rc = Rc × (1 − α/2)，α 变大", "The sender's NIC (reaction point) gets the CNP: Rt = Rc, Rc = Rc × (1 − α/2), and α grows"},
		{"一段时间没有 CNP：快速恢复，每步回到与目标 Rt 的中点；五步后加性增加 Rt", "No CNP for a while: fast recovery, halfway back to the target Rt each step; after five steps Rt grows additively"},
		{"速率在瓶颈份额附近锯齿式收敛，队列保持很浅，不需要丢包，也很少需要 PFC", "The rate saw-tooths around the bottleneck share and the queue stays shallow: no drops, and PFC is rarely needed"},
	}
	return animFigure(lang, "dcqcn-rate", id, "0 0 640 245", b.String(),
		[2]string{"DCQCN：CE 标记 → CNP → 降速 → 恢复", "DCQCN: CE mark → CNP → rate cut → recovery"},
		[2]string{"简化模型，参数依据 Zhu 等，《Congestion Control for Large-Scale RDMA Deployments》，SIGCOMM 2015（g = 1/256，每条流至多每 50 µs 一个 CNP，无 CNP 时每 55 µs 更新一次）；Soft-RoCE 没有实现 DCQCN。", "A simplified model with parameters after Zhu et al., \"Congestion Control for Large-Scale RDMA Deployments\", SIGCOMM 2015 (g = 1/256, at most one CNP per flow every 50 µs, an update every 55 µs without one); Soft-RoCE does not implement DCQCN."}, steps)
}
