package hostexp

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/expkit"
)

// TestMain lets this test binary serve as the re-executed agent helper
// (memlock-child), exactly as `labserver agent` does.
func TestMain(m *testing.M) {
	if name := os.Getenv(sandbox.EnvHelper); name != "" {
		reg := sandbox.NewRegistry()
		Register(reg)
		if err := sandbox.RunHelper(context.Background(), reg, name, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type collect struct {
	mu  sync.Mutex
	evs []sandbox.Event
}

func (c *collect) Emit(e sandbox.Event) {
	c.mu.Lock()
	c.evs = append(c.evs, e)
	c.mu.Unlock()
}

func (c *collect) of(t sandbox.EventType) []sandbox.Event {
	var out []sandbox.Event
	for _, e := range c.evs {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

func (c *collect) result(t *testing.T) sandbox.Event {
	t.Helper()
	rs := c.of(sandbox.EvResult)
	if len(rs) != 1 {
		t.Fatalf("%d result events; all: %+v", len(rs), c.evs)
	}
	if rs[0].Messages["zh"] == "" || rs[0].Messages["en"] == "" {
		t.Errorf("verdict not in both languages: %+v", rs[0].Messages)
	}
	return rs[0]
}

func run(t *testing.T, e *sandbox.Experiment, raw map[string]any) *collect {
	t.Helper()
	p, err := e.Validate(raw)
	if err != nil {
		t.Fatal(err)
	}
	c := &collect{}
	if err := e.Run(context.Background(), p, c); err != nil {
		t.Fatalf("run: %v; events %+v", err, c.evs)
	}
	return c
}

func needIPCLock(t *testing.T) {
	if !expkit.HasPermitted(unix.CAP_IPC_LOCK) {
		t.Skip("this process has no CAP_IPC_LOCK to keep or drop")
	}
}

func TestMemlockFailsWithENOMEMThenFixes(t *testing.T) {
	needIPCLock(t)
	c := run(t, Memlock(), map[string]any{"limit": "65536", "size": 1 << 20, "ipc_lock": "drop"})
	errs := c.of(sandbox.EvError)
	if len(errs) != 1 || errs[0].ErrnoName != "ENOMEM" || errs[0].Errno != int(unix.ENOMEM) || errs[0].Call != "mlock" ||
		!strings.Contains(errs[0].Message, "Cannot allocate memory") || !strings.Contains(errs[0].Message, "MemAvailable") {
		t.Fatalf("error events %+v, want one ENOMEM from mlock", errs)
	}
	r := c.result(t)
	if *r.OK || r.Figures["errno"] != float64(unix.ENOMEM) || r.Figures["mem_available"] <= float64(1<<20) {
		t.Errorf("result %+v", r)
	}
	// Both fixes ran in fresh children and locked the buffer.
	if r.Figures["fix_raise_limit"] != 1 || r.Figures["fix_grant_ipc_lock"] != 1 {
		t.Errorf("fixes: %v", r.Figures)
	}
	tb := c.of(sandbox.EvTable)
	if len(tb) != 1 || len(tb[0].Table.Rows) != 3 {
		t.Errorf("tables %+v", tb)
	}
}

func TestMemlockWithinLimitSucceeds(t *testing.T) {
	c := run(t, Memlock(), map[string]any{"limit": "65536", "size": 32 << 10, "ipc_lock": "drop"})
	if errs := c.of(sandbox.EvError); len(errs) != 0 {
		t.Fatalf("errors %+v", errs)
	}
	r := c.result(t)
	if !*r.OK || r.Figures["limit"] != 65536 {
		t.Errorf("result %+v", r)
	}
	if !strings.Contains(r.Message, "fits under RLIMIT_MEMLOCK 64 KiB") {
		t.Errorf("verdict %q", r.Message)
	}
}

func TestMemlockKeptIPCLockBeatsLimit(t *testing.T) {
	needIPCLock(t)
	c := run(t, Memlock(), map[string]any{"limit": "65536", "size": 4 << 20, "ipc_lock": "keep"})
	r := c.result(t)
	if !*r.OK || !strings.Contains(r.Message, "CAP_IPC_LOCK lets a process lock memory beyond the limit") {
		t.Errorf("result %+v", r)
	}
}

func TestMemlockUnlimitedSaysWhenItCannot(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
		t.Fatal(err)
	}
	if expkit.HasEffective(unix.CAP_SYS_RESOURCE) || lim.Max == unix.RLIM_INFINITY {
		t.Skip("this machine can raise RLIMIT_MEMLOCK; the refusal cannot be shown")
	}
	c := run(t, Memlock(), map[string]any{"limit": "unlimited", "size": 1 << 20, "ipc_lock": "drop"})
	var said bool
	for _, e := range c.of(sandbox.EvLog) {
		if strings.Contains(e.Message, "cannot be raised") && strings.Contains(e.Message, "Operation not permitted") &&
			strings.Contains(e.Messages["zh"], "无法提高") {
			said = true
		}
	}
	if !said {
		t.Errorf("no plain note about the unraisable limit; logs: %+v", c.of(sandbox.EvLog))
	}
	// It still ran, with the hard limit, which 1 MiB fits under.
	if r := c.result(t); !*r.OK || r.Figures["limit"] != float64(lim.Max) {
		t.Errorf("result %+v", r)
	}
}

func TestTCPCostMeasuresRealCost(t *testing.T) {
	c := run(t, TCPCost(), map[string]any{"seconds": 1, "msg_size": 16 << 10})
	r := c.result(t)
	f := r.Figures
	if f["bytes"] <= 0 || f["gbps"] <= 0 || f["sender_cpu_s"] <= 0 || f["receiver_cpu_s"] <= 0 {
		t.Fatalf("figures %v", f)
	}
	if _, ok := readCPUClock(); ok {
		if f["ghz_per_gbps"] <= 0 || f["cores_100g"] <= 0 || f["cores_400g"] <= f["cores_100g"] {
			t.Errorf("cost figures %v", f)
		}
		if f["rule_ghz_per_gbps"] != 1 {
			t.Errorf("rule of thumb %v", f["rule_ghz_per_gbps"])
		}
	}
	// CPU can exceed wall time only across threads: each side is one thread.
	if f["sender_cpu_s"] > f["seconds"]*1.05 || f["receiver_cpu_s"] > f["seconds"]*1.05 {
		t.Errorf("a thread used more CPU than wall time: %v", f)
	}
	series := map[string]int{}
	for _, m := range c.of(sandbox.EvMetric) {
		series[m.Series+" "+m.Unit]++
	}
	if series["throughput Gbps"] < 2 || series["sender CPU %"] < 2 || series["receiver CPU %"] < 2 {
		t.Errorf("live series %v", series)
	}
}

func TestTCPCostStopsOnCancel(t *testing.T) {
	e := TCPCost()
	p, _ := e.Validate(map[string]any{"seconds": 10})
	ctx, cancel := context.WithCancel(context.Background())
	c := &collect{}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, p, c) }()
	for {
		c.mu.Lock()
		n := len(c.evs)
		c.mu.Unlock()
		if n > 6 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("cancelled run returned no error")
	}
}

// TestTCPVerdictFollowsMeasurement: the verdict's conclusion depends on
// the measured cost per host, not a fixed sentence.
func TestTCPVerdictFollowsMeasurement(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range []struct {
		cores100 float64 // both hosts together
		want     string
	}{
		{10, "at least 5.0 cores"}, {1.6, "modest"}, {0.4, "argument for RDMA is weak"},
	} {
		f := map[string]float64{"seconds": 3, "cores_100g": c.cores100, "cores_400g": 4 * c.cores100}
		r := tcpResult{size: 65536, sendCPU: time.Second, recvCPU: time.Second, elapsed: 3 * time.Second}
		v := verdictTCP(20, 0.66, 0, f, r)
		if !strings.Contains(v["en"], c.want) || v["zh"] == "" || !strings.Contains(v["en"], "lower bound") {
			t.Errorf("%v cores for 100 Gbps: verdict %q, want it to say %q and that it is a lower bound", c.cores100, v["en"], c.want)
		}
		seen[v["en"]] = true
	}
	if len(seen) != 3 {
		t.Errorf("%d distinct verdicts for three different measurements", len(seen))
	}
}

// TestEverySharingDeclared: the runner schedules by it (timing runs alone,
// shareable runs side by side), so every experiment says which it is.
func TestEverySharingDeclared(t *testing.T) {
	reg := sandbox.NewRegistry()
	Register(reg)
	for _, e := range reg.List() {
		if e.Sharing != sandbox.Timing && e.Sharing != sandbox.Shareable {
			t.Errorf("%s: Sharing %q: set sandbox.Timing (it measures time or CPU) or sandbox.Shareable", e.ID, e.Sharing)
		}
	}
}
