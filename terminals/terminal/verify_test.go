package terminal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/machines/vmproto"

	"github.com/rdmalab/rdmalab/machines/vm"

	"github.com/rdmalab/rdmalab/machines/vm/vmtest"

	"github.com/rdmalab/rdmalab"
)

// lessonScript reads a verify script of the built-in lesson 01.
func lessonScript(t *testing.T, name string) []byte {
	t.Helper()
	return courseScript(t, "01-why-rdma", name)
}

// courseScript reads a task script of a built-in lesson.
func courseScript(t *testing.T, lesson, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../lessons/course/" + lesson + "/tasks/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTerminalVerify: lesson 01's verify scripts, run in a learner's own
// guest beside their shell, fail before the learner did the step (with a
// hint in the learner's language) and pass after it; a learner with no
// shell gets rdmalab.ErrNoTerminal; a script's output is bounded.
func TestTerminalVerify(t *testing.T) {
	cfg := testConfig(t)
	cfg.Dir = vmtest.OwnCache(t)
	cfg.Accel = vm.AccelTCG
	cfg.ConsoleMax = 64 << 10 // the console flood below fills it in a second
	terms := &Terminals{Cfg: cfg, Max: 1}
	defer terms.Close()
	ctx := context.Background()
	memlock, bw := lessonScript(t, "memlock.sh"), lessonScript(t, "write-bw.sh")

	if _, err := terms.Verify(ctx, "learner-v", memlock, "en"); !errors.Is(err, rdmalab.ErrNoTerminal) {
		t.Fatalf("verify without a terminal: %v, want rdmalab.ErrNoTerminal", err)
	}
	a, err := terms.Attach(ctx, "learner-v", 24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Detach()
	_ = a.Write([]byte("echo ready-$((20+1))\n"))
	readUntil(t, a, "ready-21")

	check := func(script []byte, lang string, pass bool, want string) {
		t.Helper()
		res, err := terms.Verify(ctx, "learner-v", script, lang)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("verify (%s): passed %v, %q: %s", lang, res.Passed, res.Detail, res.Output)
		if res.Passed != pass || !strings.Contains(string(res.Output), want) {
			t.Fatalf("passed %v (%s), output %q; want passed %v and %q", res.Passed, res.Detail, res.Output, pass, want)
		}
		if !pass && res.Detail != "exit status 1" {
			t.Errorf("detail %q, want exit status 1", res.Detail)
		}
	}
	// Before: the guest's 8 MiB, said in each language.
	check(memlock, "en", false, "still 8192 KiB")
	check(memlock, "zh", false, "仍是 8192 KiB")
	// A subshell's limit does not count: it is gone when it exits.
	_ = a.Write([]byte("(ulimit -l 65536); echo sub-$((1+1))\n"))
	readUntil(t, a, "sub-2")
	check(memlock, "en", false, "still 8192 KiB")
	_ = a.Write([]byte("ulimit -l 65536; echo lim-$(ulimit -l)\n"))
	readUntil(t, a, "lim-65536")
	check(memlock, "en", true, "65536 KiB")

	check(bw, "en", false, "No report in /home/learner/bw.txt")
	// A report written by hand, without the WRITEs behind it.
	_ = a.Write([]byte("printf ' RDMA_Write BW Test\\n Device : rxe0\\n Mtu : 1024[B]\\n 65536 5000 1.0 99.0 0.1\\n' > ~/bw.txt; echo fake-$((2+2))\n"))
	readUntil(t, a, "fake-4")
	check(bw, "en", false, "but rxe0's sent_pkts counter is only")
	// A report of no WRITEs at all needs no packets: refused too.
	_ = a.Write([]byte("printf ' RDMA_Write BW Test\\n Device : rxe0\\n Mtu : 1024[B]\\n 65536 0 1.0 99.0 0.1\\n' > ~/bw.txt; echo zero-$((2+3))\n"))
	readUntil(t, a, "zero-5")
	check(bw, "en", false, "The report says 0 WRITEs")
	_ = a.Write([]byte("rm ~/bw.txt; ib_write_bw -d rxe1 -x 1 -s 65536 -n 200 >/dev/null 2>&1 & sleep 2; ib_write_bw -d rxe0 -x 1 -s 65536 -n 200 10.0.0.2 | tee ~/bw.txt; wait; echo bw-$((3*3))\n"))
	out := readUntil(t, a, "bw-9")
	t.Logf("ib_write_bw in the terminal:\n%s", out)
	check(bw, "en", true, "rxe0 sent 200 RDMA WRITEs of 64 KiB")
	check(bw, "zh", true, "rxe0 发出了 200 个 64 KiB 的 RDMA WRITE")

	testNVMeTask(t, terms, a, check)

	// Output is bounded; a script's own exit status is its verdict.
	res, err := terms.Verify(ctx, "learner-v", []byte("yes hello | head -c 100000; exit 3\n"), "en")
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed || res.Detail != "exit status 3" || len(res.Output) != vmproto.VerifyOutputMax {
		t.Errorf("flooding script: passed %v, %q, %d bytes of output (want %d)", res.Passed, res.Detail, len(res.Output), vmproto.VerifyOutputMax)
	}

	// The serial console (root in the guest writes it as fast as it can):
	// the host's console.log stays capped and rotated (issue 28 fall 2).
	res, err = terms.Verify(ctx, "learner-v", []byte("head -c 300000 /dev/zero | tr '\\0' x > /dev/ttyS0; echo wrote\n"), "en")
	if err != nil || !res.Passed {
		t.Fatalf("console flood: %v %q %s", err, res.Detail, res.Output)
	}
	g, err := a.s.backend.WaitReady(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := os.Stat(g.Console)
	old, _ := os.Stat(g.Console + ".1")
	if cur == nil || cur.Size() > cfg.ConsoleMax || old == nil || old.Size() > cfg.ConsoleMax {
		t.Errorf("after 300 kB on the serial console: console.log %v, console.log.1 %v; want each at most %d bytes", cur, old, cfg.ConsoleMax)
	} else {
		t.Logf("after 300 kB on the serial console: console.log %d bytes, console.log.1 %d bytes", cur.Size(), old.Size())
	}

	// A script that outlives its time is killed with what it started.
	res, err = terms.Verify(ctx, "learner-v", []byte("sleep 1234 &\necho started\nsleep 600\n"), "en")
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed || res.Detail != fmt.Sprintf("timed out after %d s", vmproto.VerifyTimeoutS) || !strings.Contains(string(res.Output), "started") {
		t.Errorf("slow script: passed %v, %q, output %q", res.Passed, res.Detail, res.Output)
	}
	// The scan sees a process that does run: the learner's shell.
	res, err = terms.Verify(ctx, "learner-v", []byte(strings.Replace(leftBehind, "sleep 1234", termShell(), 1)), "en")
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed || !strings.Contains(string(res.Output), "left-behind") {
		t.Fatalf("the scan does not find the learner's shell (%s): %q %s", termShell(), res.Detail, res.Output)
	}
	res, err = terms.Verify(ctx, "learner-v", []byte(leftBehind), "en")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed {
		t.Errorf("the timed-out script's child is still running: %q %s", res.Detail, res.Output)
	}
}

// leftBehind fails when a "sleep 1234" still runs; it checks that its scan
// of /proc finds its own shell first (the guest has no pgrep).
const leftBehind = `self=0
for c in /proc/[0-9]*/cmdline; do
	a=$(tr '\000' ' ' < "$c" 2>/dev/null)
	case "$a" in
	"sleep 1234"*) echo left-behind; exit 1 ;;
	"/bin/sh /tmp/task-"*) self=1 ;;
	esac
done
[ "$self" = 1 ] || { echo "the scan of /proc did not find this script"; exit 2; }
`

// termShell is how the learner's shell's command line starts
// (vmguest.termShell: bash when the image has it).
func termShell() string { return "/usr/bin/bash --login" }

// testNVMeTask walks lesson 08's terminal task in the learner's guest (the
// shell is uid 1000): before the setup the check says the target is
// missing; the setup (run as root, as the lab runs it when the terminal
// opens on that page) exports it; unconnected the check fails; the
// learner connects with nvme connect -t rdma and the check passes. The
// right the setup grants (write on /dev/nvme-fabrics) must not reach
// further than docs/operations.md says: no configfs, no module loading,
// no other transport, no reading the namespace, no deleting or resetting
// the controller.
func testNVMeTask(t *testing.T, terms *Terminals, a *Attachment, check func([]byte, string, bool, string)) {
	t.Helper()
	ctx := context.Background()
	const nqn = "nqn.2026-12.lab.rdmalab.task:nvme-rdma"
	setup, task := courseScript(t, "08-upper-layers", "nvme-target.sh"), courseScript(t, "08-upper-layers", "nvme-rdma.sh")
	check(task, "en", false, "not exported in your machine")
	res, err := terms.Verify(ctx, "learner-v", setup, "en")
	if err != nil || !res.Passed {
		t.Fatalf("the setup as root: %v %q %s", err, res.Detail, res.Output)
	}
	t.Logf("setup: %s", res.Output)
	// run twice, as a reopened terminal does: idempotent
	if res, err := terms.Verify(ctx, "learner-v", setup, "en"); err != nil || !res.Passed {
		t.Fatalf("the setup a second time: %v %q %s", err, res.Detail, res.Output)
	}
	check(task, "en", false, "No controller of "+nqn)
	check(task, "zh", false, "还没有连接")

	// what the learner cannot do before and after connecting; each line
	// prints a marker computed by the shell, so the echoed command line
	// cannot match it
	refused := func(what, cmd string, n int) {
		t.Helper()
		_ = a.Write([]byte(fmt.Sprintf("%s && echo ALLOWED-$((%d+1)) || echo refused-$((%d+1))\n", cmd, n, n)))
		out := readUntil(t, a, fmt.Sprintf("-%d", n+1))
		if strings.Contains(out, fmt.Sprintf("ALLOWED-%d", n+1)) {
			t.Errorf("the learner could %s: %s", what, out)
		}
	}
	refused("create a subsystem in configfs", "mkdir /sys/kernel/config/nvmet/subsystems/mine 2>/dev/null", 100)
	refused("load a module", "modprobe nvme_tcp 2>/dev/null", 110)

	_ = a.Write([]byte("nvme connect -t rdma -a 10.0.0.1 -s 4421 -n " + nqn + " && nvme list -v && echo conn-$((60+7))\n"))
	out := readUntil(t, a, "conn-67")
	t.Logf("the learner's nvme connect and nvme list -v:\n%s", out)
	if !strings.Contains(out, "rdma") || !strings.Contains(out, nqn) {
		t.Errorf("nvme list -v as the learner shows no rdma controller of %s", nqn)
	}
	check(task, "en", true, "with transport rdma")
	check(task, "zh", true, "传输为 rdma")

	refused("connect over tcp", "nvme connect -t tcp -a 10.0.0.1 -s 4421 -n "+nqn+" >/dev/null 2>&1", 120)
	refused("read the namespace's block device", "head -c 4096 /dev/nvme0n1 >/dev/null 2>&1", 130)
	refused("delete the controller", "sh -c 'for f in /sys/class/nvme/nvme*/delete_controller; do echo 1 > $f; done' 2>/dev/null", 140)
	refused("reset the controller", "sh -c 'for f in /sys/class/nvme/nvme*/reset_controller; do echo 1 > $f; done' 2>/dev/null", 150)
	refused("unexport the target", "rm /sys/kernel/config/nvmet/ports/2711/subsystems/"+nqn+" 2>/dev/null", 160)
	check(task, "en", true, "with transport rdma")
}
