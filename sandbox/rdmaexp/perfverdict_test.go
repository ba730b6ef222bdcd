package rdmaexp

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
	"github.com/rdmalab/rdmalab/sandbox"
)

// spreadOfRounds is the spread of per-round figures.
func spreadOfRounds(v ...float64) floatSpread { return floatSpreadOf(v) }

// checkWorded: the run's verdict figure is want; a verdict the spread does
// not allow (0) says so in both languages; every figure and spread the
// verdict quotes is one a table prints (issue 30).
func checkWorded(t *testing.T, rec *recorder, want float64, derived ...string) {
	t.Helper()
	r := rec.result(t)
	if got := r.Figures["verdict"]; got != want {
		t.Errorf("verdict figure %v, want %v: %s", got, want, r.Messages["en"])
	}
	noisy := strings.Contains(r.Messages["en"], "too noisy on this machine to say")
	noisyZh := strings.Contains(r.Messages["zh"], "在这台机器上噪声太大，说不准")
	if noisy != noisyZh {
		t.Errorf("only one language says too noisy: en %v, zh %v", noisy, noisyZh)
	}
	if want == 0 && !noisy && !strings.Contains(r.Messages["en"], "No measurable difference") {
		t.Errorf("overlapping rounds without the too-noisy wording: %s", r.Messages["en"])
	}
	if want != 0 && noisy {
		t.Errorf("a firm verdict (%v) says too noisy: %s", want, r.Messages["en"])
	}
	checkVerdictFigures(t, rec, derived...)
	// one language at a time, zh punctuation, in the verdict and the tables
	zh := []string{r.Messages["zh"]}
	for _, e := range rec.of(sandbox.EvTable) {
		if tt, ok := e.Table.I18n["zh"]; ok {
			zh = append(zh, tt.Title)
			zh = append(zh, tt.Columns...)
			for _, row := range tt.Rows {
				zh = append(zh, row...)
			}
		}
	}
	for _, m := range rec.of(sandbox.EvMetric) {
		zh = append(zh, m.Messages["zh"])
	}
	for _, s := range zh {
		if l := zhcheck.Leaks(s); len(l) > 0 || len(zhcheck.Prose(s)) > 0 {
			t.Errorf("zh text leaks %v %v: %s", l, zhcheck.Prose(s), s)
		}
	}
}

