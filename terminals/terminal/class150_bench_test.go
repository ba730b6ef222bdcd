package terminal

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
)

// BenchmarkHundredFifty is issue 45's "150 learner guests open at once
// with a shell answering, under the memory this machine has": N learners
// (BENCH_GUESTS, 150) open their terminals through the domain's TermHost,
// each one's shell answers a command, and once all are open every one
// answers again (a paused one resumed by the keystroke); then the
// guests' memory from smaps_rollup: total PSS, per-guest PSS and USS.
// Before it, in the same run, BENCH_PRIVATE_GUESTS (8) guests that each
// hold all their RAM (vm.Config.PrivateRAM, as every guest did before
// the snapshot's RAM was shared) give the per-guest figures of "before":
// 150 of them would not fit, and the log says by how much.
//
// --terminals auto counts 1 % of a core per idle tab, on half of every
// core: 100 on 2 cores, whatever the memory; idle guests are paused
// (IdlePause, 20 s here), so this benchmark sets Max to N. Guests are
// opened while MemAvailable stays above BENCH_FLOOR_MIB (2048): a
// machine that holds fewer stops there and the report's row says how
// many it held.
func BenchmarkHundredFifty(b *testing.B) {
	n := envInt("BENCH_GUESTS", 150)
	nPrivate := envInt("BENCH_PRIVATE_GUESTS", 8)
	floor := int64(envInt("BENCH_FLOOR_MIB", 2048))
	cfg := testConfig(b)
	cfg.Accel = vm.AccelTCG
	cfg.Dir = vmtest.OwnCache(b)
	cfg.Logger = slog.New(slog.NewTextHandler(testWriter{T: b}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	total := memTotalMiB()
	for i := 0; i < b.N; i++ {
		size := AutoTerminals(1, true)
		b.Logf("memory: %d MiB in all, %d MiB available before; --terminals auto: %s", total, vm.MemAvailableMiB(), size)

		privCfg := cfg
		privCfg.PrivateRAM = true
		priv := openAtOnce(b, privCfg, nPrivate, floor)
		priv.close()
		shared := openAtOnce(b, cfg, n, floor)
		avail := vm.MemAvailableMiB()
		shared.close()
		if b.Failed() {
			b.FailNow()
		}

		// 150 guests that each hold all their RAM: the private guest's
		// median PSS each (nothing shared to divide).
		need := float64(n) * priv.medPSS
		b.ReportMetric(float64(shared.open), "guests")
		b.ReportMetric(shared.totalPSS, "total-pss-MiB")
		b.ReportMetric(shared.totalUSS, "total-uss-MiB")
		b.ReportMetric(shared.totalRSS, "total-rss-MiB")
		b.ReportMetric(shared.medPSS, "guest-pss-MiB")
		b.ReportMetric(shared.medUSS, "guest-uss-MiB")
		b.ReportMetric(float64(nPrivate), "private-guests")
		b.ReportMetric(priv.totalPSS, "private-total-pss-MiB")
		b.ReportMetric(priv.medPSS, "private-guest-pss-MiB")
		b.ReportMetric(priv.medUSS, "private-guest-uss-MiB")
		b.ReportMetric(need, "private-all-pss-MiB")
		b.ReportMetric(float64(total), "mem-total-MiB")
		b.ReportMetric(float64(shared.availBefore), "avail-before-MiB")
		b.ReportMetric(float64(avail), "avail-open-MiB")
		b.ReportMetric(shared.openLast, "open-last-s")
		b.ReportMetric(shared.again, "answer-all-s")
		b.Logf("%d guests sharing the snapshot's RAM, all open, every shell answering: total PSS %.0f MiB (USS %.0f, RSS %.0f); per guest PSS %.1f, USS %.1f MiB (medians); MemAvailable %d → %d MiB of %d",
			shared.open, shared.totalPSS, shared.totalUSS, shared.totalRSS, shared.medPSS, shared.medUSS, shared.availBefore, avail, total)
		b.Logf("before (each guest holds all its RAM), %d guests: per guest PSS %.1f, USS %.1f MiB (medians), total PSS %.0f MiB; %d of them: %d × %.1f = %.0f MiB, %s the %d MiB this machine has",
			nPrivate, priv.medPSS, priv.medUSS, priv.totalPSS, n, n, priv.medPSS, need, map[bool]string{true: "over", false: "within"}[need > float64(total)], total)
		if shared.open < n {
			b.Logf("only %d of %d guests opened before MemAvailable went under %d MiB", shared.open, n, floor)
		}
	}
}

// classMemory is what openAtOnce measured.
type classMemory struct {
	terms                        *Terminals
	conns                        []*classConn
	open                         int
	availBefore                  int64
	openLast, again              float64 // s: the last open → answer; every shell answering again
	totalPSS, totalUSS, totalRSS float64 // MiB
	medPSS, medUSS               float64
}

func (m *classMemory) close() {
	for _, c := range m.conns {
		if c != nil {
			c.conn.Detach()
		}
	}
	m.terms.Close()
}

// openAtOnce opens n learners' terminals on cfg's guests (restored on
// demand, no spares), each answering a command, while MemAvailable stays
// above floor MiB; then has every open one answer again and measures
// their QEMUs' memory.
func openAtOnce(b *testing.B, cfg vm.Config, n int, floor int64) *classMemory {
	ctx := context.Background()
	terms := &Terminals{Cfg: cfg, Max: n, QueueMax: n, Spares: -1, IdlePause: 20 * time.Second}
	host := terms.Host()
	m := &classMemory{terms: terms, availBefore: vm.MemAvailableMiB()}
	// The first boots and saves the snapshot.
	a, err := host.Attach(ctx, "warm-up", 24, 80, nil)
	if err != nil {
		b.Fatal(err)
	}
	a.Detach()
	terms.Discard("warm-up")
	m.availBefore = vm.MemAvailableMiB()

	conns := make([]*classConn, n)
	opens := make([]float64, n)
	var mu sync.Mutex
	stopped := false
	var wg sync.WaitGroup
	slots := make(chan struct{}, 4) // attaches in flight; the guests restore StartsAtOnce at a time
	begin := time.Now()
	for j := range n {
		slots <- struct{}{}
		mu.Lock()
		if !stopped && vm.MemAvailableMiB() < floor {
			stopped = true
		}
		stop := stopped
		mu.Unlock()
		if stop {
			<-slots
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			start := time.Now()
			cc, err := openAnswering(ctx, host, fmt.Sprintf("learner-%d", j), 5*time.Minute)
			conns[j] = cc
			if err != nil {
				b.Errorf("learner %d: %v", j, err)
				return
			}
			opens[j] = time.Since(start).Seconds()
		}()
	}
	wg.Wait()
	m.conns = conns
	for _, c := range conns {
		if c != nil {
			m.open++
		}
	}
	b.Logf("%d guests (private RAM %v) open within %s", m.open, cfg.PrivateRAM, time.Since(begin).Round(time.Second))
	if b.Failed() {
		m.close()
		b.FailNow()
	}
	m.openLast = slices.Max(opens)

	// All open: every shell answers again, 8 at a time (most resume
	// from their idle pause for it).
	again := time.Now()
	var wg2 sync.WaitGroup
	sem := make(chan struct{}, 8)
	for j, c := range conns[:m.open] {
		wg2.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg2.Done()
			defer func() { <-sem }()
			c.reset()
			if err := c.conn.Write([]byte("echo again-$((3+3))\n")); err != nil {
				b.Errorf("learner %d: %v", j, err)
				return
			}
			if err := c.await("again-6\r\n", 5*time.Minute); err != nil {
				b.Errorf("learner %d, all open: %v", j, err)
			}
		}()
	}
	wg2.Wait()
	m.again = time.Since(again).Seconds()
	b.Logf("all %d shells answered again in %.1f s", m.open, m.again)

	var pss, uss []float64
	for _, c := range conns[:m.open] {
		mem, err := vm.ProcessMemory(c.conn.(*Attachment).GuestPID())
		if err != nil {
			b.Errorf("memory: %v", err)
			continue
		}
		pss = append(pss, float64(mem.PSS)/(1<<20))
		uss = append(uss, float64(mem.USS)/(1<<20))
		m.totalPSS += float64(mem.PSS) / (1 << 20)
		m.totalUSS += float64(mem.USS) / (1 << 20)
		m.totalRSS += float64(mem.RSS) / (1 << 20)
	}
	if len(pss) == 0 {
		m.close()
		b.Fatal("no guest's memory read")
	}
	slices.Sort(pss)
	slices.Sort(uss)
	m.medPSS, m.medUSS = median(pss), median(uss)
	return m
}

// memTotalMiB is MemTotal of /proc/meminfo in MiB (0 if unknown).
func memTotalMiB() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb / 1024
		}
	}
	return 0
}
