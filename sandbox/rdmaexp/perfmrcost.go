package rdmaexp

import (
	"context"
	"fmt"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
	"github.com/rdmalab/rdmalab/sandbox/verbs/tsc"
)

// perfMRCostDecl is lesson 06's "memory registration cost": ibv_reg_mr and
// ibv_dereg_mr timed at sizes from 4 KiB up, then one message sent the
// wrong way (register, send, deregister) against the right way (send from
// memory registered once).
var perfMRCostDecl = perfDecl{
	id:    "perf-mr-cost",
	title: say("What registering memory costs", "注册内存的代价"),
	summary: say("Times ibv_reg_mr and ibv_dereg_mr for buffers from 4 KiB up to the chosen size (registration pins every page), then compares registering for each message with registering once and reusing the buffer.",
		"对从 4 KiB 到所选大小的缓冲区计时 ibv_reg_mr 和 ibv_dereg_mr（注册要钉住每一页），再比较“每条消息都注册一次”与“注册一次、反复使用”。"),
	params: []sandbox.Param{
		{Name: "max_size", Kind: sandbox.ParamBytes, Title: say("Largest buffer", "最大缓冲区"), Help: say("Sizes run from 4 KiB, ×4 each step, up to this.", "大小从 4 KiB 起每次乘 4，直到这个值。"), Min: 64 << 10, Max: 64 << 20, Default: int64(16 << 20)},
		{Name: "repeats", Kind: sandbox.ParamInt, Title: say("Registrations per size", "每种大小的注册次数"), Min: 1, Max: 20, Default: int64(5)},
	},
	presets: []sandbox.Preset{{ID: "default", Title: say("up to 16 MiB", "直到 16 MiB"), Values: map[string]any{"max_size": int64(16 << 20)}}},
	setup:   say("Opening the device", "打开设备"),
	timeout: 60 * time.Second,
	run:     runPerfMRCost,
}

type mrRow struct {
	Size       int
	Reg, Dereg time.Duration // medians
	RegUS      floatSpread   // ibv_reg_mr µs over the repeats
}

