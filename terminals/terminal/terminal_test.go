package terminal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/machines/vmproto"

	"github.com/rdmalab/rdmalab/machines/vm"

	"github.com/rdmalab/rdmalab/machines/vm/vmtest"

	"github.com/rdmalab/rdmalab"
)

// readUntil collects a's output until it contains every want, or the
// output ends. It returns what it saw.
func readUntil(t testing.TB, a *Attachment, want ...string) string {
	t.Helper()
	var got bytes.Buffer
	got.Write(a.Scrollback)
	for {
		ok := true
		for _, w := range want {
			if !strings.Contains(got.String(), w) {
				ok = false
			}
		}
		if ok {
			return got.String()
		}
		b, open := <-a.Out
		if !open {
			t.Fatalf("the terminal's output ended before %q; it said:\n%s", want, got.String())
		}
		got.Write(b)
	}
}

// TestTerminals: each learner gets a shell in a guest of their own (a
// different QEMU), where ibv_devices lists the guest's Soft-RoCE devices;
// a learner over the cap is refused with the message; a re-attach gets
// the same shell with its scrollback.
func TestTerminals(t *testing.T) {
	cfg := testConfig(t)
	cfg.Dir = vmtest.OwnCache(t)
	cfg.Accel = vm.AccelTCG
	terms := &Terminals{Cfg: cfg, Max: 2, QueueMax: 1}
	defer terms.Close()
	ctx := context.Background()

	a, err := terms.Attach(ctx, "learner-a", 24, 80)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Write([]byte("ibv_devices; echo marker-$((6*7))\n")); err != nil {
		t.Fatal(err)
	}
	out := readUntil(t, a, "rxe0", "rxe1", "marker-42")
	t.Logf("learner a's terminal:\n%s", out)

	b, err := terms.Attach(ctx, "learner-b", 24, 80)
	if err != nil {
		t.Fatal(err)
	}
	if a.GuestPID() == 0 || a.GuestPID() == b.GuestPID() {
		t.Fatalf("learners a and b share QEMU pid %d/%d", a.GuestPID(), b.GuestPID())
	}
	// On the host a learner's QEMU runs niced (the experiment guests first).
	if n := niceOf(t, a.GuestPID()); n != 10 {
		t.Errorf("learner a's QEMU runs at nice %d, want 10", n)
	}
	// b's machine is another one: a's file is not there.
	if err := a.Write([]byte("echo secret-a > ~/mine; echo wrote-$((3+4))\n")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, a, "wrote-7")
	if err := b.Write([]byte("cat ~/mine 2>/dev/null || echo not-$((1+1))-here\n")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, b, "not-2-here")

	// The tools the lesson's terminal names are all there, and tcpdump
	// runs (its capture library loads and sees the veth pair).
	tools := "ibv_devices ibv_devinfo rdma ib_write_bw ib_write_lat ib_read_bw ib_send_bw rping ibv_rc_pingpong ip tc tcpdump strace"
	if err := b.Write([]byte("for p in " + tools + "; do command -v $p >/dev/null || echo \"miss\"\"ing: $p\"; done; tcpdump -D; strace -c true 2>&1 | tail -1; echo tools-$((8*8))\n")); err != nil {
		t.Fatal(err)
	}
	out = readUntil(t, b, "tools-64")
	if strings.Contains(out, "missing: ") {
		t.Errorf("tools missing in the learner's guest:\n%s", out)
	}
	if !strings.Contains(out, "veth0") {
		t.Errorf("tcpdump -D does not list veth0:\n%s", out)
	}
	t.Logf("tools:\n%s", out)

	checkDemandDisk(t, terms, b, "learner-b")

	// The shell runs in its own cgroup under the learner's, whose limits
	// bound processes, CPU and memory (terminals/guestterm/termlimits.go), as
	// the ordinary user learner with CAP_NET_RAW alone.
	if err := b.Write([]byte("cat /proc/self/cgroup /sys/fs/cgroup/learner/pids.max /sys/fs/cgroup/learner/cpu.max /sys/fs/cgroup/learner/memory.max; grep -E 'CapEff|Uid' /proc/self/status; echo limits-$((9*9))\n")); err != nil {
		t.Fatal(err)
	}
	out = readUntil(t, b, "limits-81")
	for _, want := range []string{"0::/learner/term-", "\r\n256\r\n", "75000 100000", "CapEff:\t0000000000002000", "Uid:\t1000\t1000\t1000\t1000"} {
		if !strings.Contains(out, want) {
			t.Errorf("the learner's shell lacks %q:\n%s", want, out)
		}
	}

	// Issue 28 falls 1-4: what a root shell did to take the guest over,
	// each refused now. Every line prints its name and "ok" (it worked) or
	// "no" (refused). The memlock limit binds as for any user.
	escapes := map[string]string{
		"cgroup-escape": "echo $$ > /sys/fs/cgroup/cgroup.procs",
		"pids-max":      "echo max > /sys/fs/cgroup/learner/pids.max",
		"core-pattern":  "echo '|/tmp/x' > /proc/sys/kernel/core_pattern",
		"bind-agent":    "mount --bind /bin/true /usr/bin/labagent",
		"kill-agent":    "kill -9 $(for p in /proc/[0-9]*; do case $(cat $p/cmdline 2>/dev/null | tr '\\0' ' ') in *labagent*--serve*) echo ${p#/proc/};; esac; done) 2>/dev/null",
		"replace-sh":    "cp /bin/true /bin/sh",
		"serial":        "echo x > /dev/ttyS0",
		"dev-mem":       "head -c 1 /dev/mem >/dev/null",
		"dev-port":      "head -c 1 /dev/port >/dev/null",
		"kill-init":     "kill -9 1",
		"make-root-dir": "mkdir /evil",
		"agent-port":    "echo x > $(readlink -f /dev/virtio-ports/org.rdmalab.agent)",
		"memlock-root":  "ulimit -l unlimited",
	}
	var cmd strings.Builder
	for name, c := range escapes {
		fmt.Fprintf(&cmd, "(%s) 2>/dev/null && echo %s=ok || echo %s=no; ", c, name, name)
	}
	cmd.WriteString("(ulimit -l 65536 && ulimit -l) ; echo escapes-$((4*4))\n")
	if err := b.Write([]byte(cmd.String())); err != nil {
		t.Fatal(err)
	}
	out = readUntil(t, b, "escapes-16")
	t.Logf("a learner's attempts on the guest:\n%s", out)
	for name := range escapes {
		if !strings.Contains(out, name+"=no") {
			t.Errorf("the learner's shell could %s (%s):\n%s", name, escapes[name], out)
		}
	}
	if !strings.Contains(out, "\r\n65536\r\n") {
		t.Errorf("the learner cannot raise their memlock limit to 64 MiB:\n%s", out)
	}

	if n, max := terms.InUse(); n != 2 || max != 2 {
		t.Errorf("in use: %d of %d, want 2 of 2", n, max)
	}
	// A third learner waits in the queue, told their place; a fourth finds
	// the queue (1 place) full and is refused with the message.
	type attached struct {
		a   *Attachment
		err error
	}
	places := make(chan rdmalab.TermQueue, 8)
	cDone := make(chan attached, 1)
	go func() {
		c, err := terms.AttachWait(ctx, "learner-c", 24, 80, func(q rdmalab.TermQueue) { places <- q })
		cDone <- attached{c, err}
	}()
	if q := <-places; q != (rdmalab.TermQueue{Position: 1, InUse: 2, Max: 2}) {
		t.Errorf("learner c's place: %+v, want first in line with 2 of 2 in use", q)
	}
	if n := terms.Waiting(); n != 1 {
		t.Errorf("waiting: %d, want 1", n)
	}
	_, err = terms.Attach(ctx, "learner-d", 24, 80)
	if !errors.Is(err, rdmalab.ErrTerminalsFull) || !strings.Contains(err.Error(), "all 2 terminals are in use and the queue is full (1 waiting)") {
		t.Fatalf("a fourth learner: err %v, want the queue-full message", err)
	}
	// A learner who gives up waiting leaves the queue.
	dctx, dcancel := context.WithCancel(ctx)
	dPlaces := make(chan rdmalab.TermQueue, 8)
	terms.QueueMax = 2
	dDone := make(chan error, 1)
	go func() {
		_, err := terms.AttachWait(dctx, "learner-d", 24, 80, func(q rdmalab.TermQueue) { dPlaces <- q })
		dDone <- err
	}()
	if q := <-dPlaces; q.Position != 2 {
		t.Errorf("learner d's place: %+v, want second in line", q)
	}
	dcancel()
	if err := <-dDone; !errors.Is(err, context.Canceled) {
		t.Errorf("learner d gave up: err %v", err)
	}
	if n := terms.Waiting(); n != 1 {
		t.Errorf("waiting after d left: %d, want 1", n)
	}

	// A second tab of learner a: the same shell, with what it printed.
	a2, err := terms.Attach(ctx, "learner-a", 24, 80)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(a2.Scrollback, []byte("marker-42")) {
		t.Errorf("the re-attach's scrollback lacks the earlier output:\n%s", a2.Scrollback)
	}
	if err := a2.Write([]byte("cat ~/mine\n")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, a2, "secret-a\r\n")
	// With no tab attached a's guest is paused (no CPU); a tab that comes
	// back resumes it, and the shell is where it was.
	a.Detach()
	if a.s.backend.Paused() {
		t.Error("a's guest paused while a second tab still shows the shell")
	}
	a2.Detach()
	if !a.s.backend.Paused() {
		t.Error("a's guest runs on with no tab attached")
	}
	a3, err := terms.Attach(ctx, "learner-a", 24, 80)
	if err != nil {
		t.Fatal(err)
	}
	if err := a3.Write([]byte("cat ~/mine; echo resumed-$((5*5))\n")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, a3, "resumed-25")
	a3.Detach()

	// Discarding a frees a place: the waiting learner c gets it.
	start := time.Now()
	terms.Discard("learner-a")
	got := <-cDone
	if got.err != nil {
		t.Fatal(got.err)
	}
	c := got.a
	t.Logf("learner c's guest ready %s after a's discard", time.Since(start).Round(time.Millisecond))
	if n := terms.Waiting(); n != 0 {
		t.Errorf("waiting after c got in: %d", n)
	}
	_ = c.Write([]byte("echo c-$((2+3))\n"))
	readUntil(t, c, "c-5")
}

