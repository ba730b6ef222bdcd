package rdmaexp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// TestLossless runs lesson 02's experiments for real (in the guest where
// this kernel has no RDMA devices) and checks what each must show.
func TestLossless(t *testing.T) {
	ex := pickExecutor(t)
	t.Run("loss-sweep", func(t *testing.T) { testLossSweep(t, ex) })
	t.Run("retry-budget", func(t *testing.T) { testRetryBudget(t, ex) })
	t.Run("retry-budget/seven", func(t *testing.T) { testRetrySeven(t, ex) })
	t.Run("dscp-ecn", func(t *testing.T) { testDSCPECN(t, ex) })
	t.Run("cancel-leaves-no-loss", func(t *testing.T) { testCancelMidLoss(t, ex) })
}

// testRetryBudget: a dead link ends in IBV_WC_RETRY_EXC_ERR after roughly
// (retry_cnt+1) × 4.096 µs × 2^timeout, with retry_cnt+1 transmissions,
// the client QP in ERROR and the server QP untouched.
func testRetryBudget(t *testing.T, ex executor) {
	rec := ex.run(t, "retry-budget", map[string]any{"timeout": 14, "retry_cnt": 3})
	r := rec.result(t)
	f := r.Figures
	t.Logf("retry-budget: %v", f)
	checkVerdictFigures(t, rec)
	if verbs.WCStatus(f["wc_status"]) != verbs.WCRetryExcErr || verbs.QPState(f["client_qp_state"]) != verbs.StateError {
		rec.dump(t)
		t.Fatalf("want RETRY_EXC_ERR and the client QP in ERROR: %v", f)
	}
	if verbs.QPState(f["server_qp_state"]) != verbs.StateRTS {
		t.Errorf("server QP is %v, want RTS (it never saw a packet)", verbs.QPState(f["server_qp_state"]))
	}
	if verbs.WCStatus(f["flush_status"]) != verbs.WCWRFlushErr {
		t.Errorf("a WRITE after the failure completed with %v, want WR_FLUSH_ERR", verbs.WCStatus(f["flush_status"]))
	}
	// 4 tries × 67.1 ms = 268 ms. rxe's timer is 16 jiffies at the
	// guest's HZ 250 (nsecs_to_jiffies rounds down: 64 ms) and fires up
	// to a jiffy early: at least 4 × 60 ms = 240 ms, 0.894 of it. The
	// clock starts before the post and the healthy WRITE's timer has
	// expired first, so a run can only be later than that (a slow
	// emulated guest). Before both, one run beside stress-ng read 0.783
	// (quiet ones 0.925–1.03); after, five quiet runs 1.02–1.08.
	if f["ratio"] < 0.88 || f["ratio"] > 4 {
		t.Errorf("time to failure %v ms vs %v ms expected (ratio %v)", f["measured_ms"], f["expected_ms"], f["ratio"])
	}
	if f["tries"] < 3.5 || f["tries"] > 4.5 {
		t.Errorf("the WRITE was sent %v times, want retry_cnt+1 = 4", f["tries"])
	}
	if r.OK == nil || !*r.OK {
		t.Errorf("verdict not ok: %s", r.Message)
	}
	if len(rec.of(sandbox.EvMetric)) < 2 {
		t.Error("no packets-sent samples streamed")
	}
}

