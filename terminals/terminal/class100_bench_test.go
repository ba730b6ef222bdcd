package terminal

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
)

// BenchmarkClassOfHundred is a class of a hundred (issue 45): N learners
// (BENCH_CLASS, 100) open their terminals at random moments within a
// window (BENCH_CLASS_WINDOW, 60 s) through the domain's TermHost, the
// door the web terminal and fleet's placement use, on serve's sizing
// (--terminals auto, --spares as large as the class); each one's open →
// first command answered is timed. Then, all of them open, BENCH_TYPING
// (10) of them type a keystroke every 150 ms and each keystroke's echo is
// timed, while the others' idle guests' CPU is read from /proc/PID/stat:
// first with every guest running, as the lab was before it paused idle
// guests with their tab open, then again once they were paused
// (IdlePause, the window and 30 s here so that none pauses before the
// first round; serve's is shorter). The memory of the N guests, from
// smaps_rollup: total PSS, per-guest PSS, USS and RSS.
func BenchmarkClassOfHundred(b *testing.B) {
	class := envInt("BENCH_CLASS", 100)
	typing := min(envInt("BENCH_TYPING", 10), class)
	window := 60 * time.Second
	if d, err := time.ParseDuration(os.Getenv("BENCH_CLASS_WINDOW")); err == nil {
		window = d
	}
	cfg := testConfig(b)
	cfg.Accel = vm.AccelTCG
	cfg.Dir = vmtest.OwnCache(b)
	cfg.Logger = slog.New(slog.NewTextHandler(testWriter{T: b}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		size := AutoTerminals(1, true)
		if size.Max < class {
			// A smaller machine measures the class it holds; the
			// report's row names the class's size.
			b.Logf("--terminals auto gives %d here, fewer than the class of %d: the class is %d (%s)", size.Max, class, size.Max, size)
			class, typing = size.Max, min(typing, size.Max)
		}
		terms := &Terminals{Cfg: cfg, Max: size.Max, Spares: class, Room: AutoRoom(1, true), IdlePause: window + 30*time.Second}
		host := terms.Host()
		a, err := host.Attach(ctx, "warm-up", 24, 80, nil) // boots, snapshots, starts the spares
		if err != nil {
			b.Fatal(err)
		}
		a.Detach()
		terms.Discard("warm-up")
		warm := time.Now()
		st := sparesWarm(terms)
		b.Logf("--terminals auto: %s; spares %+v warm in %s", size, st, time.Since(warm).Round(time.Second))
		if st.Ready < class {
			b.Logf("only %d spares for a class of %d: memory (Room) held no more", st.Ready, class)
		}

		// The class comes in.
		opens := make([]float64, class)
		conns := make([]*classConn, class)
		var wg sync.WaitGroup
		begin := time.Now()
		for j := range class {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(rand.Int64N(int64(window))))
				start := time.Now()
				cc, err := openAnswering(ctx, host, fmt.Sprintf("learner-%d", j), 2*time.Minute)
				conns[j] = cc
				if err != nil {
					b.Errorf("learner %d: %v", j, err)
					return
				}
				opens[j] = time.Since(start).Seconds()
			}()
		}
		wg.Wait()
		b.Logf("%d learners in within %s (window %s)", class, time.Since(begin).Round(time.Second), window)
		if b.Failed() {
			terms.Close()
			b.FailNow()
		}

		// Memory of the class's guests.
		var pss, uss, rss []float64
		var totalPSS, totalUSS, totalRSS float64
		pids := make([]int, class)
		for j, c := range conns {
			pids[j] = c.conn.(*Attachment).GuestPID()
			m, err := vm.ProcessMemory(pids[j])
			if err != nil {
				b.Fatal(err)
			}
			pss = append(pss, float64(m.PSS)/(1<<20))
			uss = append(uss, float64(m.USS)/(1<<20))
			rss = append(rss, float64(m.RSS)/(1<<20))
			totalPSS += float64(m.PSS) / (1 << 20)
			totalUSS += float64(m.USS) / (1 << 20)
			totalRSS += float64(m.RSS) / (1 << 20)
		}

		// typing of them type; the others sit idle, tabs open: running,
		// then paused.
		running, runningCPU := typeRound(b, conns[:typing], pids[typing:])
		deadline := time.Now().Add(terms.IdlePause + 2*time.Minute)
		for terms.IdleStats().Paused < class && time.Now().Before(deadline) {
			time.Sleep(time.Second)
		}
		idle := terms.IdleStats()
		b.Logf("idle guests paused: %+v", idle)
		paused, pausedCPU := typeRound(b, conns[:typing], pids[typing:])
		resumed := terms.IdleStats()
		for _, c := range conns {
			c.conn.Detach()
		}
		terms.Close()
		if b.Failed() {
			b.FailNow()
		}

		slices.Sort(opens)
		b.ReportMetric(float64(class), "learners")
		b.ReportMetric(median(opens), "open-p50-s")
		b.ReportMetric(p95(opens), "open-p95-s")
		b.ReportMetric(opens[len(opens)-1], "open-last-s")
		b.ReportMetric(median(paused)*1000, "echo-p50-ms")
		b.ReportMetric(p95(paused)*1000, "echo-p95-ms")
		b.ReportMetric(median(running)*1000, "echo-running-p50-ms")
		b.ReportMetric(p95(running)*1000, "echo-running-p95-ms")
		b.ReportMetric(float64(idle.Paused), "idle-paused")
		b.ReportMetric(float64(resumed.Longest)/float64(time.Millisecond), "resume-max-ms")
		b.ReportMetric(totalPSS, "total-pss-MiB")
		b.ReportMetric(totalUSS, "total-uss-MiB")
		b.ReportMetric(totalRSS, "total-rss-MiB")
		b.ReportMetric(median(pss), "guest-pss-MiB")
		b.ReportMetric(median(uss), "guest-uss-MiB")
		b.ReportMetric(median(rss), "guest-rss-MiB")
		b.ReportMetric(runningCPU, "idle-cpu-pct")
		b.ReportMetric(pausedCPU, "paused-cpu-pct")
		b.Logf("open → answer (s): %v", round3(opens))
		b.Logf("keystroke → echo, %d typing with %d open (ms): running p50 %.1f p95 %.1f max %.1f of %d; the idle ones paused p50 %.1f p95 %.1f max %.1f of %d",
			typing, class, median(running)*1000, p95(running)*1000, running[len(running)-1]*1000, len(running),
			median(paused)*1000, p95(paused)*1000, paused[len(paused)-1]*1000, len(paused))
		b.Logf("memory of %d guests: total PSS %.0f MiB, USS %.0f MiB; per guest PSS %.1f, USS %.1f, RSS %.1f MiB (medians)",
			class, totalPSS, totalUSS, median(pss), median(uss), median(rss))
		b.Logf("idle guests (tabs open): %.2f %% of a core each running, %.2f %% paused; resume for idleness: last %s, longest %s",
			runningCPU, pausedCPU, resumed.Resume, resumed.Longest)
	}
}

