package terminal

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vm"

	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
)

// BenchmarkTerminalClass is a class opening its terminals at once (issue
// 31): 20 learners press Open within a moment on a lab with serve's
// default settings (--terminals auto, --spares auto: paused spares for a
// class of 20, within free memory); each one's time from Attach to their
// shell answering a first command, p50/p95/last. The spares are warm
// before they press (a lab that has been up a while); the memory each
// paused spare's QEMU holds is reported too. BENCH_SPARES=1 measures the
// lab as it was before (one spare, the rest restored on demand).
func BenchmarkTerminalClass(b *testing.B) {
	const class = 20
	cfg := testConfig(b)
	cfg.Accel = vm.AccelTCG
	cfg.Dir = vmtest.OwnCache(b)
	cfg.Logger = slog.New(slog.NewTextHandler(testWriter{T: b}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	spares := class // serve's --spares auto
	if n, err := strconv.Atoi(os.Getenv("BENCH_SPARES")); err == nil {
		spares = n
	}
	ctx := context.Background()
	var all, rss []float64
	for i := 0; i < b.N; i++ {
		size := AutoTerminals(1, true)
		terms := &Terminals{Cfg: cfg, Max: size.Max, Spares: spares, Room: AutoRoom(1, true)}
		a, err := terms.Attach(ctx, "warm-up", 24, 80) // boots, snapshots, starts the spares
		if err != nil {
			b.Fatal(err)
		}
		a.Detach()
		terms.Discard("warm-up")
		warm := time.Now()
		st := sparesWarm(terms)
		b.Logf("--terminals auto: %s; spares: %+v warm in %s", size, st, time.Since(warm).Round(time.Second))
		terms.mu.Lock()
		for _, s := range terms.spares {
			if n := vm.ProcessRSS(s.backend.GuestPID()); n > 0 {
				rss = append(rss, float64(n)/(1<<20))
			}
		}
		terms.mu.Unlock()
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
	if len(rss) > 0 {
		b.ReportMetric(median(rss), "spare-rss-MiB")
		b.Logf("paused spare QEMU resident memory (MiB): %v", round3(rss))
	}
	slices.Sort(all)
	p95 := all[min(len(all)-1, (len(all)*95+99)/100-1)]
	b.ReportMetric(median(all), "p50-s")
	b.ReportMetric(p95, "p95-s")
	b.ReportMetric(all[len(all)-1], "last-s")
	b.ReportMetric(all[0], "first-s")
	b.Logf("%d terminals opened at once (TCG): %v s", class, round3(all))
}

// sparesWarm waits until the spares reach their target and none is
// restoring.
func sparesWarm(t *Terminals) SpareStats {
	for {
		st := t.SpareStats()
		if st.Ready >= st.Target && st.Starting == 0 {
			return st
		}
		time.Sleep(50 * time.Millisecond)
	}
}
