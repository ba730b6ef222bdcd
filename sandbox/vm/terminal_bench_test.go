package vm

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
)

// BenchmarkTerminal is what a learner's terminal costs under TCG: open →
// shell prompt (p50 and p95 of 12 learners, the snapshot in the cache
// already: a warm pool), and one idle learner guest's QEMU: resident
// memory and CPU (% of one host core over idleSample) with a tab attached
// and with none.
func BenchmarkTerminal(b *testing.B) {
	cfg := testConfig(b)
	cfg.Accel = AccelTCG
	cfg.Dir = ownCache(b)
	terms := &Terminals{Cfg: cfg, Max: 1}
	defer terms.Close()
	ctx := context.Background()
	open := func(learner string) (time.Duration, *Attachment) {
		start := time.Now()
		a, err := terms.Attach(ctx, learner, 24, 80)
		if err != nil {
			b.Fatal(err)
		}
		readUntil(b, a, "root@rdmalab-guest")
		return time.Since(start), a
	}
	// The first learner's guest boots and saves the snapshot.
	d, a := open("warm-up")
	b.Logf("first terminal (boot + snapshot): %s", d.Round(time.Millisecond))
	a.Detach()
	terms.Discard("warm-up")

	var opens []float64
	for i := 0; i < b.N; i++ {
		for j := range 12 {
			learner := fmt.Sprintf("learner-%d-%d", i, j)
			d, a := open(learner)
			opens = append(opens, d.Seconds())
			a.Detach()
			terms.Discard(learner)
		}
	}
	slices.Sort(opens)
	p50, p95 := median(opens), opens[min(len(opens)-1, (len(opens)*95+99)/100-1)]

	// One idle learner: a tab attached, then none.
	_, a = open("idle")
	pid := a.GuestPID()
	time.Sleep(5 * time.Second) // the shell's start settles
	attached := cpuShare(b, pid, idleSample)
	rss := float64(processRSS(pid)) / (1 << 20)
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

	b.ReportMetric(p50, "open-p50-s")
	b.ReportMetric(p95, "open-p95-s")
	b.ReportMetric(rss, "idle-rss-MiB")
	b.ReportMetric(float64(cfg.withDefaults().MemoryMiB), "guest-MiB")
	b.ReportMetric(attached, "idle-cpu-%")
	b.ReportMetric(detached, "detached-cpu-%")
	b.ReportMetric(back.Seconds(), "reattach-s")
	b.Logf("TCG terminal open → prompt %v s: p50 %.3f s, p95 %.3f s; idle learner guest %.0f MiB resident, %.2f %% of a core attached, %.2f %% detached (%s samples); re-attach → echo %s",
		round3(opens), p50, p95, rss, attached, detached, idleSample, back.Round(time.Millisecond))
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