// typeRound has each of typers type 40 keystrokes, one every 150 ms, and
// returns each keystroke's time to its echo (s, sorted) and the CPU the
// idle guests (pids) used meanwhile, in % of a core each.
func typeRound(b *testing.B, typers []*classConn, idle []int) ([]float64, float64) {
	cpu0 := make([]time.Duration, len(idle))
	for j, pid := range idle {
		cpu0[j] = vm.ProcessCPU(pid)
	}
	from := time.Now()
	const keys = 40
	echoes := make([][]float64, len(typers))
	var wg sync.WaitGroup
	for j, c := range typers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				key := string(rune('a' + k%26))
				c.reset()
				start := time.Now()
				if err := c.conn.Write([]byte(key)); err != nil {
					b.Errorf("typer %d: %v", j, err)
					return
				}
				if err := c.await(key, 30*time.Second); err != nil {
					b.Errorf("typer %d, keystroke %d: %v", j, k, err)
					return
				}
				echoes[j] = append(echoes[j], time.Since(start).Seconds())
				time.Sleep(150 * time.Millisecond)
			}
			_ = c.conn.Write([]byte{0x15}) // ^U: the line typed is dropped
		}()
	}
	wg.Wait()
	took := time.Since(from)
	var used time.Duration
	for j, pid := range idle {
		used += vm.ProcessCPU(pid) - cpu0[j]
	}
	all := slices.Concat(echoes...)
	if len(all) == 0 {
		b.Fatal("no keystroke echoed")
	}
	slices.Sort(all)
	return all, 100 * float64(used) / float64(took) / float64(max(len(idle), 1))
}

// classConn reads one learner's terminal output into a buffer.
type classConn struct {
	conn rdmalab.TermConn
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{} // closed and replaced when output comes
	done bool
}

// openAnswering attaches learner's terminal through host and waits up to
// wait for its shell to answer a command; the connection is returned
// once attached, so a caller can close it whatever followed.
func openAnswering(ctx context.Context, host rdmalab.TermHost, learner string, wait time.Duration) (*classConn, error) {
	c, err := host.Attach(ctx, learner, 24, 80, nil)
	if err != nil {
		return nil, err
	}
	cc := newClassConn(c)
	if err := c.Write([]byte("echo ok-$((2+2))\n")); err != nil {
		return cc, err
	}
	return cc, cc.await("ok-4\r\n", wait)
}

func newClassConn(c rdmalab.TermConn) *classConn {
	cc := &classConn{conn: c, more: make(chan struct{})}
	cc.buf.Write(c.Recent())
	go func() {
		for out := range c.Output() {
			cc.mu.Lock()
			cc.buf.Write(out)
			close(cc.more)
			cc.more = make(chan struct{})
			cc.mu.Unlock()
		}
		cc.mu.Lock()
		cc.done = true
		close(cc.more)
		cc.mu.Unlock()
	}()
	return cc
}

// reset forgets the output so far.
func (c *classConn) reset() {
	c.mu.Lock()
	c.buf.Reset()
	c.mu.Unlock()
}

// await waits until the output holds want.
func (c *classConn) await(want string, limit time.Duration) error {
	deadline := time.After(limit)
	for {
		c.mu.Lock()
		has, done, more := bytes.Contains(c.buf.Bytes(), []byte(want)), c.done, c.more
		got := c.buf.String()
		c.mu.Unlock()
		if has {
			return nil
		}
		if done {
			return fmt.Errorf("the terminal ended before %q: %q", want, got)
		}
		select {
		case <-more:
		case <-deadline:
			return fmt.Errorf("no %q in %s: %q", want, limit, got)
		}
	}
}

// p95 is the 95th percentile of sorted xs (nearest rank).
func p95(xs []float64) float64 { return xs[min(len(xs)-1, (len(xs)*95+99)/100-1)] }

// envInt is the environment's key as a number, else def.
func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil && n > 0 {
		return n
	}
	return def
}
