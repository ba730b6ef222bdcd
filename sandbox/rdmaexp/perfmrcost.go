package rdmaexp

import (
	"context"
	"fmt"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
	"github.com/rdmalab/rdmalab/sandbox/verbs/tsc"
)

// PerfMRCost is lesson 05's "memory registration cost": ibv_reg_mr and
// ibv_dereg_mr timed at sizes from 4 KiB up, then one message sent the
// wrong way (register, send, deregister) against the right way (send from
// memory registered once).
func PerfMRCost() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "perf-mr-cost",
		Title: say("What registering memory costs", "注册内存的代价"),
		Summary: say("Times ibv_reg_mr and ibv_dereg_mr for buffers from 4 KiB up to the chosen size (registration pins every page), then compares registering for each message with registering once and reusing the buffer.",
			"对从 4 KiB 到所选大小的缓冲区计时 ibv_reg_mr 和 ibv_dereg_mr（注册要钉住每一页），再比较“每条消息都注册一次”与“注册一次、反复使用”。"),
		Needs: sandbox.NeedRDMA,
		// timing: needs a quiet machine
		Params: []sandbox.Param{
			{Name: "max_size", Kind: sandbox.ParamBytes, Title: say("Largest buffer", "最大缓冲区"), Help: say("Sizes run from 4 KiB, ×4 each step, up to this.", "大小从 4 KiB 起每次乘 4，直到这个值。"), Min: 64 << 10, Max: 64 << 20, Default: int64(16 << 20)},
			{Name: "repeats", Kind: sandbox.ParamInt, Title: say("Registrations per size", "每种大小的注册次数"), Min: 1, Max: 20, Default: int64(5)},
		},
		Presets: []sandbox.Preset{{ID: "default", Title: say("up to 16 MiB", "直到 16 MiB"), Values: map[string]any{"max_size": int64(16 << 20)}}},
		Timeout: 60 * time.Second,
		Run:     runPerfMRCost,
	}
}

type mrRow struct {
	Size       int
	Reg, Dereg time.Duration // medians
}

