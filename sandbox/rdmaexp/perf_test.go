package rdmaexp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// TestPerfOnDevices runs lesson 06's experiments for real (here, or in the
// Soft-RoCE guest) and checks the effect each one teaches, then that the
// devices hold no more than before.
func TestPerfOnDevices(t *testing.T) {
	ex := pickExecutor(t)
	before := ex.run(t, "rdma-resource", nil).result(t).Figures
	if len(before) == 0 {
		t.Fatal("rdma-resource reported no devices")
	}
	for _, c := range []struct {
		id   string
		test func(*testing.T, executor)
	}{
		{"perf-sweep", testPerfSweep}, {"perf-inline", testPerfInline}, {"perf-signal", testPerfSignal},
		{"perf-postlist", testPerfPostList},
		{"perf-wait", testPerfWait}, {"perf-mr-cost", testPerfMRCost}, {"perf-depth", testPerfDepth}, {"perf-mtu", testPerfMTU},
	} {
		t.Run(c.id, func(t *testing.T) {
			c.test(t, ex)
			// what `rdma resource` counts is back where it was
			after := ex.run(t, "rdma-resource", nil).result(t).Figures
			for k, v := range before {
				if after[k] != v {
					t.Errorf("resource leak after %s: %s was %v, now %v", c.id, k, v, after[k])
				}
			}
		})
	}
}

// perfReruns is how often TestPerfVerdictsHold runs each preset.
const perfReruns = 3

// rerunCuts are the parameters a preset leaves free that the rerun test
// sets lower, to keep its time down where the statistic allows: fewer
// round trips per round (still perfRounds rounds, still above the
// parameter's minimum), fewer seconds per MTU.
var rerunCuts = map[string]map[string]any{
	"perf-inline": {"iterations": 100}, // 5 rounds of 20 WRITEs per way and size
	"perf-wait":   {"iterations": 100}, // the middle half of 100 round trips per way
	"perf-mtu":    {"seconds": 1},      // 5 rounds of 0.2 s per MTU
}

// TestPerfVerdictsHold runs every preset of the perf-* family perfReruns
// times in the shared guest (the first of them is TestPerfOnDevices' run
// where that test ran the preset's very params: reuseRun) and fails when a firm verdict of one run is
// the opposite firm verdict of another (DESIGN.md: a verdict must survive
// a rerun). A firm verdict beside "too noisy to say" is allowed — that is
// what the spread is for — and logged.
func TestPerfVerdictsHold(t *testing.T) {
	ex := pickExecutor(t)
	start := time.Now()
	for _, d := range perfFamily {
		for _, pr := range d.presets {
			t.Run(d.id+"/"+pr.ID, func(t *testing.T) {
				params := map[string]any{}
				for k, v := range rerunCuts[d.id] {
					params[k] = v
				}
				for k, v := range pr.Values { // the preset's own values win
					params[k] = v
				}
				var kinds []float64
				for i := range perfReruns {
					t0 := time.Now()
					var rec *recorder
					if i == 0 {
						// the run TestPerfOnDevices made of this preset, if it did
						rec, _ = reuseRun(t, ex, d.id, params)
					} else {
						rec = ex.run(t, d.id, params)
					}
					r := rec.result(t)
					k, ok := r.Figures["verdict"]
					if !ok {
						t.Fatalf("run %d has no verdict figure: %v", i, r.Figures)
					}
					v := r.Messages["en"]
					if n := strings.Index(v, " In general"); n > 0 {
						v = v[:n]
					}
					t.Logf("run %d (%.1f s): verdict %v: %s", i, time.Since(t0).Seconds(), k, v)
					kinds = append(kinds, k)
				}
				checkNoFlip(t, kinds, "1 and -1 are opposite firm verdicts, 0 too noisy to say")
			})
		}
	}
	t.Logf("%d runs of the perf-* presets: %v", perfReruns, time.Since(start).Round(time.Second))
}

