package rdmaexp

import (
	"slices"
	"testing"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// These tests need RDMA devices on the kernel they run on: inside the lab's
// Soft-RoCE guest they run for real; on a host without devices they skip.

func TestRegMRFailsThenFixes(t *testing.T) {
	needDevices(t)
	rec := runExp(t, "reg-mr", map[string]any{"size": 1 << 20, "limit": "65536", "ipc_lock": "drop"})
	r := rec.result(t)
	f := r.Figures
	if f["ok"] != 0 || f["fix_grant_ipc_lock"] != 1 || f["fix_raise_limit"] != 1 {
		rec.dump(t)
		t.Fatalf("figures %v: want the first attempt to fail and both fixes to work", f)
	}
	var enomem bool
	for _, e := range rec.of(sandbox.EvError) {
		if e.Call == "ibv_reg_mr" && e.ErrnoName == "ENOMEM" && e.Messages["zh"] != "" {
			enomem = true
		}
	}
	if !enomem {
		rec.dump(t)
		t.Fatal("no ibv_reg_mr ENOMEM error event")
	}
	t.Logf("reg-mr: %s", r.Message)
}

func TestWriteSilentReceiverSleeps(t *testing.T) {
	needDevices(t)
	const n = 300
	rec := runExp(t, "write-silent", map[string]any{"mode": "write", "messages": n, "size": 4096, "seconds": 1})
	f := rec.result(t).Figures
	t.Logf("write-silent write: %v", f)
	if f["receiver_cpu_ticks"] != 0 || f["receiver_voluntary_cs"] != 0 {
		rec.dump(t)
		t.Errorf("receiver used %v ticks, %v voluntary switches while WRITEs landed; want 0", f["receiver_cpu_ticks"], f["receiver_voluntary_cs"])
	}
	if f["rcvd_pkts"] < n {
		t.Errorf("rcvd_pkts grew by %v, want ≥ %d", f["rcvd_pkts"], n)
	}
	if f["bytes_match"] != 1 {
		t.Error("the receiver's buffer does not hold the bytes written")
	}
	if len(rec.of(sandbox.EvMetric)) == 0 {
		t.Error("no metric samples streamed")
	}
}

func TestWriteSilentSendRecvUsesReceiverCPU(t *testing.T) {
	needDevices(t)
	rec := runExp(t, "write-silent", map[string]any{"mode": "send-recv", "messages": 300, "size": 4096, "seconds": 1})
	f := rec.result(t).Figures
	t.Logf("write-silent send-recv: %v", f)
	if f["receiver_completions"] != 300 || f["bytes_match"] != 1 {
		rec.dump(t)
		t.Fatalf("send-recv: %v", f)
	}
	if f["receiver_cpu_ticks"] == 0 {
		t.Error("the polling receiver used no CPU")
	}
}

func TestWriteSilentNoRecvIsRNR(t *testing.T) {
	needDevices(t)
	rec := runExp(t, "write-silent", map[string]any{"mode": "no-recv", "messages": 1, "size": 64, "seconds": 1})
	r := rec.result(t)
	if r.OK == nil || !*r.OK || r.Figures["wc_status"] != float64(verbs.WCRNRRetryExcErr) || r.Figures["rcvd_rnr_err"] < 1 {
		rec.dump(t)
		t.Fatalf("no-recv: %v", r.Figures)
	}
}

func TestRKeyStatuses(t *testing.T) {
	needDevices(t)
	rec := runExp(t, "rkey", map[string]any{"case": "all"})
	r := rec.result(t)
	want := map[string][]verbs.WCStatus{"correct": {verbs.WCSuccess}, "wrong-rkey": {verbs.WCRemAccessErr},
		"out-of-bounds": {verbs.WCRemAccessErr}, "no-remote-write": {verbs.WCRemAccessErr},
		"other-pd": {verbs.WCLocProtErr, verbs.WCLocQPOpErr}} // rxe says "local QP operation error"
	for k, v := range want {
		if got := verbs.WCStatus(r.Figures[k]); !slices.Contains(v, got) {
			rec.dump(t)
			t.Errorf("%s: %s, want %v", k, got, v)
		}
	}
	if r.OK == nil || !*r.OK {
		t.Errorf("rkey verdict not ok: %s", r.Message)
	}
}

func TestQPStatesWalk(t *testing.T) {
	needDevices(t)
	rec := runExp(t, "qp-states", map[string]any{"mistakes": true})
	r := rec.result(t)
	rec.dump(t)
	if r.Figures["send_ok"] != 1 || r.Figures["refused"] < 2 {
		t.Fatalf("qp-states: %v", r.Figures)
	}
}

func TestPingpongWriteBeatsTCP(t *testing.T) {
	needDevices(t)
	med := map[string]float64{}
	for _, tr := range []string{"tcp", "write", "send"} {
		rec := runExp(t, "pingpong", map[string]any{"transport": tr, "mode": "poll", "iterations": 300, "max_size": 2})
		f := rec.result(t).Figures
		if f["median_us"] <= 0 || f["p99_us"] < f["median_us"] {
			rec.dump(t)
			t.Fatalf("%s: %v", tr, f)
		}
		med[tr] = f["median_us"]
	}
	t.Logf("median round trip, 2 B: %v µs", med)
	if med["write"] >= med["tcp"] {
		t.Errorf("RDMA WRITE with polling (%.1f µs) not below TCP (%.1f µs)", med["write"], med["tcp"])
	}
}

func TestPingpongEventMode(t *testing.T) {
	needDevices(t)
	for _, tr := range []string{"write", "send"} {
		rec := runExp(t, "pingpong", map[string]any{"transport": tr, "mode": "event", "iterations": 50, "max_size": 1024})
		f := rec.result(t).Figures
		if f["median_us_1024"] <= 0 {
			rec.dump(t)
			t.Fatalf("%s event: %v", tr, f)
		}
	}
}

// TestResourcesReturnToStart runs every experiment many times (20, or 2
// with -short) and checks that the kernel's RDMA resource counts (what
// `rdma resource` prints: PDs, CQs, QPs, MRs, contexts) are back where they
// started — on success paths and on the failures the experiments provoke.
func TestResourcesReturnToStart(t *testing.T) {
	needDevices(t)
	rounds := 20
	if testing.Short() {
		rounds = 2
	}
	before, err := verbs.Resources()
	if err != nil {
		t.Fatal(err)
	}
	runs := []struct {
		id  string
		raw map[string]any
	}{
		{"reg-mr", map[string]any{"size": 256 << 10, "limit": "65536", "ipc_lock": "drop"}},
		{"write-silent", map[string]any{"mode": "write", "messages": 20, "size": 1024, "seconds": 1}},
		{"write-silent", map[string]any{"mode": "no-recv", "messages": 1, "size": 64, "seconds": 1}},
		{"pingpong", map[string]any{"transport": "send", "mode": "event", "iterations": 10, "max_size": 16}},
		{"rkey", map[string]any{"case": "all"}},
		{"qp-states", map[string]any{"mistakes": true}},
	}
	for i := 0; i < rounds; i++ {
		for _, r := range runs {
			runExp(t, r.id, r.raw)
		}
	}
	after, err := verbs.Resources()
	if err != nil {
		t.Fatal(err)
	}
	for dev, counts := range before {
		for k, v := range counts {
			if after[dev][k] != v {
				t.Errorf("%s %s: %d before %d rounds, %d after", dev, k, v, rounds, after[dev][k])
			}
		}
	}
	t.Logf("rdma resource after %d rounds of %d runs: %v", rounds, len(runs), after)
}
