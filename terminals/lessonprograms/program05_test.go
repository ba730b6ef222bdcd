package lessonprograms

import (
	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/machines/vmproto"
)

// lesson05Programs is the guest suite of lesson 05's exercise (rnr-retry),
// in the guest TestLessonPrograms booted: the solution passes twice, once
// per language, each time after RNR NAKs rxe0 and rxe1 both counted; the
// starter (rnr_retry 0) and the solution with rnr_retry 6 fail naming
// IBV_WC_RNR_RETRY_EXC_ERR; a program that only prints fails naming what
// the peer did not get; and a peer that never posts its RECV ends the
// solution at its poll deadline, in a visible error, well within its
// time limit.
func lesson05Programs(t *testing.T, course *lessons.Course, run func(*lessons.Program, []byte, string) (vmproto.ProgramEnd, *vmtest.Events)) {
	t.Helper()
	l := course.Lesson("05-see-the-wire")
	if l == nil || len(l.Programs) != 1 || l.Programs[0].ID != "rnr-retry" {
		t.Fatalf("lesson 05-see-the-wire with the program rnr-retry: %v", l)
	}
	p := l.Programs[0]
	// The check quotes the counters' deltas: "rxe1 sent N RNR NAKs".
	naks := regexp.MustCompile(`rxe1 (?:sent|发出了) (\d+) `)
	for _, lang := range []string{"zh", "en"} {
		end, _ := run(p, p.Solution, lang)
		m := naks.FindStringSubmatch(string(end.Check))
		if end.Stage != "check" || !end.Passed || m == nil || m[1] == "0" {
			t.Errorf("%s solution (%s): stage %s passed %v: %s; want passed after RNR NAKs", p.ID, lang, end.Stage, end.Passed, end.Check)
		}
	}
	end, _ := run(p, p.Starter, "zh")
	if end.Stage != "check" || end.Passed || !strings.Contains(string(end.Check), "IBV_WC_RNR_RETRY_EXC_ERR") {
		t.Errorf("%s starter (zh): stage %s passed %v, check %q; want compiled and failed naming IBV_WC_RNR_RETRY_EXC_ERR", p.ID, end.Stage, end.Passed, end.Check)
	}
	if !strings.ContainsFunc(string(end.Check), func(r rune) bool { return r >= 0x4e00 && r <= 0x9fff }) {
		t.Errorf("%s starter (zh): the check's hint %q is not in zh", p.ID, end.Check)
	}
	// The largest finite count: 6 retries of the peer's 0.64 ms (one
	// tick or more on rxe) end long before its RECV, 300 ms late.
	six := strings.Replace(string(p.Solution), ".rnr_retry = 7,", ".rnr_retry = 6,", 1)
	if six == string(p.Solution) {
		t.Fatalf("%s's solution no longer has .rnr_retry = 7,", p.ID)
	}
	end, c := run(p, []byte(six), "en")
	if end.Stage != "check" || end.Passed || !strings.Contains(string(end.Check), "IBV_WC_RNR_RETRY_EXC_ERR") ||
		!strings.Contains(c.Text("stderr"), "RNR retry counter exceeded") {
		t.Errorf("%s's solution with rnr_retry 6: stage %s passed %v, stderr %q, check %q; want it failed with IBV_WC_RNR_RETRY_EXC_ERR", p.ID, end.Stage, end.Passed, c.Text("stderr"), end.Check)
	}
	// The solution's lines, and no exchange, no QP.
	fake := `#include <stdio.h>
int main(void){ puts("the peer's QP 17, PSN 7000, token 1234abcd");
puts("SEND of \"token 1234abcd\" completed after 312 ms: success; rxe0 received 31 RNR NAKs (rcvd_rnr_err)"); return 0; }`
	end, _ = run(p, []byte(fake), "en")
	if end.Stage != "check" || end.Passed || !strings.Contains(string(end.Check), "got nothing on its TCP socket") {
		t.Errorf("%s, a program that only prints: stage %s passed %v, check %q; want it failed saying %q", p.ID, end.Stage, end.Passed, end.Check, "got nothing on its TCP socket")
	}
	// A peer that never posts its RECV: rnr_retry 7 keeps the SEND
	// retrying, and only the poll deadline ends the program.
	never := *p
	late := "if (first_nak && now_ms() - first_nak >= LATE_MS) {"
	never.Peer = []byte(strings.Replace(string(p.Peer), late, "if (0) {", 1))
	if string(never.Peer) == string(p.Peer) {
		t.Fatalf("the RNR peer no longer has %s", late)
	}
	end, c = run(&never, p.Solution, "en")
	// rxe resets retry_cnt only on an ACK: the ACK timeouts that expire
	// during the RNR waits may spend it first, and the SEND then ends in
	// IBV_WC_RETRY_EXC_ERR before the deadline (the lesson says so).
	stderr := c.Text("stderr")
	ended := strings.Contains(stderr, "no completion after 5 s") || strings.Contains(stderr, "transport retry counter exceeded")
	if end.Passed || end.TimedOut || end.Exit != 1 || !ended || end.Millis.Run >= int64(p.Config.Timeout)*1000 {
		t.Errorf("%s's solution against a peer that never posts: passed %v, timed out %v, exit %d after %d ms (limit %d s), stderr %q; want exit 1 at its deadline or after its transport retries, in time",
			p.ID, end.Passed, end.TimedOut, end.Exit, end.Millis.Run, p.Config.Timeout, stderr)
	}
}
