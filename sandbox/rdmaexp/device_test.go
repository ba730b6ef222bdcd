package rdmaexp

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// TestOnDevices runs every experiment for real with small params and checks
// the effect each one teaches. Where this kernel has RDMA devices they run
// here; otherwise they run in the lab's Soft-RoCE guest through the vm
// backend and the agent protocol, exactly as a learner's run does.
func TestOnDevices(t *testing.T) {
	ex := pickExecutor(t)
	t.Run("reg-mr", func(t *testing.T) { testRegMR(t, ex) })
	t.Run("write-silent/write", func(t *testing.T) { testWriteSilent(t, ex) })
	t.Run("write-silent/send-recv", func(t *testing.T) { testSendRecv(t, ex) })
	t.Run("write-silent/no-recv", func(t *testing.T) { testNoRecv(t, ex) })
	t.Run("rkey", func(t *testing.T) { testRKey(t, ex) })
	t.Run("qp-states", func(t *testing.T) { testQPStates(t, ex) })
	t.Run("pingpong", func(t *testing.T) { testPingpong(t, ex) })
	t.Run("pingpong/event", func(t *testing.T) { testPingpongEvent(t, ex) })
	t.Run("pingpong/presets", func(t *testing.T) { testPingpongPresets(t, ex) })
	t.Run("perftest", func(t *testing.T) { testPerftest(t, ex) })
	t.Run("ud-vs-rc", func(t *testing.T) { testUDvsRC(t, ex) })
	t.Run("rdma-cm", func(t *testing.T) { testRDMACM(t, ex) })
	t.Run("verbs-steps", func(t *testing.T) { testVerbsSteps(t, ex) })
	t.Run("syscalls", func(t *testing.T) { testSyscalls(t, ex) })
	t.Run("syscalls/event", func(t *testing.T) { testSyscallsEvent(t, ex) })
	t.Run("resources", func(t *testing.T) { testResources(t, ex) })
}

