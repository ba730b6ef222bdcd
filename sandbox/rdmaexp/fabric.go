package rdmaexp

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/expkit"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// Fabric is lesson 08's libfabric experiment: fi_info lists the providers
// libfabric offers on Soft-RoCE (verbs, the verbs;ofi_rxm layering, tcp),
// then fabtests' fi_pingpong measures a small and a large message over the
// verbs provider's connected endpoints (FI_EP_MSG, RC QPs through rdma_cm)
// and over the tcp provider, and tries verbs;ofi_rxm's reliable datagram
// endpoints (FI_EP_RDM), reporting what happened.
func Fabric() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID:    "fabric-pingpong",
		Title: say("libfabric on Soft-RoCE: fi_info and fi_pingpong, verbs vs tcp", "Soft-RoCE 上的 libfabric：fi_info 与 fi_pingpong，verbs 对比 tcp"),
		Summary: say("Lists the libfabric providers on rxe with fi_info, then runs fi_pingpong over the verbs provider, over verbs;ofi_rxm and over the tcp provider.",
			"用 fi_info 列出 rxe 上的 libfabric 提供者（provider），再用 fi_pingpong 分别走 verbs 提供者、verbs;ofi_rxm 和 tcp 提供者。"),
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Timing,
		Params: []sandbox.Param{
			{Name: "iterations", Kind: sandbox.ParamInt, Title: say("Round trips of the small message", "小消息的往返次数"), Min: 20, Max: 2000, Default: int64(200)},
		},
		Timeout: 6 * time.Minute, // three rounds of four fi_pingpong runs
		Run:     runFabric,
	}
}

// fiProvider is one fi_info entry, reduced to what the table shows.
type fiProvider struct {
	Provider, Fabric, Domain, Type, Protocol string
}

// parseFIInfo reads fi_info's "provider: … fabric: … domain: … type: …
// protocol: …" blocks, one entry per distinct (provider, domain, type).
func parseFIInfo(out string) []fiProvider {
	var res []fiProvider
	seen := map[string]bool{}
	var cur fiProvider
	flush := func() {
		k := cur.Provider + "|" + cur.Domain + "|" + cur.Type
		if cur.Provider != "" && !seen[k] {
			seen[k] = true
			res = append(res, cur)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "provider":
			flush()
			cur = fiProvider{Provider: v}
		case "fabric":
			cur.Fabric = v
		case "domain":
			cur.Domain = v
		case "type":
			cur.Type = v
		case "protocol":
			cur.Protocol = v
		}
	}
	flush()
	return res
}

// fiPerf is fi_pingpong's result row: "64 200 =200 25k 1.41s 0.02 3514.73 0.00".
type fiPerf struct {
	Size   string
	MBps   float64
	UsXfer float64 // µs per transfer: half a round trip
}

var fiRowRe = regexp.MustCompile(`(?m)^(\d+[kmg]?)\s+\d+\s+=\d+\s+\S+\s+[\d.]+s\s+([\d.]+)\s+([\d.]+)\s+[\d.]+\s*$`)

func parseFIPingpong(out string) (fiPerf, error) {
	m := fiRowRe.FindStringSubmatch(out)
	if m == nil {
		return fiPerf{}, fmt.Errorf("no result row in fi_pingpong's output: %q", tail(out))
	}
	bw, _ := strconv.ParseFloat(m[2], 64)
	us, _ := strconv.ParseFloat(m[3], 64)
	if !finite(bw, us) {
		return fiPerf{}, fmt.Errorf("fi_pingpong printed a figure that is not finite: %q", m[0])
	}
	return fiPerf{Size: m[1], MBps: bw, UsXfer: us}, nil
}

// fiRun is one fi_pingpong between the two ends.
type fiRun struct {
	Prov, EP string
	Env      []string
	Size     int
	Iters    int
	Perf     fiPerf
	Err      error
	Why      sandbox.Text  // the tool's own complaint when it failed
	Named    bool          // the complaint names the call that failed
	Limit    time.Duration // how long one try may take; 0 is a minute
}

