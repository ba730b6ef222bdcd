package lessonprograms

import (
	"context"
	"fmt"
	"github.com/rdmalab/rdmalab/terminals/terminal"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/machines/vmproto"
	"github.com/rdmalab/rdmalab/sandbox"

	"github.com/rdmalab/rdmalab/machines/vm"

	"github.com/rdmalab/rdmalab/machines/vm/vmtest"

	"github.com/rdmalab/rdmalab"
)

// TestLessonPrograms is the guest suite of lesson 04's :::program
// exercises, and then lessons 03, 05, 06, 07 and 09's (lesson03Programs …), in one learner guest: every solution compiles, runs and
// passes its check, every starter compiles and fails it, with the check's
// words in zh and en; then the abuse cases end bounded and the guest
// still answers.
func TestLessonPrograms(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a guest")
	}
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := course.Lesson("04-first-program")
	if l == nil || len(l.Programs) < 4 {
		t.Fatalf("lesson 04-first-program with 4 programs: %v", l)
	}
	cfg := testConfig(t)
	cfg.Dir = vmtest.OwnCache(t)
	cfg.Accel = vm.AccelTCG
	terms := &terminal.Terminals{Cfg: cfg, Max: 1, Spares: -1}
	defer terms.Close()
	ctx := context.Background()
	if _, err := terms.RunProgram(ctx, "learner-p", l.Programs[0].Request(l.Programs[0].Solution), "en", func(sandbox.Event) {}); err != rdmalab.ErrNoTerminal {
		t.Fatalf("a program without a session: %v, want rdmalab.ErrNoTerminal", err)
	}
	a, err := terms.Attach(ctx, "learner-p", 24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Detach()
	run := func(p *lessons.Program, src []byte, lang string) (vmproto.ProgramEnd, *vmtest.Events) {
		t.Helper()
		c := &vmtest.Events{}
		end, err := terms.RunProgram(ctx, "learner-p", p.Request(src), lang, c.Emit)
		if err != nil {
			t.Fatalf("%s (%s): %v", p.ID, lang, err)
		}
		t.Logf("%s (%s): stage %s exit %d passed %v (%s), compile %d ms, run %d ms\ncompiler: %s\nstdout: %s\nstderr: %s\npeer: %s\ncheck: %s",
			p.ID, lang, end.Stage, end.Exit, end.Passed, end.Detail, end.Millis.Compile, end.Millis.Run,
			end.Compiler, c.Text("stdout"), c.Text("stderr"), c.Text("peer"), end.Check)
		checkPeerZh(t, p, c.Text("peer")) // peerzh_test.go
		return end, c
	}
	// Each program's solution in one language and its starter in the
	// other, swapped from one program to the next: both languages meet
	// both kinds, at half the guest time of all four per program.
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
	}
	p := l.Programs[0]
	// A compile error: the compiler's line comes back, the program never runs.
	end, _ := run(p, []byte("int main(void)\n{\n\tint x = ; return x; }\n"), "en")
	if end.Stage != "compile" || !strings.Contains(string(end.Compiler), "main.c:3:") {
		t.Errorf("compile error: stage %s, compiler %q; want stage compile and main.c:3:", end.Stage, end.Compiler)
	}
	// A program that does no RDMA work but prints what each check might
	// look for fails, and the check says what was missing: the checks
	// judge what the kernel, the device and the peer saw, never the text.
	fakes := map[string]struct{ src, want string }{
		// the right GID, read from sysfs, and the name of the verb
		"open-device": {`#include <stdio.h>
int main(void){ char g[64] = ""; FILE *f = fopen("/sys/class/infiniband/rxe0/ports/1/gids/1", "r");
if (f) { fscanf(f, "%63s", g); fclose(f); }
printf("port 1: state PORT_ACTIVE, active MTU 1024 bytes\nibv_query_gid GID[1]: %s\n", g); return 0; }`, "open no RDMA device"},
		// keys and errno=12 without a registration
		"reg-mr": {`#include <stdio.h>
int main(void){ puts("registered 4096 bytes: lkey=0x1234 rkey=0x5678 ibv_reg_mr ibv_reg_mr");
puts("RLIMIT_MEMLOCK is 8388608 bytes; registering 16777216 bytes");
puts("ibv_reg_mr failed: errno=12 (Cannot allocate memory)"); return 0; }`, "saw no memory registration"},
		// the success line of the solution, and no WRITE
		"rdma-write": {`#include <stdio.h>
int main(void){ puts("connected to the peer's QP 17; its buffer: addr 0x1000, rkey 0x1");
puts("received: hello, rdma"); puts("WRITE of 12 bytes completed: success"); return 0; }`, `does not hold "hello, rdma"`},
		// the CM events and the reply, and no connection
		"cm-send": {`#include <stdio.h>
int main(void){ puts("CM event: RDMA_CM_EVENT_ESTABLISHED"); puts("received: hello, peer");
puts("reply: pong: hello, peer"); return 0; }`, "The peer saw no connection"},
	}
	for _, q := range l.Programs {
		f, ok := fakes[q.ID]
		if !ok {
			t.Errorf("no do-nothing program for exercise %s", q.ID)
			continue
		}
		end, _ := run(q, []byte(f.src), "en")
		if end.Stage != "check" || end.Passed || !strings.Contains(string(end.Check), f.want) {
			t.Errorf("%s, a program that only prints: stage %s passed %v, check %q; want it failed saying %q", q.ID, end.Stage, end.Passed, end.Check, f.want)
		}
	}
	// Exercise 3's solution against a peer that connects and then goes
	// away (its QP back to RESET, so it drops every packet): the WRITE is
	// never acknowledged, and the finite retry_cnt and the poll deadline
	// end the program with the error in sight, well within its limit.
	// The peer goes before it says "connected", which the solution waits
	// for: going after it raced the WRITE, and once the WRITE won (a
	// quiet make test, the guest at the test's priority).
	wp := l.Programs[2]
	if wp.ID != "rdma-write" {
		t.Fatalf("program 3 is %s, want rdma-write", wp.ID)
	}
	gone := *wp
	connected := `publish("connected", "1\n");`
	gone.Peer = []byte(strings.Replace(string(wp.Peer), connected,
		`struct ibv_qp_attr gone = {.qp_state = IBV_QPS_RESET}; ibv_modify_qp(qp, &gone, IBV_QP_STATE); `+connected, 1))
	if string(gone.Peer) == string(wp.Peer) {
		t.Fatalf("the WRITE target no longer has %s", connected)
	}
	end, c := run(&gone, wp.Solution, "en")
	if end.Passed || end.TimedOut || end.Exit != 1 || !strings.Contains(c.Text("stderr"), "transport retry counter exceeded") ||
		end.Millis.Run >= int64(wp.Config.Timeout)*1000 {
		t.Errorf("the WRITE solution without its peer: passed %v, timed out %v, exit %d after %d ms (limit %d s), stderr %q; want exit 1 with IBV_WC_RETRY_EXC_ERR's %q in time",
			end.Passed, end.TimedOut, end.Exit, end.Millis.Run, wp.Config.Timeout, c.Text("stderr"), "transport retry counter exceeded")
	}
	abuse := []struct{ name, src, want string }{
		{"infinite loop", "int main(void){ for(;;); }", "timed out"},
		{"never exits", "#include <unistd.h>\nint main(void){ for(;;) pause(); }", "timed out"},
		{"100 MB print", "#include <stdio.h>\n#include <string.h>\nint main(void){ static char b[1<<20]; memset(b,'x',sizeof b); for(int i=0;i<100;i++) fwrite(b,1,sizeof b,stdout); return 0; }", "capped"},
		{"fork bomb", "#include <unistd.h>\nint main(void){ for(;;) fork(); }", "timed out"},
		// The learner's code runs as the learner, not as root: the
		// evidence folder beside its work folder, core_pattern and the
		// guest's PID 1 are out of its reach (exit 3 only if every try
		// was refused; it exits 0 when any succeeded).
		{"root's powers", "#include <stdio.h>\n#include <signal.h>\n#include <unistd.h>\nint main(void){ int got=0; FILE *f=fopen(\"../output\",\"w\"); if(f){got++;fclose(f);} f=fopen(\"../forged\",\"w\"); if(f){got++;fclose(f);} f=fopen(\"/proc/sys/kernel/core_pattern\",\"w\"); if(f && fputs(\"|/tmp/x\",f)>=0 && fflush(f)==0){got++;} if(kill(1,0)==0){got++;} if(getuid()==0){got++;} printf(\"root powers used: %d\\n\",got); return got?0:3; }", "exit 3"},
		{"host address", "#include <stdio.h>\n#include <sys/socket.h>\n#include <netinet/in.h>\n#include <arpa/inet.h>\nint main(void){ int s=socket(AF_INET,SOCK_STREAM,0); struct sockaddr_in a={.sin_family=AF_INET,.sin_port=htons(22)}; inet_pton(AF_INET,\"10.0.2.2\",&a.sin_addr); if(connect(s,(void*)&a,sizeof a)){ perror(\"connect\"); return 3; } return 0; }", "exit 3"},
	}
	for _, ab := range abuse {
		short := *p
		short.Config.Timeout = 3
		if ab.want != "timed out" && ab.want != "capped" {
			// These exit at once; on a loaded host, right after the fork
			// bomb's processes are reaped, 3 s was too little to start.
			short.Config.Timeout = 20
		}
		end, c := run(&short, []byte(ab.src), "en")
		got := fmt.Sprintf("exit %d", end.Exit)
		switch {
		case end.Capped:
			got = "capped"
		case end.TimedOut:
			got = "timed out"
		}
		if got != ab.want || end.Stage != "check" {
			t.Errorf("%s: stage %s, %s; want %s", ab.name, end.Stage, got, ab.want)
		}
		if n := len(c.Text("stdout")) + len(c.Text("stderr")); n > vmproto.ProgramOutputMax {
			t.Errorf("%s: %d bytes of output came back, more than %d", ab.name, n, vmproto.ProgramOutputMax)
		}
	}
	// The guest still serves its learner after all that.
	end, _ = run(p, p.Solution, "en")
	if !end.Passed {
		t.Errorf("the solution after the abuse: passed %v (%s)", end.Passed, end.Check)
	}
	lesson03Programs(t, course, run)
	lesson05Programs(t, course, run)
	lesson06Programs(t, course, run)
	lesson07Programs(t, course, run)
	lesson09Programs(t, course, run)
}

