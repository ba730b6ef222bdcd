package vm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/agentproc"
	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/runs/fleet"
	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/hostexp"
	"github.com/rdmalab/rdmalab/sandbox/rdmaexp"
)

// BenchmarkRestore is a guest restored from its snapshot → agent ready,
// median of 3, against a cold boot → agent ready (median of 3) as the
// baseline, with the resident memory of an idle guest of each kind.
func BenchmarkRestore(b *testing.B) {
	cfg := testConfig(b)
	cfg.Accel = AccelTCG
	dir, err := os.MkdirTemp("", "rdmalab-restore-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	linkImage(b, dir)
	cfg.Dir = dir
	im := mustImageB(b, dir)
	var cold, warm, coldRSS, warmRSS []float64
	idleRSS := func(g *Guest) float64 {
		time.Sleep(2 * time.Second) // idle, as between runs
		return float64(ProcessRSS(g.PID())) / (1 << 20)
	}
	for i := 0; i < b.N; i++ {
		for range 3 {
			g, err := StartGuest(context.Background(), cfg, im, AccelTCG, false)
			if err != nil {
				b.Fatal(err)
			}
			cold = append(cold, g.Ready.Sub(g.Started).Seconds())
			coldRSS = append(coldRSS, idleRSS(g))
			g.Stop()
			r, err := Restore(context.Background(), cfg) // the first one also saves the snapshot
			if err != nil {
				b.Fatal(err)
			}
			warm = append(warm, r.Ready.Sub(r.Started).Seconds())
			warmRSS = append(warmRSS, idleRSS(r))
			r.Stop()
		}
	}
	cm, wm := median(cold), median(warm)
	b.ReportMetric(wm, "restore-s")
	b.ReportMetric(cm, "boot-s")
	b.ReportMetric(cm/wm, "boot/restore")
	b.ReportMetric(median(coldRSS), "booted-rss-MiB")
	b.ReportMetric(median(warmRSS), "restored-rss-MiB")
	b.Logf("TCG: cold boot %v s, restore %v s; idle QEMU RSS booted %v MiB, restored %v MiB",
		round3(cold), round3(warm), round3(coldRSS), round3(warmRSS))
}

func mustImageB(b *testing.B, dir string) *vmimage.Image {
	im, err := vmimage.LoadImage(dir)
	if err != nil {
		b.Fatal(err)
	}
	return im
}

// burstSink counts final statuses and keeps each run's result figures.
type burstSink struct {
	mu      sync.Mutex
	final   map[string]sandbox.Status
	figures map[string]map[string]float64
	done    chan struct{}
	want    int
}

func (s *burstSink) RunEvent(id string, ev sandbox.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.Type == sandbox.EvResult && ev.Figures != nil {
		s.figures[id] = ev.Figures
	}
	if ev.Type == sandbox.EvStatus && ev.Status.Final() {
		s.final[id] = ev.Status
		if len(s.final) == s.want {
			close(s.done)
		}
	}
}

// burstRun is one learner's submission.
type burstRun struct {
	exp    string
	params map[string]any
}

// burst is 60 learners: 57 shareable runs (reg-mr, rkey, qp-states in the
// guests; memlock on the host) and three timing ones (perftest and
// pingpong in a guest, tcp-cost on the host).
func burst() []burstRun {
	share := []burstRun{{"reg-mr", nil}, {"rkey", nil}, {"qp-states", nil}, {"memlock", nil}}
	var out []burstRun
	for i := range 57 {
		out = append(out, share[i%len(share)])
		switch i {
		case 10:
			out = append(out, burstRun{"perftest", map[string]any{"test": "write", "size": 2, "iterations": 1000}})
		case 30:
			out = append(out, burstRun{"pingpong", map[string]any{"transport": "write", "mode": "poll", "iterations": 1000, "max_size": 2}})
		case 50:
			out = append(out, burstRun{"tcp-cost", map[string]any{"seconds": 1}})
		}
	}
	return out
}

// runBurst submits runs for as many learners through a runner over the
// given backends and returns the time until the last one ended.
func runBurst(b *testing.B, rdma sandbox.Backend, host sandbox.Backend, concurrency int, hostSlots int, runs []burstRun) (time.Duration, *burstSink, []string) {
	reg := sandbox.NewRegistry()
	hostexp.Register(reg)
	rdmaexp.Register(reg)
	sink := &burstSink{final: map[string]sandbox.Status{}, figures: map[string]map[string]float64{}, done: make(chan struct{}), want: len(runs)}
	r := runner.New(runner.Config{
		Registry: reg, Sink: sink, Concurrency: concurrency, QueueMax: len(runs),
		Backend: func(n sandbox.Need) sandbox.Backend {
			if n == sandbox.NeedRDMA {
				return rdma
			}
			return host
		},
		Slots: func(be sandbox.Backend) int {
			if s, ok := be.(sandbox.Slotted); ok {
				return s.Slots()
			}
			if be == host {
				return hostSlots
			}
			return 1
		},
	})
	defer r.Close()
	begin := time.Now()
	var ids []string
	for i, run := range runs {
		info, err := r.Submit(fmt.Sprint("learner", i), run.exp, run.params)
		if err != nil {
			b.Fatalf("submit %s: %v", run.exp, err)
		}
		ids = append(ids, info.ID)
	}
	<-sink.done
	return time.Since(begin), sink, ids
}

// fidelity is pingpong's one-way median over perftest's typical latency
// among the burst's results (0 if either is missing).
func fidelity(s *burstSink, ids []string, runs []burstRun) float64 {
	pp, pt := latencies(s, ids, runs)
	if pp == 0 || pt == 0 {
		return 0
	}
	return pp / pt
}

// latencies are pingpong's one-way median and perftest's typical latency
// in µs among the burst's results (the last of each; 0 if missing).
func latencies(s *burstSink, ids []string, runs []burstRun) (pp, pt float64) {
	for i, id := range ids {
		switch runs[i].exp {
		case "pingpong":
			pp = s.figures[id]["median_us"] / 2
		case "perftest":
			pt = s.figures[id]["typical_us"]
		}
	}
	return pp, pt
}

// bestFidelity is the best pingpong over the best perftest among runs.
func bestFidelity(s *burstSink, ids []string, runs []burstRun) float64 {
	var pp, pt float64
	for i, id := range ids {
		switch runs[i].exp {
		case "pingpong":
			if v := s.figures[id]["median_us"] / 2; v > 0 && (pp == 0 || v < pp) {
				pp = v
			}
		case "perftest":
			if v := s.figures[id]["typical_us"]; v > 0 && (pt == 0 || v < pt) {
				pt = v
			}
		}
	}
	if pp == 0 || pt == 0 {
		return 0
	}
	return pp / pt
}

// BenchmarkBurst is a class pressing Run within the same moment: 60
// learners (57 shareable runs, 3 timing ones) drained by today's single
// queue (one run at a time, one guest) against the default scheduling
// (DefaultGuests guests, or $LAB_BENCH_GUESTS; host runs on every CPU;
// timing runs alone with the other guests paused). It also reports pingpong's
// fidelity to perftest measured quietly (the two alone) and inside each
// burst: timing runs are isolated if the burst does not move it.
func BenchmarkBurst(b *testing.B) {
	cfg := testConfig(b)
	cfg.Accel = AccelTCG
	bin := labserver(b)
	host := &agentproc.Agent{Command: []string{bin, "agent"}}
	runs := burst()
	guests := DefaultGuests(256)
	if n, err := strconv.Atoi(os.Getenv("LAB_BENCH_GUESTS")); err == nil && n > 0 {
		guests = n
	}
	for i := 0; i < b.N; i++ {
		single := NewPool(cfg, 1)
		single.Start()
		if _, err := single.WaitReady(context.Background()); err != nil {
			b.Fatal(err)
		}
		// Quiet: the two alone, three times; the best of each (as
		// BenchmarkFidelity does: a loaded host only ever stretches a run).
		quiet := []burstRun{runs[11], runs[32], runs[11], runs[32], runs[11], runs[32]} // perftest, pingpong
		_, qs, qids := runBurst(b, single, host, 1, 1, quiet)
		quietFid := bestFidelity(qs, qids, quiet)
		t1, s1, ids1 := runBurst(b, single, host, 1, 1, runs)
		single.Close()

		pool := NewPool(cfg, guests)
		pool.Timing = func(id string) bool { return id == "pingpong" || id == "perftest" }
		pool.Start()
		for _, m := range pool.Members() {
			if _, err := m.WaitReady(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		hostSlots := runtime.NumCPU()
		t2, s2, ids2 := runBurst(b, pool, host, hostSlots+pool.Slots(), hostSlots, runs)

		// The pool plus workers: two `labserver worker` processes on
		// this machine join the embedded NATS server and take host runs
		// beside the local ones (as cmd/labserver wires fleet.Mix). On one
		// 2-core machine they add processes, not CPUs: this row shows what
		// the fleet's path costs or gains here, not what a second machine
		// would add.
		fl, wait := startBurstFleet(b, bin, 2)
		hostMix := &fleet.Mix{Need: sandbox.NeedHost, Local: host, Slots0: hostSlots, Fleet: fl}
		rdmaMix := &fleet.Mix{Need: sandbox.NeedRDMA, Local: pool, Slots0: pool.Slots(), Fleet: fl}
		wait()
		t3, s3, ids3 := runBurst(b, rdmaMix, hostMix, hostMix.Slots()+rdmaMix.Slots(), hostSlots, runs)
		fl.Close()
		pool.Close()

		notDone := 0
		for _, s := range []*burstSink{s1, s2, s3} {
			for _, st := range s.final {
				if st != sandbox.StatusDone {
					notDone++
				}
			}
		}
		b.ReportMetric(t1.Seconds(), "single-s")
		b.ReportMetric(t2.Seconds(), "pool-s")
		b.ReportMetric(t1.Seconds()/t2.Seconds(), "single/pool")
		b.ReportMetric(t3.Seconds(), "workers-s")
		b.ReportMetric(t1.Seconds()/t3.Seconds(), "single/workers")
		b.ReportMetric(float64(guests), "guests")
		b.ReportMetric(float64(notDone), "not-done")
		f1, f2, f3 := fidelity(s1, ids1, runs), fidelity(s2, ids2, runs), fidelity(s3, ids3, runs)
		// Both sides of each ratio: which of the two moves in a burst.
		for name, bs := range map[string]struct {
			s   *burstSink
			ids []string
		}{"single": {s1, ids1}, "pool": {s2, ids2}, "workers": {s3, ids3}} {
			pp, pt := latencies(bs.s, bs.ids, runs)
			b.ReportMetric(pp, "pingpong-"+name+"-us")
			b.ReportMetric(pt, "perftest-"+name+"-us")
		}
		b.ReportMetric(quietFid, "fid-quiet")
		b.ReportMetric(f2, "fid-pool")
		if quietFid > 0 {
			b.ReportMetric(f2/quietFid, "fid-pool/quiet")
		}
		b.Logf("burst of %d: single queue %s, pool of %d guests + %d host CPUs %s (%.2f×), pool + 2 local workers %s (%.2f×); runs not done: %d; pingpong/perftest quiet %.2f, in the single-queue burst %.2f, in the pool burst %.2f, with workers %.2f",
			len(runs), t1.Round(time.Second), guests, hostSlots, t2.Round(time.Second), t1.Seconds()/t2.Seconds(),
			t3.Round(time.Second), t1.Seconds()/t3.Seconds(), notDone, quietFid, f1, f2, f3)
	}
}

// startBurstFleet starts the embedded NATS server on loopback and n
// `labserver worker` processes (host backend, one slot each) joining it;
// wait returns once all n have sent a heartbeat. The workers are killed
// with the benchmark.
func startBurstFleet(b *testing.B, bin string, n int) (*fleet.Server, func()) {
	const tok = "burst-bench-token"
	fl, err := fleet.Start(fleet.ServerConfig{Listen: "127.0.0.1:0", Token: tok, StoreDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		cmd := exec.Command(bin, "worker", "--join", "nats://"+fl.Addr(), "--token", tok,
			"--name", fmt.Sprint("bench-worker-", i), "--backend", "none", "--host-slots", "1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
	return fl, func() {
		for i := 0; len(fl.Workers()) < n; i++ {
			if i > 600 {
				b.Fatalf("%d of %d workers joined", len(fl.Workers()), n)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