// testLossSweep: goodput at 1 % loss is below goodput at 0 % by a margin
// for RDMA (go-back-N), the responder counted out-of-sequence packets, and
// the loss is gone afterwards. The preset runs three times: each run
// measures every step lossRounds times and words its verdict by the
// spread, so no two runs may give opposite verdicts (DESIGN.md: a verdict
// must survive a rerun); the figures are checked on the medians of the
// run that was firm, if any.
func testLossSweep(t *testing.T, ex executor) {
	var f map[string]float64
	var kinds []float64
	for try := 0; try < 3; try++ {
		rec := ex.run(t, "loss-sweep", map[string]any{"losses": "0-1-2", "size": 64 << 10, "ms": 200})
		g := rec.result(t).Figures
		t.Logf("loss-sweep run %d: %v", try, g)
		t.Logf("verdict: %s", rec.result(t).Message)
		if g["rdma_mbps_0"] <= 0 || g["tcp_mbps_0"] <= 0 {
			rec.dump(t)
			t.Fatalf("no goodput without loss: %v", g)
		}
		if g["rounds"] < 3 {
			t.Errorf("%v rounds a step, want ≥ 3", g["rounds"])
		}
		// the spread is charted: median, lowest and highest round of 4 series over 3 steps
		if n := len(rec.of(sandbox.EvMetric)); n < 36 {
			t.Errorf("%d metric events, want ≥ 36 (4 series × median, lowest, highest × 3 steps)", n)
		}
		checkVerdictFigures(t, rec)
		kinds = append(kinds, g["verdict"])
		if f == nil || g["verdict"] == 1 {
			f = g
		}
	}
	checkNoFlip(t, kinds, "1 RDMA resent more in every round, -1 less, 0 too noisy to say")
	// Go-back-N resends the window behind each drop, SACK the drop only.
	if f["rdma_resent_1"] <= 2*f["tcp_resent_1"] || f["rdma_resent_1"] < 3 {
		t.Errorf("at 1 %% loss RDMA resent %v %% and TCP %v %% (medians): want RDMA > 3 %% and > twice TCP", f["rdma_resent_1"], f["tcp_resent_1"])
	}
	if f["tcp_resent_1"] <= 0 {
		t.Errorf("TCP resent nothing at 1 %% loss: %v", f)
	}
	// Goodput is measured and shown, not asserted: it follows how busy
	// the machine is (with both cores kept busy by another process RDMA
	// kept 72 % at 1 % loss, against under 70 % on a quiet machine), and
	// the verdict says so. What loss does to go-back-N, the resent
	// packets above and the sequence errors below, does not move with
	// the load.
	if f["rdma_rel_1"] <= 0 {
		t.Errorf("no RDMA goodput measured at 1 %% loss: %v", f)
	}
	if f["out_of_seq_request_1"]+f["rcvd_seq_err_1"] == 0 {
		t.Errorf("no out-of-sequence packets counted at 1 %% loss: %v", f)
	}
	if f["out_of_seq_request_0"]+f["rcvd_seq_err_0"] != 0 {
		t.Logf("note: out-of-sequence packets without loss (the emulated guest was slow): %v", f)
	}
}