// lesson03Programs is the guest suite of lesson 03's exercises, in the
// guest TestLessonPrograms booted: each solution passes, each starter
// compiles and fails, a program that only prints fails naming what the
// kernel or the peer did not see, and the solution without its peer ends
// in a visible error within its time limit.
func lesson03Programs(t *testing.T, course *lessons.Course, run func(*lessons.Program, []byte, string) (vmproto.ProgramEnd, *vmtest.Events)) {
	t.Helper()
	l := course.Lesson("03-verbs-lifecycle")
	if l == nil || len(l.Programs) < 2 || l.Programs[0].ID != "connect-qp" {
		t.Fatalf("lesson 03-verbs-lifecycle with the programs connect-qp and ud-exchange: %v", l)
	}
	fakes := map[string]struct{ src, want string }{
		// the solution's lines, and no QP moved
		"connect-qp": {`#include <stdio.h>
int main(void){ puts("our QP 17 is in RESET"); puts("INIT"); puts("the peer's QP 18, PSN 7000");
puts("RTR"); puts("RTS"); puts("SEND of 10 bytes completed: success"); puts("received: hello, qp (10 bytes)"); return 0; }`,
			"saw no ibv_modify_qp"},
		// the GRH dump, the addresses and the payload offset, and no QP
		"ud-exchange": {`#include <stdio.h>
int main(void){ puts("our UD QP 17 is in RTS"); puts("the peer's UD QP 18, Q_Key 0x11111111");
puts("received 59 bytes from QP 18; the GRH area:"); puts("IPv4 header at bytes 20-39: 10.0.0.2 -> 10.0.0.1");
puts("payload at byte 40, 19 bytes: ud token 1234abcd"); puts("sent the 59 bytes back to QP 18"); return 0; }`,
			"did not accept moves of a QP"},
	}
	for i, p := range l.Programs {
		solLang, startLang := "zh", "en"
		if i%2 == 1 {
			solLang, startLang = "en", "zh"
		}
		end, _ := run(p, p.Solution, solLang)
		if end.Stage != "check" || !end.Passed {
			t.Errorf("%s solution (%s): stage %s passed %v: %s", p.ID, solLang, end.Stage, end.Passed, end.Check)
		}
		end, _ = run(p, p.Starter, startLang)
		if end.Stage != "check" || end.Passed {
			t.Errorf("%s starter (%s): stage %s passed %v; want compiled and failed", p.ID, startLang, end.Stage, end.Passed)
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
		// No peer at all: nothing listens on its TCP port, and the
		// solution says so at once.
		alone := *p
		alone.Peer, alone.Config.Peer, alone.Config.PeerArgs = nil, "", nil
		end, c := run(&alone, p.Solution, "en")
		if end.Passed || end.TimedOut || end.Exit != 1 || !strings.Contains(c.Text("stderr"), "Connection refused") {
			t.Errorf("%s's solution without a peer: passed %v, timed out %v, exit %d, stderr %q; want exit 1 saying %q",
				p.ID, end.Passed, end.TimedOut, end.Exit, c.Text("stderr"), "Connection refused")
		}
	}
	cp := l.Programs[0]
	// A peer that answers the exchange and then goes away (its QP back to
	// RESET): the SEND is never acknowledged, and the finite retry_cnt and
	// the poll deadline end the program with the error in sight.
	gone := *cp
	answered := `connected = 1; /* the peer's QP is in RTS: answer */`
	gone.Peer = []byte(strings.Replace(string(cp.Peer), answered, answered+
		` struct ibv_qp_attr gone = {.qp_state = IBV_QPS_RESET}; ibv_modify_qp(qp, &gone, IBV_QP_STATE);`, 1))
	if string(gone.Peer) == string(cp.Peer) {
		t.Fatalf("the exchange peer no longer has %s", answered)
	}
	end, c := run(&gone, cp.Solution, "en")
	if end.Passed || end.TimedOut || end.Exit != 1 || !strings.Contains(c.Text("stderr"), "transport retry counter exceeded") ||
		end.Millis.Run >= int64(cp.Config.Timeout)*1000 {
		t.Errorf("connect-qp's solution when the peer goes away: passed %v, timed out %v, exit %d after %d ms (limit %d s), stderr %q; want exit 1 with %q in time",
			end.Passed, end.TimedOut, end.Exit, end.Millis.Run, cp.Config.Timeout, c.Text("stderr"), "transport retry counter exceeded")
	}
}
