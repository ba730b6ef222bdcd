package rdmaexp

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
	"github.com/rdmalab/rdmalab/sandbox"
)

// TestUpperLayers runs lesson 08's kernel experiments in the shared guest
// (or on this kernel's devices): NVMe over Fabrics and NFS, each over RDMA
// and TCP, and a cancelled run of each that must leave nothing behind.
func TestUpperLayers(t *testing.T) {
	ex := pickExecutor(t)
	t.Run("nvmeof", func(t *testing.T) { testNVMeoF(t, ex) })
	t.Run("nvmeof/cancelled", func(t *testing.T) { testNVMeoFCancelled(t, ex) })
	// the cancelled NFS run first: the full run after it counts what it left
	t.Run("nfs-rdma/cancelled", func(t *testing.T) { cancelNFSRDMA(t, ex) })
	t.Run("nfs-rdma", func(t *testing.T) { testNFSRDMA(t, ex) })
}

func testNVMeoF(t *testing.T, ex executor) {
	rec := ex.run(t, "nvmeof", map[string]any{"transport": "both", "max_depth": 4, "seconds": 1})
	r := rec.result(t)
	for _, e := range rec.of(sandbox.EvTable) {
		t.Logf("table %s: %v", e.Table.Title, e.Table.Rows)
	}
	t.Logf("verdict: %s", r.Message)
	f := r.Figures
	// the kernel's view, not printed text: sysfs said rdma and tcp
	if f["transport_rdma"] != 1 || f["transport_tcp"] != 1 {
		rec.dump(t)
		t.Fatalf("the controllers' transports in sysfs were not rdma and tcp: %v", f)
	}
	for _, k := range []string{"rdma_1", "rdma_4", "tcp_1", "tcp_4"} {
		if f["ios_"+k] < 1 || f["iops_"+k] <= 0 || f["p99_us_"+k] < f["p50_us_"+k] {
			t.Errorf("%s: %v reads, %v IOPS, p50 %v µs, p99 %v µs", k, f["ios_"+k], f["iops_"+k], f["p50_us_"+k], f["p99_us_"+k])
		}
	}
	// the deepest queue is measured in rounds, and the verdict names a
	// cheaper transport only when they part (issue 44 item 1)
	if f["rounds_rdma_4"] != upperRounds || f["rounds_tcp_4"] != upperRounds || f["rounds_rdma_1"] != 1 {
		t.Errorf("rounds: rdma at 4 %v, tcp at 4 %v, rdma at 1 %v; want %d, %d, 1", f["rounds_rdma_4"], f["rounds_tcp_4"], f["rounds_rdma_1"], upperRounds, upperRounds)
	}
	overlap := strings.Contains(r.Messages["en"], "overlaps, so neither")
	if c, ok := f["cpu_order"]; !ok || (c == 0) != overlap {
		t.Errorf("cpu_order %v (present %v), yet the verdict says the rounds overlap: %v", c, ok, overlap)
	}
	checkVerdictFigures(t, rec)
	// a read over RDMA is at least the command SEND, the data WRITE and
	// the response SEND on the wire; over TCP the RDMA devices stay quiet
	if f["roce_pkts_per_io_rdma_4"] < 3 {
		t.Errorf("%.1f RoCE packets per read over rdma, want ≥ 3 (command, data, response)", f["roce_pkts_per_io_rdma_4"])
	}
	if f["roce_pkts_per_io_tcp_4"] > 0.1 {
		t.Errorf("%.1f RoCE packets per read over tcp, want none", f["roce_pkts_per_io_tcp_4"])
	}
	// one read captured on the host's port: the command capsule SEND,
	// the target's RDMA WRITE of 4 KiB (four packets at path MTU 1024),
	// the response SEND
	if len(rec.of(sandbox.EvCapture)) != 1 || f["capture_cmd_sends"] < 1 || f["capture_resp_sends"] < 1 ||
		f["capture_write_bytes"] != 4096 || f["capture_data_writes"] != 4 {
		t.Errorf("capture of one read: %d capture events, %v command SENDs, %v WRITE packets with %v bytes, %v response SENDs; want 1, ≥1, 4, 4096, ≥1",
			len(rec.of(sandbox.EvCapture)), f["capture_cmd_sends"], f["capture_data_writes"], f["capture_write_bytes"], f["capture_resp_sends"])
	}
	// Linux's target answers a read whose buffer the host registered for
	// it with SEND with Invalidate (nvmet_rdma_queue_response): lesson 08
	// says so, so the capture must show it
	if f["capture_resp_invalidate"] < 1 {
		t.Errorf("capture of one read: %v of %v response SENDs carried Invalidate, want ≥ 1", f["capture_resp_invalidate"], f["capture_resp_sends"])
	}
	if f["controllers_left"]+f["subsystems_left"]+f["modules_left"] != 0 {
		t.Errorf("after the run: %v controllers, %v subsystems, %v modules left", f["controllers_left"], f["subsystems_left"], f["modules_left"])
	}
	if r.OK == nil || !*r.OK {
		t.Errorf("verdict not ok: %s", r.Message)
	}
	checkVerdictFigures(t, rec)
}

