package vm

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkTerminalClass is a class opening its terminals at once (issue
// 31): 20 learners press Open within a moment on a lab with 20 terminals
// and the default spare; each one's time from Attach to their shell
// answering a first command, p50/p95/last. The snapshot and the spare are
// ready before they press (a lab that has been up a while).
func BenchmarkTerminalClass(b *testing.B) {
	const class = 20
	cfg := testConfig(b)
	cfg.Accel = AccelTCG
	cfg.Dir = ownCache(b)
	cfg.Logger = slog.New(slog.NewTextHandler(testWriter{b}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx := context.Background()
	var all []float64
	for i := 0; i < b.N; i++ {
		terms := &Terminals{Cfg: cfg, Max: class}
		a, err := terms.Attach(ctx, "warm-up", 24, 80) // boots, snapshots, starts the spare
		if err != nil {
			b.Fatal(err)
		}
		a.Detach()
		terms.Discard("warm-up")
		spareReady(terms)
		ds := make([]float64, class)
		var wg sync.WaitGroup
		for j := range class {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				a, err := terms.Attach(ctx, fmt.Sprintf("learner-%d", j), 24, 80)
				if err != nil {
					b.Error(err)
					return
				}
				if err := a.Write([]byte("echo ok-$((2+2))\n")); err != nil {
					b.Error(err)
					return
				}
				var got []byte
				got = append(got, a.Scrollback...)
				for !bytes.Contains(got, []byte("ok-4\r\n")) {
					out, open := <-a.Out
					if !open {
						b.Errorf("learner %d: the terminal ended before answering: %q", j, got)
						return
					}
					got = append(got, out...)
				}
				ds[j] = time.Since(start).Seconds()
			}()
		}
		wg.Wait()
		terms.Close()
		if b.Failed() {
			b.FailNow()
		}
		all = append(all, ds...)
	}
	slices.Sort(all)
	p95 := all[min(len(all)-1, (len(all)*95+99)/100-1)]
	b.ReportMetric(median(all), "p50-s")
	b.ReportMetric(p95, "p95-s")
	b.ReportMetric(all[len(all)-1], "last-s")
	b.ReportMetric(all[0], "first-s")
	b.Logf("%d terminals opened at once (TCG): %v s", class, round3(all))
}