// checkNoFlip fails when one run's firm verdict (1 or -1) is the opposite
// of another's, and logs how many runs were firm; meaning says what the
// kinds stand for.
func checkNoFlip(t *testing.T, kinds []float64, meaning string) {
	t.Helper()
	firm := 0
	for _, k := range kinds {
		if k != 0 {
			firm++
		}
	}
	for i := range kinds {
		for j := i + 1; j < len(kinds); j++ {
			if kinds[i]*kinds[j] < 0 {
				t.Errorf("the verdict flipped between runs %d and %d of the same preset: %v (%s)", i, j, kinds, meaning)
			}
		}
	}
	if firm > 0 && firm < len(kinds) {
		t.Logf("firm in %d of %d runs, too noisy to say in the others: %v (%s)", firm, len(kinds), kinds, meaning)
	} else {
		t.Logf("verdicts over %d runs: %v (%d firm; %s)", len(kinds), kinds, firm, meaning)
	}
}

func logResult(t *testing.T, rec *recorder) map[string]float64 {
	t.Helper()
	r := rec.result(t)
	for _, e := range rec.of(sandbox.EvTable) {
		t.Logf("table %s: %v", e.Table.Title, e.Table.Rows)
	}
	t.Logf("verdict: %s", r.Message)
	if r.Messages["zh"] == "" || r.Messages["en"] == "" {
		t.Error("verdict not in both languages")
	}
	if len(rec.of(sandbox.EvMetric)) == 0 {
		t.Error("no chart points")
	}
	return r.Figures
}

func testPerfSweep(t *testing.T, ex executor) {
	// the default preset's params (TestPerfVerdictsHold reruns it)
	start := time.Now()
	rec, again := reuseRun(t, ex, "perf-sweep", map[string]any{"max_size": 64 << 10, "perftest": "curve"})
	if !again {
		t.Logf("perf-sweep with perftest's curve: %v from the test's side", time.Since(start).Round(time.Millisecond))
		for i, e := range rec.evs {
			if e.Type == sandbox.EvPhase || e.Series == "bw_perftest" {
				t.Logf("%s %s%s at +%v", e.Type, e.Name, e.Series, rec.at[i].Sub(start).Round(time.Millisecond))
			}
		}
		t.Logf("last event at +%v", rec.at[len(rec.at)-1].Sub(start).Round(time.Millisecond))
	}
	f := logResult(t, rec)
	// 12.5: 100 Gbit/s in GB/s (hardware reference); 0.9: the r² below
	// which perftest refuses its clock calibration (a row it spoils).
	// perftest's peak is a point of its curve on the chart (its sizes are
	// more than the table's), so the curve's points count as shown.
	shown := []string{"12.5", "0.9"}
	for _, m := range rec.of(sandbox.EvMetric) {
		if m.Series == "bw_perftest" {
			shown = append(shown, fmt.Sprintf("%.1f", m.Y))
		}
	}
	checkVerdictFigures(t, rec, shown...)
	// bandwidth grows with the size (the per-message cost amortised): the
	// best size moves several times what 64 B WRITEs do; latency grows too
	if best := f[fmt.Sprintf("mbps_%.0f", f["best_size"])]; best < 4*f["mbps_64"] || f["best_size"] < 1024 {
		t.Errorf("best bandwidth %.1f MB/s at %v B, 64 B: %.1f MB/s; want ≥ ×4 at ≥ 1 KiB", best, f["best_size"], f["mbps_64"])
	}
	if f["lat_us_65536"] <= f["lat_us_64"] {
		t.Errorf("64 KiB latency %.1f µs not above 64 B latency %.1f µs", f["lat_us_65536"], f["lat_us_64"])
	}
	checkPerftestCurve(t, rec, f, 64<<10)
}

