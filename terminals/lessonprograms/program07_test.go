package lessonprograms

import (
	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/machines/vmproto"
)

// lesson07Programs is the guest suite of lesson 07's exercises, in the
// guest TestLessonPrograms booted: each solution passes, each starter
// compiles and fails, a program that only prints fails naming what the
// kernel or the peer did not see, and a solution with one mistake a
// learner makes (no lock, no htonl, the answer on the wrong QP) fails
// with the check naming that mistake: the checks judge what the peer and
// the kernel saw. A peer that never releases the lock ends the solution
// in a visible error, not a hang.
func lesson07Programs(t *testing.T, course *lessons.Course, run func(*lessons.Program, []byte, string) (vmproto.ProgramEnd, *vmtest.Events)) {
	t.Helper()
	l := course.Lesson("07-beyond-send-write")
	if l == nil || len(l.Programs) != 3 {
		t.Fatalf("lesson 07-beyond-send-write with the programs cas-lock, imm-signal and srq-server: %v", l)
	}
	fakes := map[string]struct{ src, want string }{
		// the solution's lines, and no connection, no atomics
		"cas-lock": {`#include <stdio.h>
int main(void){ puts("connected to the peer's QP 17; lock at 0x1000, counter at 0x2000");
puts("50 increments under the lock, 77 CAS to acquire it (27 found it taken)"); return 0; }`,
			"saw none of your increments"},
		// the completion the peer would see, and no WRITE
		"imm-signal": {`#include <stdio.h>
int main(void){ puts("connected to the peer's QP 17; its buffer: addr 0x1000, rkey 0x1");
puts("WRITE_WITH_IMM of 11 bytes, immediate 11, completed: success");
puts("completion 1: status success, opcode RECV_RDMA_WITH_IMM, imm yes, imm_data 11 (ntohl), byte_len 11"); return 0; }`,
			"got no completion"},
		// the answers the clients would get, and no SRQ
		"srq-server": {`#include <stdio.h>
int main(void){ puts("SRQ of 4 receives, QPs 17 18 19 connected to the peer's clients");
for (int c = 0; c < 3; c++) for (int m = 0; m < 3; m++) printf("QP %d (client %d): pong %d.%d 1234abcd\n", 17 + c, c, c, m);
puts("9 requests answered"); return 0; }`,
			"saw no ibv_create_srq"},
	}
	// One mistake each, made in the solution: the check must name it.
	mistakes := map[string]struct{ from, to, want string }{
		// READ, +1, WRITE without the lock: the peer's view catches it
		"cas-lock": {"\t\tif (acquire(&c, &tries))\n\t\t\tbreak;\n\t\tint bad = increment(&c);\n\t\t/* Release even after a failed increment, if the QP still can. */\n\t\tif (release(&c) || bad)",
			"\t\tint bad = increment(&c);\n\t\tif (bad)", "Mutual exclusion broken|Lost updates"},
		// the immediate in host byte order
		"imm-signal": {".imm_data = htonl(sizeof msg)", ".imm_data = sizeof msg", "bytes are reversed"},
		// every answer on the next client's QP
		"srq-server": {"ibv_post_send(qp[c], &wr, &bad)", "ibv_post_send(qp[(c + 1) % CLIENTS], &wr, &bad)", "went out on the wrong QP"},
	}
	for i, p := range l.Programs {
		solLang, startLang := "en", "zh"
		if i%2 == 1 {
			solLang, startLang = "zh", "en"
		}
		end, _ := run(p, p.Solution, solLang)
		if end.Stage != "check" || !end.Passed {
			t.Errorf("%s solution (%s): stage %s passed %v: %s", p.ID, solLang, end.Stage, end.Passed, end.Check)
		}
		end, _ = run(p, p.Starter, startLang)
		if end.Stage != "check" || end.Passed {
			t.Errorf("%s starter (%s): stage %s passed %v; want compiled and failed", p.ID, startLang, end.Stage, end.Passed)
		}
		if hasHan := strings.ContainsFunc(string(end.Check), func(r rune) bool { return r >= 0x4e00 && r <= 0x9fff }); hasHan != (startLang == "zh") {
			t.Errorf("%s starter (%s): the check's hint %q is not in %s", p.ID, startLang, end.Check, startLang)
		}
		f, ok := fakes[p.ID]
		if !ok {
			t.Errorf("no do-nothing program for exercise %s", p.ID)
			continue
		}
		end, _ = run(p, []byte(f.src), "en")
		if end.Stage != "check" || end.Passed || !strings.Contains(string(end.Check), f.want) {
			t.Errorf("%s, a program that only prints: stage %s passed %v, check %q; want it failed saying %q", p.ID, end.Stage, end.Passed, end.Check, f.want)
		}
		m, ok := mistakes[p.ID]
		if !ok {
			t.Errorf("no mistaken solution for exercise %s", p.ID)
			continue
		}
		wrong := strings.Replace(string(p.Solution), m.from, m.to, 1)
		if wrong == string(p.Solution) {
			t.Fatalf("%s's solution no longer has %q", p.ID, m.from)
		}
		end, _ = run(p, []byte(wrong), "en")
		named := false
		for _, w := range strings.Split(m.want, "|") {
			named = named || strings.Contains(string(end.Check), w)
		}
		if end.Stage != "check" || end.Passed || !named {
			t.Errorf("%s's solution with a mistake (%q): stage %s passed %v, check %q; want it failed saying %q", p.ID, m.to, end.Stage, end.Passed, end.Check, m.want)
		}
	}
	// A peer that takes the lock and never gives it back: the solution's
	// bounded CAS tries end it with the reason in sight, well within its
	// time limit, never a hang.
	cp := l.Programs[0]
	if cp.ID != "cas-lock" {
		t.Fatalf("program 1 is %s, want cas-lock", cp.ID)
	}
	greedy := *cp
	release := "if (cas(PEER_ID, 0, &old))"
	greedy.Peer = []byte(strings.Replace(string(cp.Peer), release, "if (0)", 1))
	if string(greedy.Peer) == string(cp.Peer) {
		t.Fatalf("the CAS peer no longer has %s", release)
	}
	end, c := run(&greedy, cp.Solution, "en")
	if end.Passed || end.TimedOut || end.Exit != 1 || !strings.Contains(c.Text("stderr"), "the lock stayed taken") ||
		end.Millis.Run >= int64(cp.Config.Timeout)*1000 {
		t.Errorf("cas-lock's solution against a peer that keeps the lock: passed %v, timed out %v, exit %d after %d ms (limit %d s), stderr %q; want exit 1 saying %q in time",
			end.Passed, end.TimedOut, end.Exit, end.Millis.Run, cp.Config.Timeout, c.Text("stderr"), "the lock stayed taken")
	}
}
