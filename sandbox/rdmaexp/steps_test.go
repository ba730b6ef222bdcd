package rdmaexp

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// stepDriver sends commands to an interactive run and waits for the step
// event each one produces.
type stepDriver struct {
	t    *testing.T
	rec  *recorder
	cmds chan sandbox.Command
	done <-chan error
	seen int
	// offers are what the last step offered: the run ignores any other
	// command (it says so and waits on, until its idle limit tears it
	// down), so do refuses to send one.
	offers []string
	// ended holds the run's end once wait has taken it from done (the
	// last step's event and the end can arrive together).
	ended  bool
	endErr error
}

func startSteps(t *testing.T, ex executor) *stepDriver {
	return startStepsCtx(context.Background(), t, ex)
}

func startStepsCtx(ctx context.Context, t *testing.T, ex executor) *stepDriver {
	cmds := make(chan sandbox.Command)
	rec, done := ex.interact(ctx, t, "verbs-steps", cmds)
	d := &stepDriver{t: t, rec: rec, cmds: cmds, done: done}
	d.wait() // the "start" step
	return d
}

// wait returns the next step event.
func (d *stepDriver) wait() sandbox.Event {
	d.t.Helper()
	for {
		if evs := d.rec.of(sandbox.EvStep); len(evs) > d.seen {
			d.seen++
			d.offers = evs[d.seen-1].Offers
			return evs[d.seen-1]
		}
		if d.ended {
			d.rec.dump(d.t)
			d.t.Fatalf("the run ended while a step was awaited: %v", d.endErr)
		}
		select {
		case err := <-d.done:
			// Look once more before failing: the step may have come
			// in just before the end.
			d.ended, d.endErr = true, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (d *stepDriver) do(cmd string) sandbox.Event {
	d.t.Helper()
	if !slices.Contains(d.offers, cmd) {
		// the run would ignore it and tear down only at its idle limit
		// (3.5 min), whose teardown step must not pass for cmd's
		d.t.Fatalf("%s is not offered at this step (offers %v)", cmd, d.offers)
	}
	d.cmds <- sandbox.Command{Cmd: cmd}
	ev := d.wait()
	d.t.Logf("%-10s → %-11s %s ok=%v offers=%v", cmd, ev.Name, ev.ErrnoName, *ev.OK, ev.Offers)
	checkStepZh(d.t, ev)
	return ev
}

// zhProse finds two English words in a row, outside quotation marks: what
// a Chinese step should not show (C names, statuses and figures may stay).
var (
	zhProse  = regexp.MustCompile(`(?:^|[\s(（])[A-Za-z][a-z]+[ ,]+[A-Za-z][a-z]+(?:$|[\s,.;:)）])`)
	zhQuoted = regexp.MustCompile(`"[^"]*"|“[^”]*”`)
)

// checkStepZh fails when a step's title, explanation or table reads as
// English prose in Chinese.
func checkStepZh(t *testing.T, ev sandbox.Event) {
	t.Helper()
	texts := []string{ev.Messages["zh"], ev.Detail["zh"]}
	if tb := ev.Table.In("zh"); tb != nil {
		texts = append(texts, tb.Title)
		texts = append(texts, tb.Columns...)
		for _, r := range tb.Rows {
			texts = append(texts, r...)
		}
	}
	for _, s := range texts {
		if m := zhProse.FindString(zhQuoted.ReplaceAllString(s, "")); m != "" {
			t.Errorf("step %s in zh shows English %q in %q", ev.Name, m, s)
		}
	}
}

func (d *stepDriver) expect(cmd, step, status string) sandbox.Event {
	d.t.Helper()
	ev := d.do(cmd)
	if ev.Name != step || ev.ErrnoName != status || (status == "") != *ev.OK {
		d.rec.dump(d.t)
		d.t.Fatalf("%s: step %s status %q ok %v, want step %s status %q", cmd, ev.Name, ev.ErrnoName, *ev.OK, step, status)
	}
	return ev
}

func field(ev sandbox.Event, name string) string {
	for _, r := range ev.Table.Rows {
		if r[0] == name {
			return r[1]
		}
	}
	return ""
}

func (d *stepDriver) finish() {
	d.t.Helper()
	err := d.endErr
	if !d.ended {
		select {
		case err = <-d.done:
		case <-time.After(time.Minute):
			d.t.Fatal("the run did not end after teardown")
		}
	}
	if err != nil {
		d.rec.dump(d.t)
		d.t.Fatalf("verbs-steps: %v", err)
	}
}

// testVerbsSteps walks the step-through as a learner would: every mistake
// the lesson names, with the status the device must answer, a reconnect
// after each, and an abandoned run that cleans up by itself. The kernel's
// resource counts are the same after as before.
func testVerbsSteps(t *testing.T, ex executor) {
	before := ex.run(t, "rdma-resource", nil).result(t).Figures

	d := startSteps(t, ex)
	for _, s := range []string{"open", "pd", "mr", "cq", "qp", "init", "exchange"} {
		ev := d.expect("next", s, "")
		if ev.Code == "" || ev.Detail["zh"] == "" || ev.Detail["en"] == "" || !slices.Contains(ev.Offers, "next") {
			t.Fatalf("step %s: code %q, detail %v, offers %v", s, ev.Code, ev.Detail, ev.Offers)
		}
		if s == "mr" && (field(ev, "mr->lkey") == "" || field(ev, "mr->rkey") == "") {
			t.Fatalf("mr step shows no keys: %v", ev.Table.Rows)
		}
		if s == "qp" && !strings.HasPrefix(field(ev, "qp->qp_num"), "0x") {
			t.Fatalf("qp step shows no QP number: %v", ev.Table.Rows)
		}
	}
	ev := d.expect("wrong-qpn", "rtr", "")
	if !slices.Contains(ev.Offers, "post-early") || !slices.Contains(ev.Offers, "few-rnr") {
		t.Fatalf("after RTR the offers are %v", ev.Offers)
	}
	d.expect("post-early", "rts", "EINVAL")
	d.expect("next", "rts", "")
	d.expect("next", "write", "")
	// the wrong remote QPN shows at the first WRITE: retries, then
	// transport retry counter exceeded
	ev = d.expect("next", "poll-write", "IBV_WC_RETRY_EXC_ERR")
	if field(ev, "our QP state now") != "ERROR" || !slices.Equal(ev.Offers, []string{"reconnect", "finish"}) {
		t.Fatalf("after the failed WRITE: state %q, offers %v", field(ev, "our QP state now"), ev.Offers)
	}
	d.expect("reconnect", "reconnect", "")
	d.expect("write-oob", "write", "")
	d.expect("next", "poll-write", "IBV_WC_REM_ACCESS_ERR")
	d.expect("reconnect", "reconnect", "")
	d.expect("next", "write", "")
	ev = d.expect("next", "poll-write", "")
	if !strings.Contains(field(ev, "peer's memory now"), "written by an RDMA WRITE") {
		t.Fatalf("the peer's memory after the WRITE: %q", field(ev, "peer's memory now"))
	}
	d.expect("next", "send", "")
	ev = d.expect("next", "poll-send", "")
	if field(ev, "peer: wc.opcode") != "IBV_WC_RECV" || field(ev, "peer: wc.byte_len") != fmt.Sprint(len(stepSend)) {
		t.Fatalf("the peer's receive completion: %v", ev.Table.Rows)
	}
	ev = d.expect("next", "teardown", "")
	if len(ev.Offers) != 0 {
		t.Errorf("offers after teardown: %v", ev.Offers)
	}
	d.finish()

	// too few RNR retries: the late RECV makes the SEND fail
	d = startSteps(t, ex)
	for _, s := range []string{"open", "pd", "mr", "cq", "qp", "init", "exchange", "rtr"} {
		d.expect("next", s, "")
	}
	d.expect("few-rnr", "rts", "")
	// a reconnect for another mistake keeps rnr_retry 0, whose effect has
	// not shown yet (it used to reset it: the SEND then just worked)
	d.expect("write-oob", "write", "")
	d.expect("next", "poll-write", "IBV_WC_REM_ACCESS_ERR")
	ev = d.expect("reconnect", "reconnect", "")
	if field(ev, "rnr_retry") != "0" || !strings.Contains(ev.Detail["en"], "rnr_retry stays 0") || !strings.Contains(ev.Detail["zh"], "rnr_retry 仍是你在 RTS 时设的 0") {
		t.Fatalf("a reconnect after the WRITE's failure: rnr_retry %q, detail %v", field(ev, "rnr_retry"), ev.Detail)
	}
	d.expect("next", "write", "")
	d.expect("next", "poll-write", "")
	d.expect("next", "send", "")
	d.expect("next", "poll-send", "IBV_WC_RNR_RETRY_EXC_ERR")
	// the RNR failure itself is what the next reconnect repairs
	ev = d.expect("reconnect", "reconnect", "")
	if field(ev, "rnr_retry") != "7" || strings.Contains(ev.Detail["en"], "rnr_retry stays") {
		t.Fatalf("a reconnect after the RNR failure: rnr_retry %q, detail %v", field(ev, "rnr_retry"), ev.Detail)
	}
	d.expect("next", "send", "")
	if ev := d.expect("next", "poll-send", ""); !slices.Equal(ev.Offers, []string{"next"}) {
		t.Fatalf("after the SEND's completion the offers are %v, want only next (teardown)", ev.Offers)
	}
	d.expect("next", "teardown", "")
	d.finish()

	// finished early, as the Finish button does: what was created is
	// freed in reverse order, what was not is said so
	d = startSteps(t, ex)
	for _, s := range []string{"open", "pd", "mr"} {
		d.expect("next", s, "")
	}
	ev = d.expect("finish", "teardown", "")
	if field(ev, "ibv_destroy_qp(qp)") != "not created" || field(ev, "ibv_dereg_mr(mr)") != "0" || field(ev, "ibv_dealloc_pd(pd)") != "0" || len(ev.Offers) != 0 {
		t.Fatalf("finished after the MR: %v, offers %v", ev.Table.Rows, ev.Offers)
	}
	d.finish()

	// abandoned half way: the stream closes, the run tears down and ends
	d = startSteps(t, ex)
	for _, s := range []string{"open", "pd", "mr", "cq", "qp"} {
		d.expect("next", s, "")
	}
	close(d.cmds)
	if ev := d.wait(); ev.Name != "teardown" || !*ev.OK {
		t.Fatalf("an abandoned run's last step: %s ok %v", ev.Name, *ev.OK)
	}
	d.finish()

	// cancelled half way, as the Cancel button does: the agent's process
	// is killed with the objects it holds, and the kernel frees them
	ctx, cancel := context.WithCancel(context.Background())
	d = startStepsCtx(ctx, t, ex)
	for _, s := range []string{"open", "pd", "mr", "cq", "qp", "init", "exchange"} {
		d.expect("next", s, "")
	}
	cancel()
	if err := <-d.done; err == nil {
		t.Error("a cancelled walk ended without an error")
	}

	after := ex.run(t, "rdma-resource", nil).result(t).Figures
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %v before the step-throughs, %v after", k, v, after[k])
		}
	}
}

// TestStepCellsInChinese: the step tables' values made of figures and
// English words (errno and completion descriptions, units) read as Chinese
// in the zh table, and C names stay as they are.
func TestStepCellsInChinese(t *testing.T) {
	tb := stepTable([][]string{
		{"returned", "EINVAL (Invalid argument)"},
		{"ours: wc.status", "IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded)"},
		{"timeout", "14 (≈ 67 ms per try)"},
		{"kernel's QP count", "3 on rxe1 (every process)"},
		{"port.active_mtu", "1024 bytes"},
		{"rxe1 counter rcvd_rnr_err", "+2"},
		{"mr->lkey", "0x1234"},
		{"peer's memory now", `"written by an RDMA WRITE\x00"`},
	}).In("zh")
	want := [][]string{
		{"返回值", "EINVAL（参数无效）"},
		{"本端：wc.status", "IBV_WC_RETRY_EXC_ERR（传输重试次数超限）"},
		{"timeout", "14（每次尝试约 67 ms）"},
		{"内核的 QP 计数", "rxe1 上共 3 个（所有进程）"},
		{"port.active_mtu", "1024 字节"},
		{"rxe1 的计数器 rcvd_rnr_err", "+2"},
		{"mr->lkey", "0x1234"},
		{"对端内存现在的内容", `“written by an RDMA WRITE\x00”`},
	}
	for i, r := range tb.Rows {
		if !slices.Equal(r, want[i]) {
			t.Errorf("row %d in zh: %q, want %q", i, r, want[i])
		}
	}
}