// checkPerftestCurve: ib_write_bw -a's rows reached the chart as a second
// series at perftest's sizes (powers of two from 64 B, stopped at max),
// with positive bandwidth, the same figures the verdict counts, and at
// least three sizes shared with our sweep.
func checkPerftestCurve(t *testing.T, rec *recorder, f map[string]float64, max int) {
	t.Helper()
	var xs []int
	for _, e := range rec.of(sandbox.EvMetric) {
		if e.Series != "bw_perftest" {
			continue
		}
		x := int(e.X)
		if x < 64 || x > max || x&(x-1) != 0 {
			t.Errorf("perftest point at %v B: want a power of two in [64, %d]", e.X, max)
		}
		if len(xs) > 0 && x <= xs[len(xs)-1] {
			t.Errorf("perftest sizes not increasing: %d after %v", x, xs)
		}
		if e.Y <= 0 || e.Unit != "MB/s" {
			t.Errorf("perftest point at %d B: %v %s", x, e.Y, e.Unit)
		}
		if e.Messages["zh"] == "" || e.Messages["en"] == "" {
			t.Errorf("perftest series label not in both languages: %v", e.Messages)
		}
		if got := f[fmt.Sprintf("pt_mbps_%d", x)]; got != e.Y {
			t.Errorf("perftest at %d B: chart %v, figures %v", x, e.Y, got)
		}
		xs = append(xs, x)
	}
	t.Logf("perftest curve sizes: %v (%v rows spoilt by its calibration)", xs, f["perftest_spoilt"])
	if len(xs) < 6 || float64(len(xs)) != f["perftest_points"] {
		t.Errorf("perftest curve has %d points (figures say %v); want ≥ 6 of the 11 sizes 64 B–64 KiB", len(xs), f["perftest_points"])
	}
	// the client was stopped at max: no row beyond it, and the row count
	// (good + spoilt) is exactly the sizes 64 B … max
	if rows := f["perftest_points"] + f["perftest_spoilt"]; rows != 11 {
		t.Errorf("perftest rows 64 B–64 KiB: %v, want 11", rows)
	}
	if f["perftest_matched"] < 3 || f["ours_over_perftest"] <= 0 {
		t.Errorf("sizes measured by both: %v (ratio %v); want ≥ 3", f["perftest_matched"], f["ours_over_perftest"])
	}
	r := rec.result(t)
	if !strings.Contains(r.Messages["en"], "ib_write_bw -a") || !strings.Contains(r.Messages["zh"], "ib_write_bw -a") {
		t.Errorf("verdict does not speak of perftest's curve: %s", r.Messages["en"])
	}
}

func testPerfInline(t *testing.T, ex executor) {
	rec := ex.run(t, "perf-inline", map[string]any{"iterations": 200, "max_inline": 64})
	f := logResult(t, rec)
	checkVerdictFigures(t, rec, "6.1", "0.80", "1.25") // the guest's kernel; inlineFast, inlineSlow
	if f["above_refused"] != 1 {
		t.Errorf("an inline post above max_inline (%v B) was not refused", f["max_inline"])
	}
	if f["snapshot_inline"] != 1 {
		t.Error("an inline WRITE delivered bytes overwritten after the post")
	}
	// On rxe inline saves only the kernel's MR lookup (rxe_req.c copies
	// from wqe->dma.inline_data instead of copy_data through the MR), small
	// beside the doorbell system call and the packet work: no margin
	// either way, which is what the lesson teaches.
	if f["ratio"] < 0.75 || f["ratio"] > 1.33 {
		t.Errorf("inline/plain post→completion ratio at 8 B: %.2f; rxe should show no large difference", f["ratio"])
	}
}

func testPerfSignal(t *testing.T, ex executor) {
	rec, _ := reuseRun(t, ex, "perf-signal", map[string]any{"every": 16, "size": 64, "seconds": 1}) // the default preset
	f := logResult(t, rec)
	checkVerdictFigures(t, rec, f2(f["speedup"]))
	if f["cqe_per_msg_all"] != 1 || f["cqe_per_msg_sel"] > 1.0/16+0.01 {
		t.Errorf("completions per message: %v signaling all, %v every 16th", f["cqe_per_msg_all"], f["cqe_per_msg_sel"])
	}
	// rxe's kernel completer retires unsignaled WRs too (rxe_comp.c,
	// do_complete advances the send queue either way), so on Soft-RoCE the
	// queue never fills; a hardware provider would refuse after ≥ 64.
	if f["never_full"] != 0 || f["never_posted"] != 4*signalDepth {
		t.Errorf("never signaling on rxe: full=%v after %v posts; want all %d accepted", f["never_full"], f["never_posted"], 4*signalDepth)
	}
	t.Logf("selective signaling speed-up: ×%.2f", f["speedup"])
}