func testRegMR(t *testing.T, ex executor) {
	rec := ex.run(t, "reg-mr", map[string]any{"size": 1 << 20, "limit": "65536", "ipc_lock": "drop"})
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

func testWriteSilent(t *testing.T, ex executor) {
	const n = 300
	rec := ex.run(t, "write-silent", map[string]any{"mode": "write", "messages": n, "size": 4096, "seconds": 1})
	f := rec.result(t).Figures
	t.Logf("write-silent write: %v", f)
	if f["receiver_thread_run_ns"] != 0 || f["receiver_thread_voluntary_cs"] != 0 {
		rec.dump(t)
		t.Errorf("the receiving thread ran %v ns with %v voluntary switches while WRITEs landed; want 0 and 0", f["receiver_thread_run_ns"], f["receiver_thread_voluntary_cs"])
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

func testSendRecv(t *testing.T, ex executor) {
	rec := ex.run(t, "write-silent", map[string]any{"mode": "send-recv", "messages": 300, "size": 4096, "seconds": 1})
	f := rec.result(t).Figures
	t.Logf("write-silent send-recv: %v", f)
	if f["receiver_completions"] != 300 || f["bytes_match"] != 1 {
		rec.dump(t)
		t.Fatalf("send-recv: %v", f)
	}
	// The receiver sleeps on its completion channel: it is woken by the
	// messages (several may complete per wakeup when it falls behind) and
	// runs for them — where the WRITE receiver stayed at 0 and 0.
	if f["receiver_thread_run_ns"] <= 0 || f["receiver_thread_voluntary_cs"] < 1 {
		rec.dump(t)
		t.Errorf("the receiving thread ran %v ns with %v voluntary switches for 300 messages; want both > 0", f["receiver_thread_run_ns"], f["receiver_thread_voluntary_cs"])
	}
}

func testNoRecv(t *testing.T, ex executor) {
	rec := ex.run(t, "write-silent", map[string]any{"mode": "no-recv", "messages": 1, "size": 64, "seconds": 1})
	r := rec.result(t)
	if r.OK == nil || !*r.OK || r.Figures["wc_status"] != float64(verbs.WCRNRRetryExcErr) || r.Figures["rcvd_rnr_err"] < 1 {
		rec.dump(t)
		t.Fatalf("no-recv: %v", r.Figures)
	}
	t.Logf("no-recv: %s", r.Message)
}

func testRKey(t *testing.T, ex executor) {
	rec := ex.run(t, "rkey", map[string]any{"case": "all"})
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

func testQPStates(t *testing.T, ex executor) {
	rec := ex.run(t, "qp-states", map[string]any{"mistakes": true})
	r := rec.result(t)
	if r.Figures["send_ok"] != 1 || r.Figures["refused"] != r.Figures["tried"] || r.Figures["tried"] < 4 {
		rec.dump(t)
		t.Fatalf("qp-states: %v", r.Figures)
	}
	var einval int
	for _, e := range rec.of(sandbox.EvError) {
		if e.ErrnoName == "EINVAL" && (e.Call == "ibv_post_send" || e.Call == "ibv_modify_qp") {
			einval++
		}
	}
	if einval < 4 {
		rec.dump(t)
		t.Errorf("%d EINVAL error events, want one per wrong-state attempt", einval)
	}
}

// testPingpong runs TCP, RDMA WRITE and SEND/RECV with polling and checks
// what each must show whatever the machine's load: sane figures (a median,
// a p99 not below it, the CPU it used) and a verdict that says what that
// mode does. Which is faster is a speed comparison, not a property: under
// TCG on a shared 2-core host two spinning pollers can lose to a sleeping
// read() (seen: WRITE 6237 µs vs TCP 1867 µs at load 15), and the verdicts
// follow whatever was measured. The ratios are measured by `make bench`
// (BenchmarkFidelity, pingpong against perftest on the same devices).
func testPingpong(t *testing.T, ex executor) {
	medians := map[string]float64{}
	for _, tr := range []string{"tcp", "write", "send"} {
		rec := ex.run(t, "pingpong", map[string]any{"transport": tr, "mode": "poll", "iterations": 300, "max_size": 2})
		f := rec.result(t).Figures
		if f["median_us"] <= 0 || f["p99_us"] < f["median_us"] || f["client_cpu_us"] <= 0 {
			rec.dump(t)
			t.Fatalf("%s: %v", tr, f)
		}
		medians[tr] = f["median_us"]
		// Each mode's verdict says what that mode does.
		r := rec.result(t)
		want := map[string]string{"tcp": "read() that sleeps", "write": "spins on the message's last byte", "send": "spin on their completion queue"}[tr]
		if !strings.Contains(r.Message, want) || r.Messages["zh"] == "" {
			t.Errorf("%s verdict %q does not say %q", tr, r.Message, want)
		}
	}
	t.Logf("median round trip, 2 B, this run: %v µs", medians)
}

func testPingpongEvent(t *testing.T, ex executor) {
	for _, tr := range []string{"write", "send"} {
		rec := ex.run(t, "pingpong", map[string]any{"transport": tr, "mode": "event", "iterations": 50, "max_size": 1024})
		r := rec.result(t)
		f := r.Figures
		for _, s := range []string{"2", "16", "128", "1024"} {
			if f["median_us_"+s] <= 0 || f["p90_us_"+s] < f["median_us_"+s] {
				rec.dump(t)
				t.Fatalf("%s event, %s B: %v", tr, s, f)
			}
		}
		// The events verdict speaks of sleeping and waking, not of polling.
		if !strings.Contains(r.Message, "sleeps on its completion channel") || strings.Contains(r.Message, "no wake-up when polling") {
			t.Errorf("%s event verdict: %q", tr, r.Message)
		}
		// Latency by message size: one median point per size, x = bytes,
		// emitted as each size finishes (before the result).
		var xs []float64
		for _, m := range rec.of(sandbox.EvMetric) {
			if m.Series == "rtt_median_us" {
				xs = append(xs, m.X)
			}
		}
		if fmt.Sprint(xs) != "[2 16 128 1024]" {
			rec.dump(t)
			t.Errorf("%s event: rtt_median_us points at x = %v, want one per size", tr, xs)
		}
	}
}

func testPerftest(t *testing.T, ex executor) {
	rec := ex.run(t, "perftest", map[string]any{"test": "write", "size": 2, "iterations": 200})
	f := rec.result(t).Figures
	if f["typical_us"] <= 0 || f["avg_us"] < f["min_us"] {
		rec.dump(t)
		t.Fatalf("perftest: %v", f)
	}
	t.Logf("ib_write_lat 2 B: %v", f)
}

// testResources runs every experiment many times (20, 2 with -short;
// RDMALAB_RESOURCE_ROUNDS sets it) in one machine and checks that the kernel's RDMA resource counts — what
// `rdma resource` prints — are back where they started, on the success
// paths and on the failures the experiments provoke.
func testResources(t *testing.T, ex executor) {
	// A round takes ~9 s in a TCG guest on a quiet machine (30–90 s when
	// the host's two cores are busy): RDMALAB_RESOURCE_ROUNDS lowers it.
	rounds := 20
	if testing.Short() {
		rounds = 2
	}
	if n, err := strconv.Atoi(os.Getenv("RDMALAB_RESOURCE_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	before := ex.run(t, "rdma-resource", nil).result(t).Figures
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
		{"ud-vs-rc", map[string]any{"size": 3000}},
		{"rdma-cm", map[string]any{"count": 1}},
	}
	for i := 0; i < rounds; i++ {
		for _, r := range runs {
			ex.run(t, r.id, r.raw)
		}
	}
	after := ex.run(t, "rdma-resource", nil).result(t).Figures
	if len(before) == 0 {
		t.Fatal("rdma-resource reported no devices")
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %v before %d rounds, %v after", k, v, rounds, after[k])
		}
	}
	t.Logf("rdma resource after %d rounds of %d runs: %v", rounds, len(runs), after)
}

// testUDvsRC: RC carries a message bigger than the MTU in several packets;
// UD puts a 40-byte GRH (with the IPv4 header in bytes 20–39) before the
// data, and a UD message bigger than the MTU never arrives.
func testUDvsRC(t *testing.T, ex executor) {
	rec := ex.run(t, "ud-vs-rc", map[string]any{"size": 3000})
	r := rec.result(t)
	f := r.Figures
	t.Logf("ud-vs-rc: %v", f)
	if r.OK == nil || !*r.OK {
		rec.dump(t)
		t.Fatalf("verdict not ok: %s", r.Message)
	}
	mtu := f["mtu"]
	if mtu < 256 || f["rc_byte_len"] != 3000 || f["rc_ok"] != 1 {
		rec.dump(t)
		t.Fatalf("RC: %v", f)
	}
	if want := float64(int((3000 + mtu - 1) / mtu)); f["rc_packets"] != want {
		t.Errorf("RC sent %v packets for 3000 bytes at MTU %v, want %v", f["rc_packets"], mtu, want)
	}
	if f["ud_byte_len"] != 64+40 || f["ud_grh"] != 1 || f["ud_payload_after_grh"] != 1 || f["ud_src_qp_matches"] != 1 || f["ud_grh_ipv4"] != 1 {
		rec.dump(t)
		t.Fatalf("UD receive: %v", f)
	}
	if f["ud_big_arrived"] != 0 || f["ud_big_packets"] != 0 {
		rec.dump(t)
		t.Fatalf("a 3000-byte UD message at MTU %v: arrived %v, packets %v", mtu, f["ud_big_arrived"], f["ud_big_packets"])
	}
	// A receive buffer of exactly the message size has no room for the
	// GRH: the receive completes with an error, the data is not
	// delivered and the QP goes to ERROR. The status is rxe's own on the
	// guest's Linux 6.1: IBV_WC_LOC_QP_OP_ERR (rxe_resp.c files the failed
	// copy as a malformed WQE), where the spec and mlx5 say LOC_LEN_ERR.
	if f["ud_exact_error"] != 1 || f["ud_exact_data_delivered"] != 0 || f["ud_exact_qp_error"] != 1 {
		rec.dump(t)
		t.Fatalf("a 64-byte UD message into a 64-byte receive buffer: error %v (status %v), delivered %v, QP in ERROR %v", f["ud_exact_error"], f["ud_exact_recv_status"], f["ud_exact_data_delivered"], f["ud_exact_qp_error"])
	}
	if st := verbs.WCStatus(f["ud_exact_recv_status"]); st != verbs.WCLocQPOpErr && st != verbs.WCLocLenErr {
		t.Errorf("exact-size UD receive completed with %v; rxe on 6.1 says LOC_QP_OP_ERR, the spec LOC_LEN_ERR", st)
	}
	t.Logf("exact-size UD receive: status %v, %v bytes of the buffer changed", verbs.WCStatus(f["ud_exact_recv_status"]), f["ud_exact_bytes_changed"])
	// a size that fits arrives over UD as well, and the verdict says so
	rec = ex.run(t, "ud-vs-rc", map[string]any{"size": 512})
	if f := rec.result(t).Figures; f["ud_big_arrived"] != 1 {
		rec.dump(t)
		t.Fatalf("512 bytes over UD did not arrive: %v", f)
	}
}

// testRDMACM: rping connects through the CM; both sides see ESTABLISHED
// and every ping goes through.
func testRDMACM(t *testing.T, ex executor) {
	rec := ex.run(t, "rdma-cm", map[string]any{"count": 3})
	r := rec.result(t)
	f := r.Figures
	t.Logf("rdma-cm: %v", f)
	if r.OK == nil || !*r.OK || f["established"] != 2 || f["pings"] != 3 {
		rec.dump(t)
		t.Fatalf("rdma-cm: %s %v", r.Message, f)
	}
	// "connected with N CM events" counts the connect, not the
	// disconnect's events (issue 44 item 7)
	if f["connect_events"]+f["disconnect_events"] != f["cm_events"] || f["disconnect_events"] < 1 ||
		!strings.Contains(r.Message, fmt.Sprintf("connected with %v CM events", f["connect_events"])) {
		t.Errorf("rdma-cm's event count: %v; verdict %q", f, r.Message)
	}
	var rows []string
	for _, tb := range rec.of(sandbox.EvTable) {
		for _, row := range tb.Table.Rows {
			rows = append(rows, row[1])
		}
	}
	for _, want := range []string{"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ROUTE_RESOLVED", "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_ESTABLISHED"} {
		if !slices.Contains(rows, want) {
			t.Errorf("no %s among the CM events %v", want, rows)
		}
	}
}

// testSyscalls checks what the syscalls experiment teaches, per round trip
// and side: kernel TCP makes a write() and a read() on its socket; rxe makes
// one write() doorbell on the uverbs file per post and no other system call
// on the message path, however many times it polls the CQ.
func testSyscalls(t *testing.T, ex executor) {
	rec := ex.run(t, "syscalls", map[string]any{"round_trips": 100, "size": 64, "mode": "poll"})
	r := rec.result(t)
	f := r.Figures
	t.Logf("syscalls poll: %v", f)
	near := func(v, want float64) bool { return v >= want-0.05 && v <= want+0.05 }
	for _, side := range []string{"client", "server"} {
		tcp := "tcp_" + side + "_"
		if !near(f[tcp+"write_per_rt"], 1) || !near(f[tcp+"read_per_rt"], 1) || !near(f[tcp+"message_per_rt"], 2) {
			rec.dump(t)
			t.Errorf("TCP %s: write %v, read %v, all %v per round trip; want 1, 1, 2", side, f[tcp+"write_per_rt"], f[tcp+"read_per_rt"], f[tcp+"message_per_rt"])
		}
		rd := "send_" + side + "_"
		if !near(f[rd+"write_per_rt"], 1) || f[rd+"nonwrite_message_per_rt"] != 0 {
			rec.dump(t)
			t.Errorf("rxe %s: %v doorbell write()s and %v other message-path calls per round trip; want 1 and 0", side, f[rd+"write_per_rt"], f[rd+"nonwrite_message_per_rt"])
		}
		if f[rd+"polls_per_rt"] < 1 {
			t.Errorf("rxe %s: %v ibv_poll_cq per round trip; a round trip polls at least once", side, f[rd+"polls_per_rt"])
		}
	}
	if !strings.Contains(r.Messages["zh"], "MMIO") || !strings.Contains(r.Message, "MMIO") {
		t.Errorf("verdict does not give the hardware reference: %q", r.Message)
	}
	// Progress inside each leg (issue 30 item 10: 45 s without a sign):
	// the leg's phase again, from starting to the last round trip counted.
	for _, tr := range []string{trTCP, trSend} {
		var said []string
		for _, ev := range rec.of(sandbox.EvPhase) {
			if ev.Name == "count-"+tr {
				said = append(said, ev.Messages["en"])
				if !strings.Contains(ev.Messages["zh"], "统计") {
					t.Errorf("%s progress without its Chinese: %v", tr, ev.Messages)
				}
			}
		}
		if len(said) < 4 || !strings.HasSuffix(said[0], "starting both sides") ||
			!strings.Contains(strings.Join(said, "\n"), ": 0 of 100 round trips under strace") ||
			!strings.Contains(said[len(said)-1], "100 of 100 round trips under strace; strace detaches") {
			t.Errorf("%s leg's progress: %q", tr, said)
		}
	}
	// every figure the verdict quotes stands in a table (issue 44 item 7:
	// the mean ibv_poll_cq per round trip did not)
	checkVerdictFigures(t, rec)
}

// testSyscallsEvent: with completion events rxe's message path grows the
// CQ arming write() and the poll()+read() on the completion channel.
func testSyscallsEvent(t *testing.T, ex executor) {
	rec := ex.run(t, "syscalls", map[string]any{"round_trips": 50, "size": 64, "mode": "event"})
	f := rec.result(t).Figures
	t.Logf("syscalls event: %v", f)
	// How often a side finds its CQ empty and sleeps depends on timing
	// (under load the client slept on most round trips, on a quiet
	// machine on 42 %), so what must hold is the accounting: the doorbell
	// write() on every round trip, some sleeps, and each sleep costing a
	// ppoll() and a read() on top of the doorbell.
	cw, cr, cm := f["send_client_write_per_rt"], f["send_client_read_per_rt"], f["send_client_message_per_rt"]
	if cw < 0.95 || cr <= 0 || cm < cw+2*cr-0.01 {
		rec.dump(t)
		t.Errorf("rxe events, client: write %v, read %v, all %v per round trip; want 1 write, some sleeps (ppoll+read each) on top", cw, cr, cm)
	}
	if f["send_server_write_per_rt"] < 0.95 {
		t.Errorf("rxe events, server: %v doorbell write()s per round trip, want 1", f["send_server_write_per_rt"])
	}
}

// testPingpongPresets runs the lesson's presets with their defaults (150
// round trips per size, 2 B to 16 KiB) and logs how long each took: the
// aim is about 10 s each in the TCG guest (`make bench` is where speed is
// judged; this test checks the defaults give a full, sane table).
func testPingpongPresets(t *testing.T, ex executor) {
	for _, ps := range registry().Get("pingpong").Presets {
		t0 := time.Now()
		rec := ex.run(t, "pingpong", ps.Values)
		f := rec.result(t).Figures
		for _, size := range []string{"2", "16", "128", "1024", "8192", "16384"} {
			// Every size costs both threads some CPU: a polling side
			// spins through the whole window, which is read whole
			// because the guest's thread CPU clock runs in steps (see
			// cpuPerRT).
			if f["median_us_"+size] <= 0 || f["p90_us_"+size] < f["median_us_"+size] || f["cpu_us_"+size] <= 0 {
				rec.dump(t)
				t.Fatalf("preset %s, %s B: %v", ps.ID, size, f)
			}
		}
		t.Logf("preset %s: %.1f s, 2 B median %.0f µs (p90 %.0f), 16 KiB median %.0f µs, CPU/RT at 2 B client %.0f server %.0f µs",
			ps.ID, time.Since(t0).Seconds(), f["median_us_2"], f["p90_us_2"], f["median_us_16384"], f["client_cpu_us"], f["server_cpu_us"])
	}
}