// testCancelMidLoss cancels a sweep while a loss is on the link; the next
// run must find the links clean (the guest resets them after every run).
func testCancelMidLoss(t *testing.T, ex executor) {
	g, ok := ex.(guestExec)
	if !ok {
		t.Skip("cancellation is tested through the guest's agent server; on this machine the experiment's own deferred reset runs")
	}
	e := registry().Get("loss-sweep")
	p, err := e.Validate(map[string]any{"losses": "0-1-2", "ms": 1500})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sawLoss bool
	rec := &recorder{}
	err = g.b.Exec(ctx, sandbox.NewSession(sandbox.Request{RunID: fmt.Sprintf("test-%d", time.Now().UnixNano()), Experiment: "loss-sweep", Params: p}, nil, func(ev sandbox.Event) {
		rec.Emit(ev)
		// the tc command of the 1 % step has run: cancel while it is on
		if ev.Type == sandbox.EvLog && ev.Message == "$ tc qdisc replace dev veth1 root netem loss 1%" && !sawLoss {
			sawLoss = true
			time.AfterFunc(300*time.Millisecond, cancel)
		}
	}))
	if !sawLoss {
		rec.dump(t)
		t.Fatalf("the run ended (%v) before the 1 %% loss was applied", err)
	}
	if err == nil {
		t.Fatal("the cancelled run reported success")
	}
	t.Logf("cancelled mid-loss: %v", err)
	// The guest may still be ending the cancelled run: wait until it takes
	// the next one.
	np, _ := e.Validate(map[string]any{"losses": "0-1-2", "ms": 200})
	var next *recorder
	for try := 0; ; try++ {
		next = &recorder{}
		err := g.b.Exec(context.Background(), sandbox.NewSession(sandbox.Request{RunID: fmt.Sprintf("test-%d", time.Now().UnixNano()), Experiment: "loss-sweep", Params: np}, nil, next.Emit))
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "busy") || try == 50 {
			next.dump(t)
			t.Fatalf("the run after the cancelled one: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if f := next.result(t).Figures; f["clean_at_start"] != 1 {
		next.dump(t)
		t.Fatalf("the next run found loss left behind: %v", f)
	}
}

// testDSCPECN: the capture shows the QP's DSCP and ECN on every data
// packet; a congested link's CE marks arrive and rxe answers with no CNP;
// Not-ECT packets are dropped instead of marked.
func testDSCPECN(t *testing.T, ex executor) {
	const n = 60
	rec := ex.run(t, "dscp-ecn", map[string]any{"dscp": 26, "ecn": "ect0", "mark": 0, "messages": n})
	f := rec.result(t).Figures
	t.Logf("dscp-ecn bits: %v", f)
	if f["data_pkts"] < n*4*9/10 || f["data_dscp_match"] != f["data_pkts"] || f["data_ecn_set"] != f["data_pkts"] {
		rec.dump(t)
		t.Fatalf("want ≥ %d data packets, all DSCP 26 and ECT(0): %v", n*4*9/10, f)
	}
	if f["ack_pkts"] == 0 || f["ack_dscp0"] != f["ack_pkts"] || f["cnps"] != 0 || f["data_ce"] != 0 {
		t.Errorf("want ACKs with DSCP 0, no CNP, no CE: %v", f)
	}
	// The capture goes with the run (packet view, .pcap download).
	caps := rec.of(sandbox.EvCapture)
	if len(caps) != 1 || caps[0].Capture == nil || float64(caps[0].Capture.Packets) != f["data_pkts"]+f["ack_pkts"] || len(caps[0].Capture.Pcap) == 0 {
		t.Errorf("want one capture event holding the %v packets counted: %d events", f["data_pkts"]+f["ack_pkts"], len(caps))
	}

	rec = ex.run(t, "dscp-ecn", map[string]any{"dscp": 26, "ecn": "ect0", "mark": 10, "messages": n})
	f = rec.result(t).Figures
	t.Logf("dscp-ecn marked: %v", f)
	if f["data_ce"] == 0 || f["cnps"] != 0 || f["out_of_seq_request"] != 0 || f["data_dscp_match"] != f["data_pkts"] {
		rec.dump(t)
		t.Errorf("want CE marks on data packets (DSCP kept), no CNP and no loss: %v", f)
	}

	rec = ex.run(t, "dscp-ecn", map[string]any{"dscp": 26, "ecn": "not-ect", "mark": 10, "messages": n})
	f = rec.result(t).Figures
	t.Logf("dscp-ecn not-ect: %v", f)
	if f["data_ce"] != 0 || f["out_of_seq_request"]+f["completer_retry_err"] == 0 {
		rec.dump(t)
		t.Errorf("want no CE and retransmissions (Not-ECT packets dropped): %v", f)
	}
}

// testRetrySeven: Soft-RoCE never decrements retry_cnt 7, so a dead link
// never fails the WRITE; the experiment says so once it has seen a ninth
// try, one more than the IB spec allows.
func testRetrySeven(t *testing.T, ex executor) {
	rec := ex.run(t, "retry-budget", map[string]any{"timeout": 12, "retry_cnt": 7})
	r := rec.result(t)
	f := r.Figures
	t.Logf("retry-budget retry_cnt 7: %v", f)
	if f["still_retrying"] != 1 || f["tries"] <= 8 || verbs.QPState(f["client_qp_state"]) != verbs.StateRTS {
		rec.dump(t)
		t.Fatalf("want no completion, more than 8 tries and the client QP still in RTS: %v", f)
	}
	if r.OK == nil || !*r.OK {
		t.Errorf("verdict not ok: %s", r.Message)
	}
	// no completion came: the table must not offer a time "to the
	// completion" beside "still retrying" (issue 30)
	for _, e := range rec.of(sandbox.EvTable) {
		for _, row := range e.Table.Rows {
			if strings.Contains(row[0], "to the completion") || strings.Contains(row[0], "expected time to give up") {
				t.Errorf("retry_cnt 7 table row %q beside no completion", row[0])
			}
		}
	}
	checkVerdictFigures(t, rec)
}