// TestPerfVerdictsBySpread: each perf-* verdict is firm only when its
// rounds do not overlap, in either direction, and "too noisy" otherwise.
func TestPerfVerdictsBySpread(t *testing.T) {
	apart, overlap := spreadOfRounds(10, 11, 12, 13, 14), spreadOfRounds(12, 13, 14, 15, 16)
	above := spreadOfRounds(20, 21, 22, 23, 24)
	for _, c := range []struct {
		name     string
		lo, hi   floatSpread // the figure expected smaller, and larger
		want     float64
		sameText bool
	}{
		{"apart", apart, above, 1, false},
		{"overlap", apart, overlap, 0, false},
		{"reversed", above, apart, -1, false},
	} {
		t.Run("perf-sweep/"+c.name, func(t *testing.T) {
			rows := []sweepRow{
				{Size: 64, Lat: spreadOf(durs(40, 41, 43, 45, 90)), BW: c.lo, St: streamStats{Msgs: 1000, Bytes: 64000, Elapsed: time.Second}},
				{Size: 4096, Lat: spreadOf(durs(99, 101, 104, 111, 300)), BW: c.hi, St: streamStats{Msgs: 1000, Bytes: 4096000, Elapsed: time.Second}},
			}
			rec := &recorder{}
			if err := reportSweep(rec, rows, nil, false); err != nil {
				t.Fatal(err)
			}
			checkWorded(t, rec, c.want, "12.5")
		})
		t.Run("perf-signal/"+c.name, func(t *testing.T) {
			st := []streamStats{{Msgs: 1000, Bytes: 64000, Elapsed: time.Second, Completions: 1000}, {Msgs: 1000, Bytes: 64000, Elapsed: time.Second, Completions: 63}}
			rec := &recorder{}
			if err := reportSignal(rec, 16, 64, st, [2]floatSpread{c.lo.scaled(1000), c.hi.scaled(1000)}, 256, false, nil); err != nil {
				t.Fatal(err)
			}
			checkWorded(t, rec, c.want, f2(rec.result(t).Figures["speedup"]))
		})
		t.Run("perf-depth/"+c.name, func(t *testing.T) {
			rows := []depthRow{{Depth: 1, BW: c.lo, St: streamStats{Msgs: 100, Elapsed: time.Second}}, {Depth: 2, BW: overlap, St: streamStats{Msgs: 100, Elapsed: time.Second}}, {Depth: 4, BW: c.hi, St: streamStats{Msgs: 100, Elapsed: time.Second}}}
			rec := &recorder{}
			if err := reportDepth(rec, 16<<10, rows, 0.9); err != nil {
				t.Fatal(err)
			}
			checkWorded(t, rec, c.want, "6.1") // the guest's kernel
		})
		t.Run("perf-mtu/"+c.name, func(t *testing.T) {
			rows := []mtuRow{
				{PathMTU: 1024, St: streamStats{Msgs: 100, Elapsed: time.Second}, BW: c.lo, Pkts: 6400},
				{PathMTU: 4096, St: streamStats{Msgs: 100, Elapsed: time.Second}, BW: c.hi, Pkts: 1600},
			}
			rec := &recorder{}
			if err := reportMTU(rec, 65536, rows, false); err != nil {
				t.Fatal(err)
			}
			checkWorded(t, rec, c.want, f2(rec.result(t).Figures["gain"]))
		})
		t.Run("perf-mr-cost/"+c.name, func(t *testing.T) {
			us := func(s floatSpread) time.Duration { return time.Duration(s.Med * float64(time.Microsecond)) }
			// the largest size against twice the smallest: firm at ×2
			small := c.lo.scaled(0.5)
			rows := []mrRow{{Size: 4096, Reg: us(small), Dereg: time.Microsecond, RegUS: small}, {Size: 16 << 20, Reg: us(c.hi), Dereg: time.Microsecond, RegUS: c.hi}}
			rec := &recorder{}
			if err := reportMRCost(rec, rows, 300*time.Microsecond, 100*time.Microsecond, 200*time.Microsecond); err != nil {
				t.Fatal(err)
			}
			f := rec.result(t).Figures
			checkWorded(t, rec, c.want, fmtFig(f["growth"], 0), fmtFig(f["growth"], 1), fmtFig(f["size_ratio"], 0), "12.5")
		})
	}
	// inline ÷ plain per round against 1
	for _, c := range []struct {
		name  string
		ratio floatSpread
		want  float64
		words string
	}{
		{"faster", spreadOfRounds(0.60, 0.65, 0.7, 0.72, 0.78), 1, "Inline was faster by more than a fifth in every round"},
		{"slower", spreadOfRounds(1.3, 1.35, 1.4, 1.5, 1.6), -1, "Inline was slower by more than a fifth in every round"},
		// the rounds of two runs seen on the lab host: each on one side of
		// 1, neither beyond a fifth
		{"no difference, below 1", spreadOfRounds(0.86, 0.9, 0.92, 0.95, 0.97), 0, "No measurable difference"},
		{"no difference, above 1", spreadOfRounds(1.03, 1.1, 1.13, 1.15, 1.18), 0, "No measurable difference"},
		{"noisy", spreadOfRounds(0.7, 0.9, 1.0, 1.2, 1.4), 0, "too noisy on this machine to say"},
	} {
		t.Run("perf-inline/"+c.name, func(t *testing.T) {
			rows := []inlineRow{{Size: 8, Ratio: c.ratio, Lat: 50 * time.Microsecond, LatInl: time.Duration(c.ratio.Med * 50 * float64(time.Microsecond)), Post: 3 * time.Microsecond, PostInl: 3 * time.Microsecond}}
			rec := &recorder{}
			if err := reportInline(rec, 64, rows, true, "EINVAL", true, true); err != nil {
				t.Fatal(err)
			}
			checkWorded(t, rec, c.want, "6.1", "0.80", "1.25")
			if v := rec.result(t).Messages; !strings.Contains(v["en"], c.words) {
				t.Errorf("verdict lacks %q: %s", c.words, v["en"])
			}
		})
	}
}

// fmtFig prints f with prec decimals, as verdicts derive ratios.
func fmtFig(f float64, prec int) string { return strconv.FormatFloat(f, 'f', prec, 64) }