func runPerfMRCost(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	maxSize := int(p["max_size"].(int64))
	reps := int(p["repeats"].(int64))
	phase(emit, "setup", say("Opening the device", "打开设备"))
	top, err := pickTopology()
	if err != nil {
		return err
	}
	note(emit, "info", top.describe())
	tcgNote(emit)
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
		row := mrRow{Size: size, Reg: medianOf(reg), Dereg: medianOf(dereg)}
		rows = append(rows, row)
		metric(emit, "reg", say("ibv_reg_mr", "ibv_reg_mr"), float64(size)/1024, us(row.Reg), "µs")
		metric(emit, "dereg", say("ibv_dereg_mr", "ibv_dereg_mr"), float64(size)/1024, us(row.Dereg), "µs")
		logf(emit, "%s: ibv_reg_mr %.1f µs, ibv_dereg_mr %.1f µs (%.2f µs per 4 KiB page)", human(int64(size)), us(row.Reg), us(row.Dereg), us(row.Reg)/float64(size/4096))
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
	once, err := timeN(n, func() error {
		if err := pr.cli.qp.PostSend(pr.writeWR(0, 0, msg, verbs.SendSignaled)); err != nil {
			return err
		}
		return waitOK(ctx, pr)
	})
	if err != nil {
		return verbsError(emit, err)
	}
	return reportMRCost(emit, rows, perMsg, once)
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

func reportMRCost(emit sandbox.Emitter, rows []mrRow, perMsg, once time.Duration) error {
	t := &sandbox.Table{Title: "registration cost (medians)", Columns: []string{"size", "pages", "ibv_reg_mr µs", "ibv_dereg_mr µs", "reg µs per page"}}
	figs := map[string]float64{}
	for _, r := range rows {
		pages := r.Size / 4096
		t.Rows = append(t.Rows, []string{human(int64(r.Size)), fmt.Sprint(pages), f1(us(r.Reg)), f1(us(r.Dereg)), fmt.Sprintf("%.2f", us(r.Reg)/float64(pages))})
		figs[fmt.Sprintf("reg_us_%d", r.Size)], figs[fmt.Sprintf("dereg_us_%d", r.Size)] = us(r.Reg), us(r.Dereg)
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: &sandbox.Table{Title: "one 64 KiB WRITE (median)", Columns: []string{"way", "µs"},
		Rows: [][]string{{"register, WRITE, deregister", f1(us(perMsg))}, {"WRITE from memory registered once", f1(us(once))}}}})
	small, big := rows[0], rows[len(rows)-1]
	growth := ratio(us(big.Reg), us(small.Reg))
	slow := ratio(us(perMsg), us(once))
	figs["reg_small_us"], figs["reg_big_us"], figs["growth"], figs["size_ratio"] = us(small.Reg), us(big.Reg), growth, float64(big.Size)/float64(small.Size)
	figs["per_msg_us"], figs["once_us"], figs["per_msg_slowdown"] = us(perMsg), us(once), slow
	gen := say("In general: ibv_reg_mr pins every page (get_user_pages) and hands the device a translation for each, so its cost grows with the size; ibv_dereg_mr unpins them. On hardware it is the same work plus writing the NIC's translation tables, often tens of µs even for small regions. That is why programs register big buffers once at start and reuse them (or use a pool), never per message.",
		"一般规律：ibv_reg_mr 要钉住每一页（get_user_pages），并为每页给设备一份地址转换，所以代价随大小增长；ibv_dereg_mr 再把它们解除钉住。在硬件上工作相同，还要写网卡的地址转换表，即使是小区域也常常要几十微秒。所以程序在启动时一次注册大缓冲区并反复使用（或用内存池），而不是每条消息都注册。")
	rxe := say("Specific to rxe: there is no NIC table to write — rxe keeps the page list in kernel memory — so small registrations are cheaper than on hardware, while pinning costs the same kind of per-page work.",
		"rxe 特有：没有网卡表需要写——rxe 把页列表存在内核内存里——所以小的注册比硬件便宜，而钉住页面的逐页开销是同一类工作。")
	var v sandbox.Text
	if growth >= 2 {
		v = say(fmt.Sprintf("Registration grew with the size: %.1f µs for %s, %.0f µs for %s (×%.0f for ×%.0f the pages). Registering for each 64 KiB WRITE made it %.1f× slower (%.0f µs against %.0f µs from memory registered once). ", us(small.Reg), human(int64(small.Size)), us(big.Reg), human(int64(big.Size)), growth, figs["size_ratio"], slow, us(perMsg), us(once))+gen["en"]+" "+rxe["en"],
			fmt.Sprintf("注册的代价随大小增长：%s 用 %.1f µs，%s 用 %.0f µs（页数 ×%.0f，时间 ×%.0f）。每个 64 KiB 的 WRITE 都注册一次，使它慢了 %.1f 倍（%.0f µs 对比只注册一次的 %.0f µs）。", human(int64(small.Size)), us(small.Reg), human(int64(big.Size)), us(big.Reg), figs["size_ratio"], growth, slow, us(perMsg), us(once))+gen["zh"]+rxe["zh"])
	} else {
		v = say(fmt.Sprintf("Registration barely grew here: %.1f µs for %s, %.1f µs for %s (×%.1f) — a fixed cost per call dominated. Registering for each 64 KiB WRITE made it %.1f× slower. ", us(small.Reg), human(int64(small.Size)), us(big.Reg), human(int64(big.Size)), growth, slow)+gen["en"]+" "+rxe["en"],
			fmt.Sprintf("这里注册代价几乎没有随大小增长：%s 用 %.1f µs，%s 用 %.1f µs（×%.1f）——每次调用的固定开销占了主导。每个 64 KiB 的 WRITE 都注册一次，使它慢了 %.1f 倍。", human(int64(small.Size)), us(small.Reg), human(int64(big.Size)), us(big.Reg), growth, slow)+gen["zh"]+rxe["zh"])
	}
	result(emit, true, v, figs)
	return nil
}
