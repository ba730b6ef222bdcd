package terminal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vm"

	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
)

// BenchmarkTerminal is what a learner's terminal costs under TCG: open →
// the shell answers a first command (p50 and p95 of 12 learners a restore
// apart, the snapshot in the cache), with a paused spare guest (the
// default) against a guest restored on demand (Spares -1); and one idle
// learner guest's QEMU: resident memory and CPU (% of one host core over
// idleSample) with a tab attached and with none (paused).
func BenchmarkTerminal(b *testing.B) {
	cfg := testConfig(b)
	cfg.Accel = vm.AccelTCG
	cfg.Dir = vmtest.OwnCache(b)
	cfg.Logger = nil // the guests' state lines would drown the summary
	ctx := context.Background()
	open := func(terms *Terminals, learner string) (time.Duration, *Attachment) {
		start := time.Now()
		a, err := terms.Attach(ctx, learner, 24, 80)
		if err != nil {
			b.Fatal(err)
		}
		readUntil(b, a, "learner@rdmalab-guest")
		if err := a.Write([]byte("echo ok-$((2+2))\n")); err != nil {
			b.Fatal(err)
		}
		readUntil(b, a, "ok-4\r\n")
		return time.Since(start), a
	}
	opens := func(terms *Terminals, spare bool) []float64 {
		var ds []float64
		for i := 0; i < b.N; i++ {
			for j := range 12 {
				learner := fmt.Sprintf("learner-%d-%d", i, j)
				if spare {
					spareReady(terms) // learners a restore apart: the pool is warm
				}
				d, a := open(terms, learner)
				ds = append(ds, d.Seconds())
				a.Detach()
				terms.Discard(learner)
			}
		}
		slices.Sort(ds)
		return ds
	}
	p95 := func(xs []float64) float64 { return xs[min(len(xs)-1, (len(xs)*95+99)/100-1)] }

	// On demand: the first learner's guest boots and saves the snapshot.
	cold := &Terminals{Cfg: cfg, Max: 1, Spares: -1}
	d, a := open(cold, "warm-up")
	b.Logf("first terminal (boot + snapshot): %s", d.Round(time.Millisecond))
	a.Detach()
	cold.Discard("warm-up")
	restored := opens(cold, false)
	cold.Close()

	// IdlePause off: the idle guest with its tab attached is sampled
	// running (what it costs before --idle-pause pauses it).
	terms := &Terminals{Cfg: cfg, Max: 1, IdlePause: -1}
	defer terms.Close()
	_, a = open(terms, "warm-up") // starts the spare
	a.Detach()
	terms.Discard("warm-up")
	spared := opens(terms, true)

	// One idle learner: a tab attached, then none.
	_, a = open(terms, "idle")
	pid := a.GuestPID()
	time.Sleep(5 * time.Second) // the shell's start settles
	attached := cpuShare(b, pid, idleSample)
	rss := float64(vm.ProcessRSS(pid)) / (1 << 20)
	a.Detach()
	time.Sleep(time.Second)
	detached := cpuShare(b, pid, idleSample)
	// The tab comes back: the same shell answers.
	start := time.Now()
	a2, err := terms.Attach(ctx, "idle", 24, 80)
	if err != nil {
		b.Fatal(err)
	}
	_ = a2.Write([]byte("echo back-$((4*4))\n"))
	readUntil(b, a2, "back-16")
	back := time.Since(start)

	b.ReportMetric(median(spared), "open-p50-s")
	b.ReportMetric(p95(spared), "open-p95-s")
	b.ReportMetric(median(restored), "restore-p50-s")
	b.ReportMetric(p95(restored), "restore-p95-s")
	b.ReportMetric(rss, "idle-rss-MiB")
	b.ReportMetric(float64(cfg.WithDefaults().MemoryMiB), "guest-MiB")
	b.ReportMetric(attached, "idle-cpu-%")
	b.ReportMetric(detached, "detached-cpu-%")
	b.ReportMetric(back.Seconds(), "reattach-s")
	b.Logf("TCG terminal open → first command answered: spare %v s (p50 %.3f, p95 %.3f); restored on demand %v s (p50 %.3f, p95 %.3f)",
		round3(spared), median(spared), p95(spared), round3(restored), median(restored), p95(restored))
	b.Logf("idle learner guest %.0f MiB resident, %.2f %% of a core attached, %.2f %% with no tab (paused) (%s samples); re-attach → echo %s",
		rss, attached, detached, idleSample, back.Round(time.Millisecond))
}

// idleSample is how long an idle guest's CPU is sampled.
const idleSample = 30 * time.Second

// cpuShare is the CPU pid uses over d, in % of one core.
func cpuShare(b *testing.B, pid int, d time.Duration) float64 {
	t0, c0 := time.Now(), cpuTicks(b, pid)
	time.Sleep(d)
	t1, c1 := time.Now(), cpuTicks(b, pid)
	return float64(c1-c0) / 100 / t1.Sub(t0).Seconds() * 100 // USER_HZ is 100 on Linux
}

// cpuTicks is utime + stime of pid (fields 14 and 15 of /proc/PID/stat).
func cpuTicks(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// spareReady waits until the terminals' spare guest is ready and paused.
func spareReady(t *Terminals) {
	for {
		t.mu.Lock()
		ready := len(t.spares) > 0 && t.spares[0].backend.Paused()
		t.mu.Unlock()
		if ready {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
