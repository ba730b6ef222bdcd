package vm

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkSharedRAM is what N learner guests (1 vCPU, 256 MiB, TCG)
// restored from one snapshot cost in memory, each holding all of its RAM
// (PrivateRAM, as before issue 45) vs sharing the snapshot's RAM file
// copy-on-write, in the same run: the guests' total PSS (what they hold
// together, the shared pages counted once), per-guest PSS and USS (what
// stopping one frees), after the restore and after a shell command ran in
// every guest, and the restore time. N is $LAB_BENCH_GUESTS (4).
func BenchmarkSharedRAM(b *testing.B) {
	n := 4
	if v, err := strconv.Atoi(os.Getenv("LAB_BENCH_GUESTS")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	b.ReportMetric(float64(n), "guests")
	for i := 0; i < b.N; i++ {
		for _, mode := range []struct {
			name    string
			private bool
		}{{"private", true}, {"shared", false}} {
			cfg := testConfig(b)
			cfg.Dir = ownCache(b)
			cfg.Accel = AccelTCG
			cfg.CPUs = 1
			cfg.PrivateRAM = mode.private
			// The first Restore boots and saves the snapshot; its guest is
			// not measured, so that every measured guest starts alike.
			first, err := Restore(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			first.Stop()
			var gs []*Guest
			var restore []float64
			for range n {
				g, err := Restore(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(g.Stop)
				gs = append(gs, g)
				restore = append(restore, g.Ready.Sub(g.Started).Seconds())
			}
			measure := func(when string) {
				time.Sleep(2 * time.Second) // idle, as between keystrokes
				var total, pss, uss, rss float64
				for _, g := range gs {
					m, err := g.Memory()
					if err != nil {
						b.Fatal(err)
					}
					total += float64(m.PSS) / (1 << 20)
					pss = max(pss, float64(m.PSS)/(1<<20))
					uss = max(uss, float64(m.USS)/(1<<20))
					rss = max(rss, float64(m.RSS)/(1<<20))
				}
				unit := func(what string) string { return mode.name + "-" + when + "-" + what }
				b.ReportMetric(total, unit("total-pss-MiB"))
				b.ReportMetric(total/float64(n), unit("pss-MiB"))
				b.ReportMetric(uss, unit("uss-MiB"))
				b.ReportMetric(rss, unit("rss-MiB"))
				b.Logf("%s, %s, %d guests: total PSS %.0f MiB, per guest PSS %.0f MiB, largest USS %.0f MiB, largest RSS %.0f MiB",
					mode.name, when, n, total, total/float64(n), uss, rss)
			}
			measure("restored")
			for _, g := range gs {
				if out, err := guestSh(ctx, g, "ls -laR /usr > /dev/null 2>&1; head -c 1048576 /dev/urandom > /run/bench; echo done"); err != nil {
					b.Fatalf("shell in a guest: %q %v", out, err)
				}
			}
			measure("shell")
			b.ReportMetric(median(restore), mode.name+"-restore-s")
			b.Logf("%s: restores %v s", mode.name, round3(restore))
			for _, g := range gs {
				g.Stop()
			}
		}
	}
}