// testPerfPostList: rxe's provider rings the doorbell — one write() on the
// uverbs file — once per ibv_post_send call, however long the list.
func testPerfPostList(t *testing.T, ex executor) {
	rec, _ := reuseRun(t, ex, "perf-postlist", map[string]any{"list": 16, "size": 64, "seconds": 1}) // the default preset
	f := logResult(t, rec)
	if r := rec.result(t); r.OK == nil || !*r.OK {
		t.Errorf("verdict not ok: %s", r.Message)
	}
	if f["single_wrs"] != postListBatches*16 || f["single_calls"] != f["single_wrs"] || f["single_writes"] != f["single_calls"] {
		t.Errorf("one WR per call: %v WRs, %v calls, %v write()s; want one write() per call", f["single_wrs"], f["single_calls"], f["single_writes"])
	}
	if f["list_wrs"] != postListBatches*16 || f["list_calls"] != postListBatches || f["list_writes"] != f["list_calls"] {
		t.Errorf("lists of 16: %v WRs, %v calls, %v write()s; want one write() per post list", f["list_wrs"], f["list_calls"], f["list_writes"])
	}
	checkVerdictFigures(t, rec, f2(f["speedup"]), "6.1") // 6.1: the guest's kernel version
	t.Logf("post list speed-up: ×%.2f (rounds %.0f–%.0f against %.0f–%.0f msg/s)", f["speedup"], f["rate_list_min"], f["rate_list_max"], f["rate_single_min"], f["rate_single_max"])
}

func testPerfWait(t *testing.T, ex executor) {
	rec := ex.run(t, "perf-wait", map[string]any{"iterations": 200, "size": 64})
	f := logResult(t, rec)
	checkVerdictFigures(t, rec, f1(f["event_over_poll_rtt"]))
	if f["cpu_share_event"] >= f["cpu_share_poll"] {
		t.Errorf("events used as much CPU per round trip as polling: %.2f vs %.2f of the round trip", f["cpu_share_event"], f["cpu_share_poll"])
	}
	// With events each thread waits once per round trip, but it sleeps
	// only when its completion has not landed by the time it armed the CQ
	// and polled again (the race-free pattern): under load the peer is
	// often quicker, so the count lies between 0.5 and 2 (1.4 seen in CI).
	// Polling threads never sleep of their own accord.
	if f["sleeps_event"] < 0.5 || f["sleeps_poll"] >= f["sleeps_event"] {
		t.Errorf("sleeps per round trip: %.1f polling, %.1f events", f["sleeps_poll"], f["sleeps_event"])
	}
}

func testPerfMRCost(t *testing.T, ex executor) {
	// the default preset: 5 registrations per size (TestPerfVerdictsHold reruns it)
	rec, _ := reuseRun(t, ex, "perf-mr-cost", map[string]any{"max_size": 16 << 20, "repeats": 5})
	f := logResult(t, rec)
	// the growth and the page ratio are derived from two printed figures
	checkVerdictFigures(t, rec, fmtFig(f["growth"], 0), fmtFig(f["growth"], 1), fmtFig(f["size_ratio"], 0), "12.5")
	// 16 MiB is 4096× the pages of 4 KiB: registration must grow with it
	if f["growth"] < 5 {
		t.Errorf("registering 16 MiB took only ×%.1f the time of the cheapest small size", f["growth"])
	}
	if f["reg_us_16777216"] <= 2*f["reg_us_1048576"] {
		t.Errorf("registering 16 MiB (%.0f µs) not well above 1 MiB (%.0f µs)", f["reg_us_16777216"], f["reg_us_1048576"])
	}
	if f["reg_dereg_64k_us"] <= 0 {
		t.Errorf("no per-message registration cost: %v", f)
	}
}

func testPerfDepth(t *testing.T, ex executor) {
	// the 16k preset: depths 1 … 32 (TestPerfVerdictsHold reruns it)
	rec, _ := reuseRun(t, ex, "perf-depth", map[string]any{"size": 16 << 10, "max_depth": 32})
	f := logResult(t, rec)
	checkVerdictFigures(t, rec, "6.1")
	t.Logf("depth gain ×%.2f (best depth %v), ready at the first poll %.2f", f["gain"], f["best_depth"], f["ready_at_first_poll"])
	for _, d := range []string{"1", "2", "4", "8", "16", "32"} {
		if f["mbps_"+d] <= 0 {
			t.Errorf("no bandwidth at depth %s: %v", d, f)
		}
	}
	// rxe on the guest's kernel (6.1) runs the requester inside the
	// doorbell write() and the peer's receive and ACK in the softirq that
	// follows: the completion of a lone WRITE is there before the post
	// returns — why depth buys little here.
	if f["ready_at_first_poll"] < 0.5 {
		t.Errorf("only %.0f%% of WRITEs complete at the first poll; the lesson says rxe completes them inside the post", f["ready_at_first_poll"]*100)
	}
}

