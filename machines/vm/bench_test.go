package vm

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/agentproc"
	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/sandbox"
)

// BenchmarkColdBoot is QEMU start → agent hello, median of 3 boots, with
// the guest kernel's share (its uptime when our init started) as the
// baseline: boot-s / kernel-s says how much our init and agent add.
func BenchmarkColdBoot(b *testing.B) {
	cfg := testConfig(b)
	im, err := vmimage.LoadImage(cfg.Dir)
	if err != nil {
		b.Fatal(err)
	}
	// The KVM probe is the backend's job; LAB_VM_ACCEL=kvm measures KVM.
	accel := AccelTCG
	if os.Getenv("LAB_VM_ACCEL") == AccelKVM {
		accel = AccelKVM
	}
	var boots, kernels []float64
	for i := 0; i < b.N; i++ {
		for range 3 {
			g, err := StartGuest(context.Background(), cfg, im, accel, false)
			if err != nil {
				b.Fatal(err)
			}
			boots = append(boots, g.Ready.Sub(g.Started).Seconds())
			if k, ok := initUptime(g.Console); ok {
				kernels = append(kernels, k)
			}
			g.Stop()
		}
	}
	bm, km := median(boots), median(kernels)
	b.ReportMetric(bm, "boot-s")
	b.ReportMetric(km, "kernel-s")
	if km > 0 {
		b.ReportMetric(bm/km, "boot/kernel")
	}
	b.Logf("cold boot → agent ready (%s): %v s, median %.2f s; guest kernel reached init at median %.2f s", accel, boots, bm, km)
}

var initUptimeRe = regexp.MustCompile(`rdmalab-guest: init at uptime ([0-9.]+)s`)

// initUptime reads from the console when the guest kernel started our init.
func initUptime(console string) (float64, bool) {
	b, err := os.ReadFile(console)
	if err != nil {
		return 0, false
	}
	m := initUptimeRe.FindSubmatch(b)
	if m == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(m[1]), 64)
	return f, err == nil
}

// BenchmarkWarmFirstEvent is a request to an idle warm guest → its first
// event, median of 10, against the same request through the host backend
// (a fresh `labserver agent` child on this machine) as the baseline.
func BenchmarkWarmFirstEvent(b *testing.B) {
	cfg := testConfig(b)
	be := New(cfg)
	be.Start()
	defer be.Close()
	ctx := context.Background()
	if _, err := be.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	req := sandbox.Request{Experiment: "memlock", Params: sandbox.Params{"limit": "8388608", "size": 1 << 20, "ipc_lock": "drop"}}
	host := &agentproc.Agent{Command: []string{labserver(b), "agent"}}
	var vmT, hostT []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for range 10 {
			// An idle warm guest, as between a learner's runs: the spare
			// agent for the next run starts when a run ends.
			time.Sleep(3 * time.Second)
			vmT = append(vmT, firstEvent(b, ctx, be.Exec, req))
			hostT = append(hostT, firstEvent(b, ctx, host.Exec, req))
		}
	}
	vm, h := median(vmT), median(hostT)
	b.ReportMetric(vm*1000, "vm-ms")
	b.ReportMetric(h*1000, "host-ms")
	b.ReportMetric(vm/h, "vm/host")
	b.Logf("warm request → first event: vm %v s, median %.0f ms; host agent median %.0f ms", round3(vmT), vm*1000, h*1000)
}

// firstEvent runs req to completion and returns the seconds until its
// first event.
func firstEvent(b *testing.B, ctx context.Context, exec func(context.Context, *sandbox.Session) error, req sandbox.Request) float64 {
	start := time.Now()
	var first time.Duration
	err := exec(ctx, sandbox.NewSession(req, nil, func(sandbox.Event) {
		if first == 0 {
			first = time.Since(start)
		}
	}))
	if err != nil {
		b.Fatal(err)
	}
	if first == 0 {
		b.Fatal("the run emitted no event")
	}
	return first.Seconds()
}
