package rdmaexp

import (
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// decimalRe finds the measured figures a verdict or table prints: numbers
// with a decimal point (counts, sizes and spec constants are integers).
var decimalRe = regexp.MustCompile(`\d+\.\d+`)

// checkVerdictFigures fails when a figure the verdict quotes (in either
// language) is not printed, the same statistic at the same rounding, in
// one of the run's tables; derived lists the ratios and spec constants the
// verdict may compute or quote beyond the table (DESIGN.md: every number a
// verdict quotes is the number shown beside it).
func checkVerdictFigures(t *testing.T, rec *recorder, derived ...string) {
	t.Helper()
	shown, shownSpread := map[string]bool{}, map[string]bool{}
	for _, d := range derived {
		shown[d] = true
	}
	for _, e := range rec.of(sandbox.EvTable) {
		var cells []string
		for _, row := range e.Table.Rows {
			cells = append(cells, row...)
		}
		for _, tt := range e.Table.I18n {
			for _, row := range tt.Rows {
				cells = append(cells, row...)
			}
		}
		for _, c := range cells {
			for _, n := range decimalRe.FindAllString(c, -1) {
				shown[n] = true
			}
			for _, sp := range spreadsIn(c) {
				shownSpread[sp] = true
			}
		}
	}
	r := rec.result(t)
	for lang, v := range r.Messages {
		for _, n := range decimalRe.FindAllString(v, -1) {
			if !shown[n] {
				t.Errorf("%s verdict quotes %s, which no table of the run prints: %s", lang, n, v)
			}
		}
		// a spread is quoted whole: the same median with the same lowest
		// and highest round, or the same range, as one table cell prints
		// it — not three figures gathered from different rows
		for _, sp := range spreadsIn(v) {
			if !shownSpread[sp] {
				t.Errorf("%s verdict quotes the spread %s, which no table cell of the run prints: %s", lang, sp, v)
			}
		}
	}
}

// spreadRe finds a spread as tables and verdicts print it: "median
// (lowest–highest)" (full-width parentheses in Chinese) or a bare range
// "lowest–highest".
var spreadRe = regexp.MustCompile(`(?:(\d+\.\d+) ?[(（])?(\d+\.\d+)–(\d+\.\d+)`)

// spreadsIn lists the spreads in s, written the same in both languages:
// "12.3 (11.0–13.5)" and "12.3（11.0–13.5）" are both "12.3 11.0–13.5",
// "11.0–13.5" alone is "11.0–13.5".
func spreadsIn(s string) []string {
	var out []string
	for _, m := range spreadRe.FindAllStringSubmatch(s, -1) {
		sp := m[2] + "–" + m[3]
		if m[1] != "" {
			sp = m[1] + " " + sp
		}
		out = append(out, sp)
	}
	return out
}

// around is perfRounds rounds within ±10 % of med (median med).
func around(med float64) floatSpread {
	return floatSpreadOf([]float64{0.9 * med, 0.95 * med, med, 1.05 * med, 1.1 * med})
}

func durs(us ...float64) []time.Duration {
	out := make([]time.Duration, len(us))
	for i, u := range us {
		out[i] = time.Duration(u * float64(time.Microsecond))
	}
	return out
}

// TestSweepVerdictFigures: perf-sweep's verdict quotes the table's figures,
// and calls the curves "within ×2" only when every size's ratio is (issue
// 30 saw "0.33–0.88 … less than 2× apart").
func TestSweepVerdictFigures(t *testing.T) {
	rows := []sweepRow{
		{Size: 64, Lat: spreadOf(durs(40, 41, 43, 45, 90)), BW: around(0.064), St: streamStats{Msgs: 1000, Bytes: 64000, Elapsed: time.Second}},
		{Size: 256, Lat: spreadOf(durs(44, 46, 47, 52, 99)), BW: around(0.256), St: streamStats{Msgs: 1000, Bytes: 256000, Elapsed: time.Second}},
		{Size: 1024, Lat: spreadOf(durs(60, 61, 65, 70, 120)), BW: around(1.024), St: streamStats{Msgs: 1000, Bytes: 1024000, Elapsed: time.Second}},
		{Size: 4096, Lat: spreadOf(durs(99, 101, 104, 111, 300)), BW: around(4.096), St: streamStats{Msgs: 1000, Bytes: 4096000, Elapsed: time.Second}},
	}
	for _, c := range []struct {
		name   string
		pt     []float64 // perftest MB/s at rows' sizes
		within bool
	}{
		{"spread past ×2", []float64{0.064 / 0.33, 0.256 / 0.5, 1.024 / 0.7, 4.096 / 0.88}, false},
		{"all within ×2", []float64{0.064 / 0.6, 0.256 / 0.8, 1.024 / 1.1, 4.096 / 1.9}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var pt []ptRow
			for i, r := range rows {
				pt = append(pt, ptRow{Size: r.Size, Iters: 100, MBps: c.pt[i]})
			}
			rec := &recorder{}
			if err := reportSweep(rec, rows, pt, true); err != nil {
				t.Fatal(err)
			}
			checkVerdictFigures(t, rec, "12.5")
			v := rec.result(t).Messages
			if got := strings.Contains(v["en"], "agree within ×2"); got != c.within {
				t.Errorf("en verdict says within ×2: %v, want %v: %s", got, c.within, v["en"])
			}
			if got := strings.Contains(v["zh"], "都相差不到 2 倍"); got != c.within {
				t.Errorf("zh verdict says within ×2: %v, want %v: %s", got, c.within, v["zh"])
			}
		})
	}
}