func runPerfMRCost(ctx context.Context, p sandbox.Params, top topology, emit sandbox.Emitter) error {
	maxSize := int(p["max_size"].(int64))
	reps := int(p["repeats"].(int64))
	var sizes []int
	for s := 4 << 10; s < maxSize; s *= 4 {
		sizes = append(sizes, s)
	}
	sizes = append(sizes, maxSize)
	// The buffers are touched first, so the figures are the pinning, not
	// the kernel handing out fresh zeroed pages.
	buf, err := verbs.NewBuffer(maxSize)
	if err != nil {
		return verbsError(emit, err)
	}
	defer buf.Close()
	b := buf.Bytes()
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	pr, err := openPair(top, rcOpts{BufSize: 64 << 10, Access: verbs.AccessLocalWrite, SendWR: 16, RecvWR: 1},
		rcOpts{BufSize: 64 << 10, Access: verbs.AccessLocalWrite | verbs.AccessRemoteWrite, SendWR: 1, RecvWR: 1})
	if err != nil {
		return verbsError(emit, err)
	}
	defer pr.Close()
	defer lockThread()()

	phase(emit, "register", say(fmt.Sprintf("ibv_reg_mr and ibv_dereg_mr, %d times per size", reps), fmt.Sprintf("每种大小调用 ibv_reg_mr 和 ibv_dereg_mr 各 %d 次", reps)))
	if mr, err := pr.cli.pd.RegMR(buf, 0, 4096, verbs.AccessLocalWrite); err == nil { // warm the path
		mr.Close()
	}
	var rows []mrRow
	for _, size := range sizes {
		var reg, dereg []time.Duration
		for r := 0; r < reps; r++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			var clk tsc.Clock
			clk.Start()
			c0 := tsc.Now()
			mr, err := pr.cli.pd.RegMR(buf, 0, size, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
			c1 := tsc.Now()
			if err != nil {
				return verbsError(emit, err)
			}
			cerr := mr.Close()
			c2 := tsc.Now()
			clk.Stop()
			if cerr != nil {
				return verbsError(emit, cerr)
			}
			reg, dereg = append(reg, clk.Duration(c1-c0)), append(dereg, clk.Duration(c2-c1))
		}
		regUS := make([]float64, len(reg))
		for i, d := range reg {
			regUS[i] = us(d)
		}
		row := mrRow{Size: size, Reg: medianOf(reg), Dereg: medianOf(dereg), RegUS: floatSpreadOf(regUS)}
		rows = append(rows, row)
		metricSpread(emit, "reg", say("ibv_reg_mr", "ibv_reg_mr"), float64(size), row.RegUS, "µs")
		metric(emit, "dereg", say("ibv_dereg_mr", "ibv_dereg_mr"), float64(size), us(row.Dereg), "µs")
		note(emit, "info", say(fmt.Sprintf("%s: ibv_reg_mr %.1f µs, ibv_dereg_mr %.1f µs (%.2f µs per 4 KiB page)", human(int64(size)), us(row.Reg), us(row.Dereg), us(row.Reg)/float64(size/4096)),
			fmt.Sprintf("%s：ibv_reg_mr %.1f µs，ibv_dereg_mr %.1f µs（每个 4 KiB 页 %.2f µs）", human(int64(size)), us(row.Reg), us(row.Dereg), us(row.Reg)/float64(size/4096))))
	}

	// the wrong way and the right way to send one 64 KiB message
	phase(emit, "reuse", say("Register per message vs register once", "每条消息都注册 vs 只注册一次"))
	const msg = 64 << 10
	const n = 50
	perMsg, err := timeN(n, func() error {
		mr, err := pr.cli.pd.RegMR(buf, 0, msg, verbs.AccessLocalWrite)
		if err != nil {
			return err
		}
		wr := pr.writeWR(0, 0, msg, verbs.SendSignaled)
		wr.MR = mr
		if err := pr.cli.qp.PostSend(wr); err != nil {
			mr.Close()
			return err
		}
		if err := waitOK(ctx, pr); err != nil {
			mr.Close()
			return err
		}
		return mr.Close()
	})
	if err != nil {
		return verbsError(emit, err)
	}
	regOnly, err := timeN(n, func() error {
		mr, err := pr.cli.pd.RegMR(buf, 0, msg, verbs.AccessLocalWrite)
		if err != nil {
			return err
		}
		return mr.Close()
	})
	if err != nil {
		return verbsError(emit, err)
	}
	once, err := timeN(n, func() error {
		if err := pr.cli.qp.PostSend(pr.writeWR(0, 0, msg, verbs.SendSignaled)); err != nil {
			return err
		}
		return waitOK(ctx, pr)
	})
	if err != nil {
		return verbsError(emit, err)
	}
	return reportMRCost(emit, rows, perMsg, once, regOnly)
}

// timeN runs f n times and returns the median duration.
func timeN(n int, f func() error) (time.Duration, error) {
	var clk tsc.Clock
	cyc := make([]uint64, 0, n)
	clk.Start()
	for i := 0; i < n; i++ {
		c0 := tsc.Now()
		if err := f(); err != nil {
			return 0, err
		}
		if c1 := tsc.Now(); c1 > c0 {
			cyc = append(cyc, c1-c0)
		}
	}
	clk.Stop()
	d := make([]time.Duration, len(cyc))
	for i, c := range cyc {
		d[i] = clk.Duration(c)
	}
	return medianOf(d), nil
}

// waitOK waits for the client's next send completion and checks it.
func waitOK(ctx context.Context, pr *pair) error {
	wc, err := pr.cli.waitCQ(ctx, pr.cli.sendCQ, 10*time.Second)
	if err != nil {
		return err
	}
	return wc.Err()
}

