package rdmaexp

import (
	"context"
	"fmt"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// perfDepthDecl is lesson 06's "queue depth": bandwidth of a WRITE stream with
// 1, 2, 4 … WRs in flight.
var perfDepthDecl = perfDecl{
	id:    "perf-depth",
	title: say("Queue depth: work requests in flight vs bandwidth", "队列深度：在途工作请求数与带宽"),
	summary: say("Streams RDMA WRITEs keeping 1, 2, 4 … up to the chosen number of work requests in flight and charts the bandwidth at each depth.",
		"流式发送 RDMA WRITE，分别保持 1、2、4……直到所选数量的工作请求在途，画出每种深度下的带宽。"),
	params: []sandbox.Param{
		{Name: "size", Kind: sandbox.ParamBytes, Title: say("Message size", "消息大小"), Min: 64, Max: 256 << 10, Default: int64(16 << 10)},
		{Name: "max_depth", Kind: sandbox.ParamInt, Title: say("Deepest queue", "最大深度"), Help: say("Depths run 1, 2, 4 … up to this.", "深度依次为 1、2、4……直到这个值。"), Min: 2, Max: 64, Default: int64(32)},
	},
	presets: []sandbox.Preset{
		{ID: "16k", Title: say("16 KiB", "16 KiB"), Values: map[string]any{"size": int64(16 << 10)}},
		{ID: "small", Title: say("256 B", "256 B"), Values: map[string]any{"size": int64(256)}},
	},
	// perfRounds passes of short streams, each drained: a loaded TCG
	// guest needed over 60 s for the 256 B preset
	timeout: 90 * time.Second,
	run:     runPerfDepth,
}

type depthRow struct {
	Depth int
	St    streamStats // the rounds together
	BW    floatSpread // MB/s per round
}

func runPerfDepth(ctx context.Context, p sandbox.Params, top topology, emit sandbox.Emitter) error {
	size := int(p["size"].(int64))
	maxD := int(p["max_depth"].(int64))
	pr, err := openPair(top, rcOpts{BufSize: size, Access: verbs.AccessLocalWrite, SendWR: maxD, RecvWR: 1},
		rcOpts{BufSize: size, Access: verbs.AccessLocalWrite | verbs.AccessRemoteWrite, SendWR: 1, RecvWR: 1})
	if err != nil {
		return verbsError(emit, err)
	}
	defer pr.Close()
	defer lockThread()()
	var depths []int
	for d := 1; d < maxD; d *= 2 {
		depths = append(depths, d)
	}
	depths = append(depths, maxD)
	// 5 s of streaming in all, cut into perfRounds passes
	budget := time.Duration(float64(5*time.Second) / float64(len(depths)) / perfRounds)
	phase(emit, "measure", say(fmt.Sprintf("%s WRITEs at depths %v", human(int64(size)), depths), fmt.Sprintf("%s 的 WRITE，深度 %v", human(int64(size)), depths)))
	if _, err := pr.stream(ctx, streamOpts{Size: size, Depth: maxD, SignalEvery: maxD, Msgs: 2 * maxD}); err != nil {
		return verbsError(emit, err)
	}
	ready, err := pr.readyShare(ctx, size, 50)
	if err != nil {
		return verbsError(emit, err)
	}
	note(emit, "info", say(fmt.Sprintf("Depth 1: for %.0f%% of 50 WRITEs the completion was already in the CQ at the first poll after ibv_post_send returned.", ready*100),
		fmt.Sprintf("深度 1：50 个 WRITE 中有 %.0f%% 在 ibv_post_send 返回后第一次轮询时，完成就已经在 CQ 里了。", ready*100)))
	rows := make([]depthRow, len(depths))
	bw := make([][]float64, len(depths))
	for round := 0; round < perfRounds; round++ { // passes up, down, up …: drift hits every depth alike
		seq := depths
		if round%2 == 1 {
			seq = reversed(depths)
		}
		for _, d := range seq {
			i := indexOf(depths, d)
			st, err := pr.stream(ctx, streamOpts{Size: size, Depth: d, SignalEvery: max(1, d/2), Budget: budget})
			if err != nil {
				return verbsError(emit, err)
			}
			rows[i].Depth = d
			rows[i].St = addStats(rows[i].St, st)
			bw[i] = append(bw[i], st.MBps())
			if round == perfRounds-1 {
				rows[i].BW = floatSpreadOf(bw[i])
				metricSpread(emit, "bw", say("bandwidth", "带宽"), float64(d), rows[i].BW, "MB/s")
			}
		}
	}
	return reportDepth(emit, size, rows, ready)
}

// readyShare posts n signaled WRITEs one at a time and returns the share
// whose completion was already there at the first poll after the post.
func (p *pair) readyShare(ctx context.Context, size, n int) (float64, error) {
	wcs := make([]verbs.WC, 1)
	hits := 0
	for i := 0; i < n; i++ {
		if err := p.cli.qp.PostSend(p.writeWR(uint64(i), 0, size, verbs.SendSignaled)); err != nil {
			return 0, err
		}
		k, err := p.cli.sendCQ.Poll(wcs)
		if err != nil {
			return 0, err
		}
		if k == 1 {
			hits++
			if err := wcs[0].Err(); err != nil {
				return 0, err
			}
			continue
		}
		if err := waitOK(ctx, p); err != nil {
			return 0, err
		}
	}
	return float64(hits) / float64(n), nil
}

func reversed(s []int) []int {
	out := make([]int, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func indexOf(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func reportDepth(emit sandbox.Emitter, size int, rows []depthRow, ready float64) error {
	t := sandbox.NewTable(say("queue depth vs bandwidth", "队列深度与带宽"), say("depth", "深度"),
		say(fmt.Sprintf("MB/s, median (lowest–highest of %d rounds)", rows[0].BW.N), fmt.Sprintf("MB/s，中位数（%d 轮中最低–最高）", rows[0].BW.N)), say("k msg/s", "千条消息/秒"), say("× depth 1", "× 深度 1"), say("CPU µs/msg", "每条消息 CPU µs"))
	base := rows[0].BW.Med
	figs := map[string]float64{"size": float64(size)}
	best := rows[0]
	for _, r := range rows {
		t.AddRow(sandbox.Same(fmt.Sprint(r.Depth)), r.BW.say(1), sandbox.Same(f1(r.St.MsgRate()/1000)), sandbox.Same(fmt.Sprintf("%.2f", ratio(r.BW.Med, base))), sandbox.Same(f1(us(r.St.CPUPerMsg()))))
		figs[fmt.Sprintf("mbps_%d", r.Depth)] = r.BW.Med
		figs[fmt.Sprintf("mbps_min_%d", r.Depth)], figs[fmt.Sprintf("mbps_max_%d", r.Depth)] = r.BW.Min, r.BW.Max
		if r.BW.Med > best.BW.Med {
			best = r
		}
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
	deep := rows[len(rows)-1]
	gain := ratio(deep.BW.Med, base)
	kind := order(deep.BW, rows[0].BW, 1)
	figs["gain"], figs["best_depth"], figs["mbps_1"], figs["mbps_max"], figs["verdict"] = gain, float64(best.Depth), base, deep.BW.Med, kind
	figs["ready_at_first_poll"] = ready
	gen := say("In general: with one WR in flight the link idles for a whole round trip after every message; bandwidth × round-trip time is how many bytes must be in flight to fill it (100 Gb/s × 2 µs = 25 KB), so real programs keep many WRs posted.",
		"一般规律：只有一个 WR 在途时，每条消息之后链路都要空等一个往返；带宽 × 往返时间就是填满链路需要在途的字节数（100 Gb/s × 2 µs = 25 KB），所以真实程序会同时投递很多 WR。")
	rxe := say("Specific to rxe on the lab guest's Linux 6.1 (newer kernels schedule the requester on a workqueue instead): the doorbell (a write() system call) runs the requester in the posting process, and on one machine the packet, its ACK and the completion are mostly done before the call returns — there is little round trip left to hide, so depth helps far less than on a wire.",
		"rxe 特有（本实验室虚拟机的 Linux 6.1；更新的内核改为把请求方逻辑排进工作队列）：门铃（一次 write() 系统调用）在投递进程里直接运行请求方逻辑；在同一台机器上，报文、它的 ACK 和完成大多在调用返回前就处理完了——几乎没有往返时间需要掩盖，所以深度的作用远小于真实链路。")
	if ready >= 0.5 {
		rxe = say(fmt.Sprintf("Specific to rxe on the lab guest's Linux 6.1 (newer kernels schedule the requester on a workqueue instead): the doorbell (a write() system call) runs the requester in the posting process, and on one machine the packet, its ACK and the completion are handled before the call returns — for %.0f%% of single WRITEs the completion was already in the CQ at the first poll. There is no round trip left to hide, so depth helps far less than on a wire (a hardware RNIC's first poll finds nothing: the ACK is still µs away).", ready*100),
			fmt.Sprintf("rxe 特有（本实验室虚拟机的 Linux 6.1；更新的内核改为把请求方逻辑排进工作队列）：门铃（一次 write() 系统调用）在投递进程里直接运行请求方逻辑；在同一台机器上，报文、它的 ACK 和完成在调用返回前就处理完了——%.0f%% 的单个 WRITE 在投递后第一次轮询时完成就已经在 CQ 里了。没有往返时间需要掩盖，所以深度的作用远小于真实链路（硬件网卡的第一次轮询什么也找不到：ACK 还在几微秒之外）。", ready*100))
	} else {
		rxe = say(fmt.Sprintf("Specific to rxe: the packets are built and processed by the kernel; here only %.0f%% of single WRITEs had completed by the first poll after the post — the rest waited for the kernel's deferred packet work, a round trip that depth can hide.", ready*100),
			fmt.Sprintf("rxe 特有：报文由内核构造和处理；这里只有 %.0f%% 的单个 WRITE 在投递后第一次轮询时已经完成——其余的要等内核延后的报文处理，这段往返可以被深度掩盖。", ready*100))
	}
	bEn := fmt.Sprintf("%s WRITEs ran at %s MB/s at depth 1 and %s MB/s at depth %d (median, lowest–highest of %d rounds; ×%.2f)", human(int64(size)), rows[0].BW.say(1)["en"], deep.BW.say(1)["en"], deep.Depth, deep.BW.N, gain)
	bZh := fmt.Sprintf("%s 的 WRITE 深度 1 时 %s MB/s，深度 %d 时 %s MB/s（%d 轮的中位数，最低–最高；×%.2f）", human(int64(size)), rows[0].BW.say(1)["zh"], deep.Depth, deep.BW.say(1)["zh"], deep.BW.N, gain)
	var v sandbox.Text
	switch kind {
	case 1:
		v = say(fmt.Sprintf("More WRs in flight moved more data in every round: %s; the best was depth %d. ", bEn, best.Depth)+gen["en"]+" "+rxe["en"],
			fmt.Sprintf("在途的 WR 越多，每一轮搬的数据都越多：%s；最好的是深度 %d。", bZh, best.Depth)+gen["zh"]+rxe["zh"])
	case -1:
		v = say(fmt.Sprintf("More WRs in flight did not help — it was slower in every round here: %s. With no round trip to hide, a deeper queue only adds bookkeeping. ", bEn)+rxe["en"]+" "+gen["en"],
			fmt.Sprintf("在途的 WR 更多并没有帮助——这里每一轮都更慢：%s。没有往返时间可以掩盖，更深的队列只多出了记账工作。", bZh)+rxe["zh"]+gen["zh"])
	default:
		why := overlapWhy(say(fmt.Sprintf("depth 1 and depth %d", deep.Depth), fmt.Sprintf("深度 1 与深度 %d", deep.Depth)), deep.BW.N)
		v = say(fmt.Sprintf("Depth made no difference this run could see: %s — whether it helped at all is %s. ", bEn, why["en"])+rxe["en"]+" "+gen["en"],
			fmt.Sprintf("这次运行看不出深度带来的差别：%s——它到底有没有帮助，%s。", bZh, why["zh"])+rxe["zh"]+gen["zh"])
	}
	result(emit, true, v, figs)
	return nil
}