func testPerfMTU(t *testing.T, ex executor) {
	// the default preset at TestPerfVerdictsHold's 1 s per MTU
	rec, _ := reuseRun(t, ex, "perf-mtu", map[string]any{"size": 64 << 10, "seconds": 1})
	f := logResult(t, rec)
	checkVerdictFigures(t, rec, fmt.Sprintf("%.2f", f["gain"]))
	if v := rec.result(t).Messages["en"]; !strings.Contains(v, "= 64 packets at path MTU 1024") {
		t.Errorf("general rule not the arithmetic 64 packets: %s", v)
	}
	// 64 KiB is 64 packets at 1024 and 16 at 4096 (a retransmission adds a few)
	if f["pkts_per_msg_1024"] < 63.5 || f["pkts_per_msg_1024"] > 70 || f["pkts_per_msg_4096"] < 15.8 || f["pkts_per_msg_4096"] > 18 {
		t.Errorf("packets per 64 KiB WRITE: %.1f at 1024, %.1f at 4096; want 64 and 16", f["pkts_per_msg_1024"], f["pkts_per_msg_4096"])
	}
	if f["raised_at_start"] != 0 {
		t.Error("the MTU was raised before the run started")
	}
	// cancelled while the MTU is raised: the guard must put it back
	cancelled := runUntil(t, ex, "perf-mtu", map[string]any{"size": 64 << 10, "seconds": 4}, "mtu-4096")
	if !cancelled {
		t.Fatal("the run ended before the MTU was raised")
	}
	time.Sleep(time.Second)
	f = ex.run(t, "perf-mtu", map[string]any{"size": 4 << 10, "seconds": 1}).result(t).Figures
	if f["raised_at_start"] != 0 {
		t.Error("after a cancelled run the veth MTU was still raised: the guard did not restore it")
	}
}

// runUntil starts an experiment and cancels it when a phase named phase
// begins; it reports whether that happened.
func runUntil(t *testing.T, ex executor, id string, raw map[string]any, phase string) bool {
	t.Helper()
	return runUntilAfter(t, ex, id, raw, phase, 0)
}

// runUntilAfter is runUntil cancelling wait after the phase began (a
// phase is announced before its tools start).
func runUntilAfter(t *testing.T, ex executor, id string, raw map[string]any, phase string, wait time.Duration) bool {
	t.Helper()
	g, ok := ex.(guestExec)
	if !ok {
		t.Skip("cancelling mid-run is tested in the guest")
	}
	e := registry().Get(id)
	p, err := e.Validate(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.Timeout+time.Minute)
	defer cancel()
	seen := false
	_ = g.b.Exec(ctx, sandbox.NewSession(sandbox.Request{RunID: fmt.Sprintf("test-%d", time.Now().UnixNano()), Experiment: id, Params: p}, nil, func(ev sandbox.Event) {
		if ev.Type == sandbox.EvPhase && ev.Name == phase && !seen {
			seen = true
			time.AfterFunc(wait, cancel)
		}
	}))
	return seen
}

// TestParsePerftestRow reads rows as ib_write_bw printed them in the
// guest, including one with the calibration complaint glued on.
func TestParsePerftestRow(t *testing.T) {
	for _, c := range []struct {
		line string
		want ptRow
		ok   bool
	}{
		{" 4096       5                31.14              16.43  \t\t   0.004205\r", ptRow{4096, 5, 16.43}, true},
		{" 65536      5                18.50              16.01  \t\t   0.000256Correlation coefficient r^2: 0.035965 < 0.9", ptRow{65536, 5, 16.01}, true},
		{" 131072     5                0.00               0.00   \t\t   0.000000", ptRow{131072, 5, 0}, true},
		{" 256        5                inf                inf    \t\t   inf", ptRow{256, 5, 0}, true},
		{" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]", ptRow{}, false},
		{" TX depth        : 5", ptRow{}, false},
		{" local address: LID 0000 QPN 0x0011 PSN 0xdb1238", ptRow{}, false},
	} {
		got, ok := parsePerftestRow(c.line)
		if ok != c.ok || got != c.want {
			t.Errorf("%q: %+v %v, want %+v %v", c.line, got, ok, c.want, c.ok)
		}
	}
	for max, want := range map[int]int{16 << 10: 50, 64 << 10: 50, 256 << 10: 16, 1 << 20: 5} {
		if got := curveIters(max); got != want {
			t.Errorf("curveIters(%d) = %d, want %d", max, got, want)
		}
	}
}