func testNVMeoFCancelled(t *testing.T, ex executor) {
	if !runUntil(t, ex, "nvmeof", map[string]any{"transport": "rdma", "max_depth": 1, "seconds": 5, "capture": false}, "read-rdma-1") {
		t.Fatal("the run ended before it read over rdma")
	}
	// the next run waits for the killed run's guard, then counts
	time.Sleep(time.Second)
	rec := ex.run(t, "nvmeof", map[string]any{"transport": "tcp", "max_depth": 1, "seconds": 1, "capture": false})
	f := rec.result(t).Figures
	if f["left_ctrls_at_start"] != 0 || f["left_subsystems_at_start"] != 0 || f["left_modules_at_start"] != 0 {
		rec.dump(t)
		t.Errorf("a cancelled run left %v controllers, %v subsystems and %v modules behind", f["left_ctrls_at_start"], f["left_subsystems_at_start"], f["left_modules_at_start"])
	}
}

// TestNVMeoFVerdict: the verdict names the cheaper transport only when
// every round of one lies below every round of the other (issue 44 item
// 1: one run each flipped between reruns), and says so in both languages.
func TestNVMeoFVerdict(t *testing.T) {
	pt := func(tr string, ios int, pkts int64, cpus ...time.Duration) nvmeofPoint {
		p := nvmeofPoint{transport: tr, depth: 4}
		for _, c := range cpus {
			p.rounds = append(p.rounds, readResult{IOs: ios, Elapsed: time.Second, Lats: []time.Duration{time.Millisecond}, BusyCPU: c, RoCEPkts: pkts})
		}
		return p
	}
	ms := time.Millisecond
	seen := map[string]string{"rdma": "rdma", "tcp": "tcp"}
	for _, c := range []struct {
		rdma, tcp []time.Duration
		want      string
		order     float64
	}{
		{[]time.Duration{100 * ms, 110 * ms, 120 * ms}, []time.Duration{400 * ms, 380 * ms, 390 * ms}, "rdma cost less", -1},
		{[]time.Duration{400 * ms, 380 * ms, 390 * ms}, []time.Duration{100 * ms, 110 * ms, 120 * ms}, "tcp cost less", 1},
		// rdma higher in two rounds, not in the third: no order (the flip the issue saw)
		{[]time.Duration{384 * ms, 495 * ms, 200 * ms}, []time.Duration{269 * ms, 207 * ms, 816 * ms}, "overlaps", 0},
		{[]time.Duration{100 * ms, 101 * ms, 102 * ms}, []time.Duration{102 * ms, 103 * ms, 104 * ms}, "overlaps", 0}, // touching as printed
	} {
		v, ok, o := nvmeofVerdict([]nvmeofPoint{pt("rdma", 100, 900, c.rdma...), pt("tcp", 100, 0, c.tcp...)}, seen, 4)
		if !ok || !strings.Contains(v["en"], c.want) || v["zh"] == "" || o == nil || *o != c.order {
			t.Errorf("rdma %v, tcp %v: ok=%v order %v %q, want %v %q", c.rdma, c.tcp, ok, o, v["en"], c.order, c.want)
		}
		if p := zhcheck.Prose(v["zh"]); len(p) > 0 {
			t.Errorf("zh verdict has English prose %q", p) // "nvme connect" once was
		}
	}
	// a controller whose kernel transport is not the one asked for fails
	if _, ok, _ := nvmeofVerdict([]nvmeofPoint{pt("rdma", 100, 900, time.Second)}, map[string]string{"rdma": "tcp"}, 4); ok {
		t.Error("verdict ok although sysfs reported tcp for the rdma connect")
	}
	// rdma reads that moved no RoCE packet did not go over RDMA
	if _, ok, _ := nvmeofVerdict([]nvmeofPoint{pt("rdma", 100, 0, time.Second)}, map[string]string{"rdma": "rdma"}, 4); ok {
		t.Error("verdict ok although no RoCE packet moved")
	}
}
