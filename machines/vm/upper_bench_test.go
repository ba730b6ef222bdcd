package vm

import (
	"context"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// BenchmarkUpperFirstRun is lesson 08's ucx-perf (its shortest settings)
// in a guest just restored from the snapshot — the first run pays the
// on-demand disk's mount and its cold reads (vmimage/disk.go) — and again
// in the same guest, median of 3 guests, with the guest's resident memory
// after the two runs.
func BenchmarkUpperFirstRun(b *testing.B) {
	cfg := testConfig(b)
	cfg.Accel = AccelTCG
	cfg.Dir = ownCache(b)
	req := sandbox.Request{Experiment: "ucx-perf", Params: sandbox.Params{"gid": "0", "iterations": 50}}
	var first, second, rss []float64
	run := func(g *Guest) float64 {
		begin := time.Now()
		var failed string
		err := g.Run(context.Background(), sandbox.NewSession(req, nil, func(ev sandbox.Event) {
			if ev.Type == sandbox.EvError || (ev.Type == sandbox.EvStatus && ev.Status.Final() && ev.Status != sandbox.StatusDone) {
				failed += " " + ev.Message
			}
		}))
		if err != nil || failed != "" {
			b.Fatalf("ucx-perf: %v %s", err, failed)
		}
		return time.Since(begin).Seconds()
	}
	for i := 0; i < b.N; i++ {
		for range 3 {
			g, err := Restore(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			first = append(first, run(g))
			second = append(second, run(g))
			rss = append(rss, float64(ProcessRSS(g.PID()))/(1<<20))
			g.Stop()
		}
	}
	b.ReportMetric(median(first), "first-run-s")
	b.ReportMetric(median(second), "second-run-s")
	b.ReportMetric(median(rss), "rss-after-MiB")
	b.Logf("ucx-perf after a restore: first %v s, second %v s; QEMU RSS after both %v MiB", round3(first), round3(second), round3(rss))
}