// run measures once, and once more when fi_pingpong failed without
// naming a call (it ran past its minute, or ended without a complaint):
// on a loaded lab a 64 KiB run of ten round trips once did not end
// within the minute while every other run of the same experiment took
// seconds (hung or starved: its lines were not kept). A failure that
// names its call (verbs;ofi_rxm's fi_enable returning -EINVAL) would
// only repeat.
func (r *fiRun) run(ctx context.Context, emit sandbox.Emitter, bin, server string) {
	for attempt := 1; ; attempt++ {
		r.once(ctx, emit, bin, server)
		if r.Err == nil || r.Named || attempt == 2 || ctx.Err() != nil {
			return
		}
		note(emit, "warn", say(fmt.Sprintf("fi_pingpong -p %s -S %d failed (%v); trying once more", r.Prov, r.Size, r.Err),
			fmt.Sprintf("fi_pingpong -p %s -S %d 失败（%s）；再试一次", r.Prov, r.Size, quoteZh(r.Err))))
	}
}

func (r *fiRun) once(ctx context.Context, emit sandbox.Emitter, bin, server string) {
	r.Perf, r.Err, r.Why, r.Named = fiPerf{}, nil, nil, false
	port := strconv.Itoa(freePort())
	args := []string{"-p", r.Prov, "-e", r.EP, "-I", strconv.Itoa(r.Iters), "-S", strconv.Itoa(r.Size)}
	srv := tool{Args: append(append([]string{bin}, args...), "-B", port), Env: r.Env}
	cli := tool{Args: append(append([]string{bin}, args...), "-P", port, server), Env: r.Env}
	toolNote(emit, "server ", srv)
	toolNote(emit, "client ", cli)
	limit := r.Limit
	if limit == 0 {
		limit = time.Minute
	}
	out, srvOut, err := runPair(ctx, srv, cli, limit)
	if err == nil {
		r.Perf, err = parseFIPingpong(out)
	}
	if err != nil {
		r.Err = err
		r.Why, r.Named = fiComplaint(srvOut + "\n" + out)
		// libfabric's own warnings (FI_LOG_LEVEL=warn) say which call
		// failed beneath fi_enable; else the tool's last lines
		var warns []string
		for _, l := range strings.Split(srvOut+"\n"+out, "\n") {
			if strings.Contains(l, "<warn>") || strings.Contains(l, "<error>") {
				warns = append(warns, l)
			}
		}
		if len(warns) == 0 {
			warns = strings.Split(lastLines(srvOut+"\n"+out, 6), "\n")
		}
		for _, l := range warns[:min(len(warns), 10)] {
			if strings.TrimSpace(l) != "" {
				rawLine(emit, l)
			}
		}
	}
}

var fiRetRe = regexp.MustCompile(`(\w+)\(\): \S+, ret=-(\d+)`)

// fiComplaint says what failed where fabtests printed it: the call and its
// errno ("fi_enable(): util/pingpong.c:1551, ret=-22 (Invalid argument)"),
// named true, else that the tool failed (its lines are in the log).
func fiComplaint(out string) (why sandbox.Text, named bool) {
	if m := fiRetRe.FindStringSubmatch(out); m != nil {
		n, _ := strconv.Atoi(m[2])
		e := syscall.Errno(n)
		name := verbs.ErrnoName(e)
		return say(fmt.Sprintf("%s() returned -%d, %s (%s)", m[1], n, name, e.Error()),
			fmt.Sprintf("%s() 返回 -%d，%s（%s）", m[1], n, name, expkit.ErrnoZh(name, e.Error()))), true
	}
	return say("fi_pingpong failed (its output is in the log above)", "fi_pingpong 失败（输出见上面的日志）"), false
}