func reportMRCost(emit sandbox.Emitter, rows []mrRow, perMsg, once, regOnly time.Duration) error {
	t := sandbox.NewTable(say("registration cost (medians)", "注册代价（中位数）"), say("size", "大小"), say("pages", "页数"),
		say(fmt.Sprintf("ibv_reg_mr µs, median (lowest–highest of %d)", rows[0].RegUS.N), fmt.Sprintf("ibv_reg_mr µs，中位数（%d 次中最低–最高）", rows[0].RegUS.N)), sandbox.Same("ibv_dereg_mr µs"), say("reg µs per page", "每页注册 µs"))
	figs := map[string]float64{}
	for _, r := range rows {
		pages := r.Size / 4096
		t.AddRow(sandbox.Same(human(int64(r.Size))), sandbox.Same(fmt.Sprint(pages)), r.RegUS.say(1), sandbox.Same(f1(us(r.Dereg))), sandbox.Same(fmt.Sprintf("%.2f", us(r.Reg)/float64(pages))))
		figs[fmt.Sprintf("reg_min_us_%d", r.Size)], figs[fmt.Sprintf("reg_max_us_%d", r.Size)] = r.RegUS.Min, r.RegUS.Max
		figs[fmt.Sprintf("reg_us_%d", r.Size)], figs[fmt.Sprintf("dereg_us_%d", r.Size)] = us(r.Reg), us(r.Dereg)
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
	t2 := sandbox.NewTable(say("one 64 KiB WRITE (median)", "一个 64 KiB 的 WRITE（中位数）"), say("way", "方式"), sandbox.Same("µs"))
	t2.AddRow(say("register, WRITE, deregister", "注册、WRITE、注销"), sandbox.Same(f1(us(perMsg))))
	t2.AddRow(say("WRITE from memory registered once", "从只注册一次的内存 WRITE"), sandbox.Same(f1(us(once))))
	t2.AddRow(say("register + deregister alone", "仅注册 + 注销"), sandbox.Same(f1(us(regOnly))))
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t2})
	// the cheapest of the small sizes (≤ 64 KiB) is the fixed cost of a call
	small, big := rows[0], rows[len(rows)-1]
	for _, r := range rows {
		if r.Size <= 64<<10 && r.Reg < small.Reg {
			small = r
		}
	}
	growth := ratio(us(big.Reg), us(small.Reg))
	slow := ratio(us(perMsg), us(once))
	figs["reg_small_us"], figs["reg_big_us"], figs["growth"], figs["size_ratio"] = us(small.Reg), us(big.Reg), growth, float64(big.Size)/float64(small.Size)
	figs["per_msg_us"], figs["once_us"], figs["per_msg_slowdown"] = us(perMsg), us(once), slow
	figs["reg_dereg_64k_us"] = us(regOnly)
	// firm when every registration of the largest size took at least
	// twice (or every one less than twice) every one of the smallest
	kind := order(big.RegUS, small.RegUS.scaled(2), 1)
	figs["verdict"] = kind
	share := ratio(us(regOnly), us(once))
	// A 64 KiB WRITE at 100 Gb/s takes about 5 µs on the wire (64 KiB ÷
	// 12.5 GB/s). The µs measured here come from an emulated CPU, so the
	// verdict compares shares, never this page's µs with the 5 µs.
	hw := say(fmt.Sprintf(" Registering and deregistering 64 KiB cost %s µs here, %.0f%% of a 64 KiB WRITE on this slow software device; a hardware RNIC moves 64 KiB in about 5 µs at 100 Gb/s (64 KiB ÷ 12.5 GB/s) while registering still takes a system call, the pinning and a write to the NIC's tables, so there registering per message would be a far larger share of each transfer (do not set this run's µs, from an emulated CPU, against the 5 µs).", f1(us(regOnly)), share*100),
		fmt.Sprintf("这里注册加注销 64 KiB 花了 %s µs，相当于这个缓慢的软件设备上一个 64 KiB WRITE 的 %.0f%%；硬件网卡在 100 Gb/s 下搬 64 KiB 约需 5 µs（64 KiB ÷ 12.5 GB/s），而注册仍然要一次系统调用、钉页，再加上写网卡的表，所以在那里每条消息都注册，占每次传输的比例会大得多（不要拿这次在模拟 CPU 上测得的微秒数去比这 5 µs）。", f1(us(regOnly)), share*100))
	gen := say("In general: ibv_reg_mr pins every page (the kernel's pin_user_pages) and hands the device a translation for each, so its cost grows with the size; ibv_dereg_mr unpins them. On hardware it is the same work plus writing the NIC's translation tables. That is why programs register big buffers once at start and reuse them (or use a pool), never per message.",
		"一般规律：ibv_reg_mr 要钉住每一页（内核的 pin_user_pages），并为每页给设备一份地址转换，所以代价随大小增长；ibv_dereg_mr 再把它们解除钉住。在硬件上工作相同，还要再写网卡的地址转换表。所以程序在启动时一次注册大缓冲区并反复使用（或用内存池），而不是每条消息都注册。")
	rxe := say("Specific to rxe: there is no NIC table to write — rxe keeps the page list in kernel memory — so what you measured is the system call and the per-page pinning, without the device's share.",
		"rxe 特有：没有网卡表需要写——rxe 把页列表存在内核内存里——所以这里测到的是系统调用和逐页钉住的开销，不含设备那一份。")
	// The verdict compares the cheapest small size with the largest; when
	// the smallest size measured took longer than that one, the table
	// shows it, and the verdict says why it was not the one compared.
	below := sandbox.Text{"en": "", "zh": ""}
	if first := rows[0]; first.Size != small.Size {
		below = say(fmt.Sprintf(" (%s took %s µs, more than %s: below 64 KiB the fixed cost of a call and its noise outweigh the pages, so the cheapest small size stands for that fixed cost.)", human(int64(first.Size)), first.RegUS.say(1)["en"], human(int64(small.Size))),
			fmt.Sprintf("（%s 用了 %s µs，比 %s 还多：64 KiB 以下，每次调用的固定开销和它的波动盖过了页数，所以拿最便宜的小尺寸代表这份固定开销。）", human(int64(first.Size)), first.RegUS.say(1)["zh"], human(int64(small.Size))))
	}
	var v sandbox.Text
	switch kind {
	case 1:
		v = say(fmt.Sprintf("Registration grew with the size: %s µs for %s, %s µs for %s (median, lowest–highest of %d; ×%.0f for ×%.0f the pages). A 64 KiB WRITE with its own registration took %s µs, from memory registered once %s µs.", small.RegUS.say(1)["en"], human(int64(small.Size)), big.RegUS.say(1)["en"], human(int64(big.Size)), big.RegUS.N, growth, figs["size_ratio"], f1(us(perMsg)), f1(us(once)))+below["en"]+hw["en"]+" "+gen["en"]+" "+rxe["en"],
			fmt.Sprintf("注册的代价随大小增长：%s 用 %s µs，%s 用 %s µs（%d 次的中位数，最低–最高；页数 ×%.0f，时间 ×%.0f）。每次都注册的 64 KiB WRITE 用了 %s µs，从只注册一次的内存发送用了 %s µs。", human(int64(small.Size)), small.RegUS.say(1)["zh"], human(int64(big.Size)), big.RegUS.say(1)["zh"], big.RegUS.N, figs["size_ratio"], growth, f1(us(perMsg)), f1(us(once)))+below["zh"]+hw["zh"]+gen["zh"]+rxe["zh"])
	case -1:
		v = say(fmt.Sprintf("Registration barely grew here: %s µs for %s, %s µs for %s (median, lowest–highest of %d; ×%.1f) — a fixed cost per call dominated.", small.RegUS.say(1)["en"], human(int64(small.Size)), big.RegUS.say(1)["en"], human(int64(big.Size)), big.RegUS.N, growth)+below["en"]+hw["en"]+" "+gen["en"]+" "+rxe["en"],
			fmt.Sprintf("这里注册代价几乎没有随大小增长：%s 用 %s µs，%s 用 %s µs（%d 次的中位数，最低–最高；×%.1f）——每次调用的固定开销占了主导。", human(int64(small.Size)), small.RegUS.say(1)["zh"], human(int64(big.Size)), big.RegUS.say(1)["zh"], big.RegUS.N, growth)+below["zh"]+hw["zh"]+gen["zh"]+rxe["zh"])
	default:
		why := tooNoisy(say(fmt.Sprintf("over %d registrations each, the range of %s overlaps twice the range of %s, so whether it took twice as long or more is not settled", big.RegUS.N, human(int64(big.Size)), human(int64(small.Size))),
			fmt.Sprintf("各注册 %d 次中，%s 的范围与 %s 范围的两倍互相重叠，是否达到两倍以上还定不下来", big.RegUS.N, human(int64(big.Size)), human(int64(small.Size)))))
		v = say(fmt.Sprintf("Whether registration grew with the size is %s: %s µs for %s, %s µs for %s (median, lowest–highest; ×%.1f).", why["en"], small.RegUS.say(1)["en"], human(int64(small.Size)), big.RegUS.say(1)["en"], human(int64(big.Size)), growth)+below["en"]+hw["en"]+" "+gen["en"]+" "+rxe["en"],
			fmt.Sprintf("注册代价是否随大小增长，%s。%s 用 %s µs，%s 用 %s µs（中位数，最低–最高；×%.1f）。", why["zh"], human(int64(small.Size)), small.RegUS.say(1)["zh"], human(int64(big.Size)), big.RegUS.say(1)["zh"], growth)+below["zh"]+hw["zh"]+gen["zh"]+rxe["zh"])
	}
	result(emit, true, v, figs)
	return nil
}