// niceOf is the niceness of process pid (field 19 of /proc/PID/stat).
func niceOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name (field 2) may hold spaces: count from its ")".
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	n, err := strconv.Atoi(f[16])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkDemandDisk: the on-demand disk (lesson 08's UCX, libfabric, Open
// MPI; vmimage/disk.go) is in a learner's guest too, and nobody in it can
// change it. A learner's guest does not mount it by itself (a kept
// machine is migrated out of QEMU at any moment, and none of its reads
// should be in flight then): root mounts it here as an experiment would;
// then the learner (uid 1000) runs its programs but can neither read the
// device nor write the mount nor mount it again, and root's write to the
// device fails because QEMU attached it read-only — the file every guest
// shares is the same bytes afterwards.
func checkDemandDisk(t *testing.T, terms *Terminals, a *Attachment, learner string) {
	t.Helper()
	im, err := vmimage.LoadImage(terms.Cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(im.DiskPath())
	if err != nil {
		t.Fatal(err)
	}
	root := func(script string) string {
		t.Helper()
		res, err := terms.Verify(context.Background(), learner, []byte("set -u\n"+script), "en")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("root in the guest: passed %v %s: %s", res.Passed, res.Detail, res.Output)
		if !res.Passed {
			t.Fatalf("root's script failed: %s %s", res.Detail, res.Output)
		}
		return string(res.Output)
	}
	root(`modprobe -a virtio_blk squashfs
i=0; while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
grep -qx ` + vmproto.DemandDiskSerial + ` /sys/block/vda/serial
mount -t squashfs -o ro,nodev,nosuid /dev/vda ` + vmproto.DemandMount + `
`)
	_ = a.Write([]byte("ucx_info -v | head -1; fi_info --version; mpirun --version | head -1; " +
		"head -c 1 /dev/vda; touch " + vmproto.DemandMount + "/x; mount -o remount,rw " + vmproto.DemandMount + "; echo disk-$((5*5))\n"))
	out := readUntil(t, a, "disk-25")
	t.Logf("the on-demand disk in the learner's shell:\n%s", out)
	for _, want := range []string{"# Version 1.", "libfabric: ", "(Open MPI) ", "/dev/vda: Permission denied", "Read-only file system"} {
		if !strings.Contains(out, want) {
			t.Errorf("learner's shell: no %q:\n%s", want, out)
		}
	}
	got := root(`echo "ro flag: $(cat /sys/block/vda/ro)"
if printf 'hostile' | dd of=/dev/vda conv=notrunc 2>&1; then echo root-wrote; exit 1; fi
mount -o remount,rw ` + vmproto.DemandMount + ` 2>&1
grep -q ' ` + vmproto.DemandMount + ` squashfs ro' /proc/mounts || { echo read-write-now; exit 1; }
`)
	if !strings.Contains(got, "ro flag: 1") {
		t.Errorf("the guest's kernel does not see the disk read-only: %s", got)
	}
	after, err := os.ReadFile(im.DiskPath())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("the on-demand disk's file changed on the host")
	}
}