func runFabric(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
	iters := int(p["iterations"].(int64))
	top, err := pickTopology()
	if err != nil {
		return err
	}
	info, err := lookTool("fi_info", "libfabric-bin")
	if err != nil {
		return err
	}
	bin, err := lookTool("fi_pingpong", "libfabric-bin")
	if err != nil {
		return err
	}
	tcgNote(emit)

	phase(emit, "find", say("What libfabric offers here: fi_info", "libfabric 在这里提供什么：fi_info"))
	t := sandbox.NewTable(say("libfabric providers (fi_info -p …)", "libfabric 提供者（fi_info -p …）"),
		say("provider", "提供者"), say("domain", "域"), say("endpoint type", "端点类型"), say("protocol", "协议"))
	counts := map[string]int{}
	for _, prov := range []string{"verbs", "verbs;ofi_rxm", "tcp"} {
		out, err := runTool(ctx, tool{Args: []string{info, "-p", prov}}, 30*time.Second)
		if err != nil {
			rawLine(emit, fmt.Sprintf("fi_info -p %s: %v: %s", prov, err, lastLines(out, 3)))
			continue
		}
		for _, f := range parseFIInfo(out) {
			if prov == "tcp" && f.Domain != "veth0" && f.Domain != "veth1" {
				continue // lo and the like: not the path the lesson compares
			}
			t.AddRow(sandbox.Same(f.Provider), sandbox.Same(f.Domain), sandbox.Same(f.Type), sandbox.Same(f.Protocol))
			if strings.HasPrefix(f.Domain, "rxe") || f.Provider == "tcp" {
				counts[f.Provider]++
			}
		}
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: t})
	if counts["verbs"] == 0 {
		return fmt.Errorf("fi_info lists no verbs provider entry on an rxe device: libfabric did not find Soft-RoCE")
	}
	note(emit, "info", say(fmt.Sprintf("The client connects to %s, an address of the same guest: rdma_cm resolves it to %s, so both ends of the verbs runs are on one device, which loops the packets back inside rxe.", top.Server.IP(), top.Server.Dev),
		fmt.Sprintf("客户端连接 %s，这是同一台客户机上的地址：rdma_cm 把它解析到 %s，所以 verbs 的两端在同一个设备上，报文在 rxe 内部环回。", top.Server.IP(), top.Server.Dev)))

	// verbs and tcp, 64 B and 64 KiB, in upperRounds rounds that
	// alternate the providers; then verbs;ofi_rxm once (it reports what
	// happened, it is not compared).
	type side struct {
		prov       string
		small, big []*fiRun
		lat, bw    floatSpread
	}
	sides := []*side{{prov: "verbs"}, {prov: "tcp"}}
	for round := range upperRounds {
		for _, sd := range sides {
			phase(emit, sd.prov, say(fmt.Sprintf("fi_pingpong over the %s provider, round %d of %d", sd.prov, round+1, upperRounds),
				fmt.Sprintf("fi_pingpong 走 %s 提供者，第 %d 轮（共 %d 轮）", sd.prov, round+1, upperRounds)))
			small := &fiRun{Prov: sd.prov, EP: "msg", Size: 64, Iters: iters}
			big := &fiRun{Prov: sd.prov, EP: "msg", Size: 64 << 10, Iters: max(10, iters/4)}
			for _, r := range []*fiRun{small, big} {
				r.run(ctx, emit, bin, top.Server.IP())
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if r.Err != nil {
					failed := say("failed twice", "两次都失败")
					if r.Named {
						failed = say("failed", "失败")
					}
					return sandbox.Because("tool-failed",
						fmt.Sprintf("fi_pingpong -p %s -e %s -S %d %s: %v (%s)", r.Prov, r.EP, r.Size, failed["en"], r.Err, r.Why["en"]),
						fmt.Sprintf("fi_pingpong -p %s -e %s -S %d %s：%s（%s）", r.Prov, r.EP, r.Size, failed["zh"], quoteZh(r.Err), r.Why["zh"]))
				}
			}
			sd.small, sd.big = append(sd.small, small), append(sd.big, big)
		}
	}
	for _, sd := range sides {
		var lat, bw []float64
		for i := range sd.small {
			lat, bw = append(lat, sd.small[i].Perf.UsXfer), append(bw, sd.big[i].Perf.MBps)
		}
		sd.lat, sd.bw = floatSpreadOf(lat), floatSpreadOf(bw)
	}
	phase(emit, "rxm", say("fi_pingpong over verbs;ofi_rxm (reliable datagram endpoints)", "fi_pingpong 走 verbs;ofi_rxm（可靠数据报端点）"))
	rxm := &fiRun{Prov: "verbs;ofi_rxm", EP: "rdm", Size: 64, Iters: 20, Env: []string{"FI_LOG_LEVEL=warn"}}
	rxm.run(ctx, emit, bin, top.Server.IP())
	if ctx.Err() != nil {
		return ctx.Err()
	}
	v, tc := sides[0], sides[1]
	res := sandbox.NewTable(say(fmt.Sprintf("fi_pingpong, measured here (Soft-RoCE under emulation): median (lowest–highest) of %d rounds", upperRounds),
		fmt.Sprintf("fi_pingpong，本机实测（仿真下的 Soft-RoCE）：%d 轮的中位数（最低–最高）", upperRounds)),
		say("provider", "提供者"), say("endpoint", "端点"), say("64 B: µs per transfer (one way)", "64 B：每次传输 µs（单程）"), say("64 KiB: MB/s", "64 KiB：MB/s"))
	for _, sd := range sides {
		res.AddRow(sandbox.Same(sd.prov), sandbox.Same("FI_EP_MSG"), sd.lat.say(1), sd.bw.say(1))
	}
	if rxm.Err == nil {
		res.AddRow(sandbox.Same("verbs;ofi_rxm"), sandbox.Same("FI_EP_RDM"), sandbox.Same(f1(rxm.Perf.UsXfer)), sandbox.Same("—"))
	} else {
		res.AddRow(sandbox.Same("verbs;ofi_rxm"), sandbox.Same("FI_EP_RDM"), say("failed: "+rxm.Why["en"], "失败："+rxm.Why["zh"]), sandbox.Same("—"))
	}
	emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: res})

	latOrder, latText := roundsOrder(sandbox.Same("verbs"), v.lat, tc.lat, 1)
	bwOrder, bwText := roundsOrder(sandbox.Same("verbs"), v.bw, tc.bw, 1)
	figs := map[string]float64{
		"verbs_us": v.lat.Med, "tcp_us": tc.lat.Med, "verbs_MBps": v.bw.Med, "tcp_MBps": tc.bw.Med,
		"verbs_us_min": v.lat.Min, "verbs_us_max": v.lat.Max, "tcp_us_min": tc.lat.Min, "tcp_us_max": tc.lat.Max,
		"verbs_MBps_min": v.bw.Min, "verbs_MBps_max": v.bw.Max, "tcp_MBps_min": tc.bw.Min, "tcp_MBps_max": tc.bw.Max,
		"lat_order": latOrder, "bw_order": bwOrder, "rounds": upperRounds,
		"verbs_entries": float64(counts["verbs"]), "rxm_entries": float64(counts["verbs;ofi_rxm"]), "rxm_ok": b2f(rxm.Err == nil),
	}
	vl, tl, vb, tb := v.lat.say(1), tc.lat.say(1), v.bw.say(1), tc.bw.say(1)
	en := fmt.Sprintf("fi_info found the verbs provider on rxe (%d entries) and verbs;ofi_rxm (%d). 64 B, one way: verbs %s µs vs tcp %s µs (%s); 64 KiB: verbs %s vs tcp %s MB/s (%s) — two software paths compared under emulation, not RDMA hardware. ",
		counts["verbs"], counts["verbs;ofi_rxm"], vl["en"], tl["en"], latText["en"], vb["en"], tb["en"], bwText["en"])
	zh := fmt.Sprintf("fi_info 在 rxe 上找到了 verbs 提供者（%d 条）和 verbs;ofi_rxm（%d 条）。64 B 单程：verbs %s µs，tcp %s µs（%s）；64 KiB：verbs %s 对 tcp %s MB/s（%s）——这是仿真下两条软件路径的对比，不是 RDMA 硬件。",
		counts["verbs"], counts["verbs;ofi_rxm"], vl["zh"], tl["zh"], latText["zh"], vb["zh"], tb["zh"], bwText["zh"])
	if rxm.Err == nil {
		en += fmt.Sprintf("verbs;ofi_rxm's reliable datagram endpoints also ran (%s µs).", f1(rxm.Perf.UsXfer))
		zh += fmt.Sprintf("verbs;ofi_rxm 的可靠数据报端点也跑通了（%s µs）。", f1(rxm.Perf.UsXfer))
	} else {
		en += "verbs;ofi_rxm is listed but its endpoint did not run on this rxe (" + rxm.Why["en"] + "): listed by fi_info is not the same as usable."
		zh += "verbs;ofi_rxm 虽被列出，它的端点却没能在这个 rxe 上运行（" + rxm.Why["zh"] + "）：被 fi_info 列出不等于能用。"
	}
	result(emit, true, say(en, zh), figs)
	return nil
}