// TestWaitVerdictFigures: perf-wait calls polling faster only when the
// middle halves of the round trips do not overlap, and quotes the table's
// medians, ranges and CPU shares (issue 30: "polling answers faster" with
// many polling samples above the event ones, a ratio against an unshown
// mean).
func TestWaitVerdictFigures(t *testing.T) {
	for _, c := range []struct {
		name        string
		poll, event []float64
		faster      bool
	}{
		{"overlap", []float64{300, 320, 500, 531, 540, 6500, 8000, 9500}, []float64{450, 600, 700, 800, 820, 900, 1000, 1100}, false},
		{"apart", []float64{300, 310, 320, 330, 340, 350, 360, 9500}, []float64{700, 720, 800, 820, 900, 950, 1000, 1100}, true},
		// Events apart and faster: the poller lost its CPU (beside
		// stress-ng); said, but no firm verdict (a rerun flips it).
		{"events ahead", []float64{6500, 7100, 7400, 8200, 8800, 9500, 9700, 12000}, []float64{650, 700, 900, 1000, 1800, 2000, 2500, 6700}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows := []waitRow{
				{Mode: mPoll, RTT: spreadOf(durs(c.poll...)), CPU: 2 * spreadOf(durs(c.poll...)).Mean, Switches: 3},
				{Mode: mEvent, RTT: spreadOf(durs(c.event...)), CPU: spreadOf(durs(c.event...)).Mean / 3, Switches: 16},
			}
			rec := &recorder{}
			if err := reportWait(rec, 8, rows); err != nil {
				t.Fatal(err)
			}
			f := rec.result(t).Figures
			// the ×N of the medians is derived from two printed medians
			checkVerdictFigures(t, rec, f1(f["event_over_poll_rtt"]))
			v := rec.result(t).Messages
			if got := strings.Contains(v["en"], "Polling answered faster"); got != c.faster {
				t.Errorf("en: polling faster %v, want %v: %s", got, c.faster, v["en"])
			}
			if got := strings.Contains(v["zh"], "轮询响应更快"); got != c.faster {
				t.Errorf("zh: polling faster %v, want %v: %s", got, c.faster, v["zh"])
			}
			if !c.faster && !strings.Contains(v["en"], "too noisy on this machine to say") {
				t.Errorf("overlapping round trips without the too-noisy wording: %s", v["en"])
			}
			if !c.faster && !strings.Contains(v["zh"], "在这台机器上噪声太大") {
				t.Errorf("zh: no firm verdict without the too-noisy wording: %s", v["zh"])
			}
			if want := map[bool]float64{true: 1, false: 0}[c.faster]; f["verdict"] != want {
				t.Errorf("verdict figure %v, want %v (1 polling firmly faster, else 0)", f["verdict"], want)
			}
		})
	}
}

// TestMTUVerdictRule: perf-mtu's general rule counts packets from the size
// and the MTU, whatever the measured average was (issue 30: 65 in one run).
func TestMTUVerdictRule(t *testing.T) {
	size := 65536
	rows := []mtuRow{
		{PathMTU: 1024, St: streamStats{Msgs: 100, Bytes: 100 * int64(size), Elapsed: time.Second, CPU: 50 * time.Millisecond}, BW: around(6.5536), Pkts: 6543},
		{PathMTU: 4096, St: streamStats{Msgs: 180, Bytes: 180 * int64(size), Elapsed: time.Second, CPU: 60 * time.Millisecond}, BW: around(11.79648), Pkts: 2900},
	}
	rec := &recorder{}
	if err := reportMTU(rec, size, rows, false); err != nil {
		t.Fatal(err)
	}
	f := rec.result(t).Figures
	checkVerdictFigures(t, rec, fmt.Sprintf("%.2f", f["gain"]))
	v := rec.result(t).Messages
	for lang, want := range map[string]string{"en": "= 64 packets at path MTU 1024", "zh": "= 64 个报文"} {
		if !strings.Contains(v[lang], want) {
			t.Errorf("%s general rule lacks %q: %s", lang, want, v[lang])
		}
	}
	if strings.Contains(v["en"], "65 packets") {
		t.Errorf("general rule quotes a measured average: %s", v["en"])
	}
}

// TestRegVerdictMemAvailable: reg-mr's verdict quotes the MemAvailable its
// error box shows (the child's reading at the failure).
func TestRegVerdictMemAvailable(t *testing.T) {
	first := &regAttempt{id: "first", label: say("your choice", "你的选择"), req: regReq{Size: 64 << 20, Limit: 64 << 10},
		rep: regRep{Call: "ibv_reg_mr", Errno: int(syscall.ENOMEM), SoftLimit: 64 << 10, MemAvail: 121<<20 + 400<<10}}
	v := regVerdict([]*regAttempt{first})
	shown := human(first.rep.MemAvail)
	for lang, s := range v {
		if !strings.Contains(s, shown) {
			t.Errorf("%s verdict lacks the error box's MemAvailable %s: %s", lang, shown, s)
		}
	}
}
