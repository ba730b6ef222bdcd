package fleet

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/syncbuf"
	"github.com/rdmalab/rdmalab/terminals/placement"
)

// screen collects a terminal's output until it ends.
type screen struct {
	buf  syncbuf.Buffer
	done chan struct{}
}

func watch(c rdmalab.TermConn) *screen {
	sc := &screen{done: make(chan struct{})}
	_, _ = sc.buf.Write(c.Recent())
	go func() {
		defer close(sc.done)
		for b := range c.Output() {
			_, _ = sc.buf.Write(b)
		}
	}()
	return sc
}

// waitFor waits until the screen shows want.
func (sc *screen) waitFor(t testing.TB, want string) {
	t.Helper()
	for i := 0; ; i++ {
		if strings.Contains(sc.buf.String(), want) {
			return
		}
		if i > 1200 {
			t.Fatalf("the terminal never showed %q; it showed:\n%s", want, sc.buf.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitTermWorker waits until worker name offers terminals.
func waitTermWorker(t testing.TB, s *Server, name string) {
	t.Helper()
	for i := 0; ; i++ {
		if _, ok := s.TermWorkers()[name]; ok {
			return
		}
		if i > 600 {
			t.Fatalf("worker %s never offered terminals; workers %+v", name, s.Workers())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTerminalOnWorker: a learner's terminal placed on a real `labserver
// worker --terminals 1` process, in a real guest there: keys reach the
// shell and its output comes back; the task check runs in that guest (it
// sees the file the learner made; another learner has no terminal to
// check); a reload re-attaches to the same shell with its scrollback; the
// worker killed ends the terminal as lost, and the learner's next attach
// gets a new machine on the other worker.
func TestTerminalOnWorker(t *testing.T) {
	env := guestWorkerEnv(t, "boots Soft-RoCE guests in worker processes")
	s := startServer(t, "127.0.0.1:0")
	defer s.Close()
	wa := startWorkerEnv(t, env, s.Addr(), "ta", token, "--host-slots", "0", "--terminals", "1")
	waitTermWorker(t, s, "ta")
	p := &placement.Placement{Fleet: s}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute) // the image may be built first
	defer cancel()

	c, err := p.Attach(ctx, "ann", 24, 80, nil)
	if err != nil {
		t.Fatalf("attach on worker ta: %v\n%s", err, wa.out.String())
	}
	if w := c.(*RemoteTerm).Worker(); w != "ta" || p.Worker("ann") != "ta" {
		t.Fatalf("placed on %q (placement says %q), want ta", w, p.Worker("ann"))
	}
	sc := watch(c)
	if err := c.Write([]byte("echo $((6*7)) > /tmp/mark; echo got-$(cat /tmp/mark)\r")); err != nil {
		t.Fatal(err)
	}
	sc.waitFor(t, "got-42")

	// The task check runs where the terminal lives.
	v, err := p.Verify(ctx, "ann", []byte("grep -qx 42 /tmp/mark"), "en")
	if err != nil || !v.Passed {
		t.Fatalf("check of ann's file on ta: %+v, %v", v, err)
	}
	v, err = p.Verify(ctx, "ann", []byte("echo missing >&2; test -f /tmp/nothing"), "zh")
	if err != nil || v.Passed || !strings.Contains(string(v.Output), "missing") {
		t.Fatalf("a failing check on ta: %+v, %v", v, err)
	}
	if _, err := p.Verify(ctx, "bob", []byte("true"), "en"); !errors.Is(err, rdmalab.ErrNoTerminal) {
		t.Fatalf("check for a learner with no terminal: %v, want rdmalab.ErrNoTerminal", err)
	}

	// A reload: the tab goes, a new one attaches to the same shell.
	c.Detach()
	<-sc.done
	c, err = p.Attach(ctx, "ann", 30, 100, nil)
	if err != nil {
		t.Fatalf("re-attach: %v", err)
	}
	if !strings.Contains(string(c.Recent()), "got-42") {
		t.Fatalf("re-attached without the scrollback: %q", c.Recent())
	}
	sc = watch(c)
	_ = c.Write([]byte("echo again-$((1+1)) $(stty size)\r"))
	sc.waitFor(t, "again-2 30 100")

	// The worker dies: the terminal ends as lost, and the next attach is
	// a new machine on the other worker.
	startWorkerEnv(t, env, s.Addr(), "tb", token, "--host-slots", "0", "--terminals", "1")
	waitTermWorker(t, s, "tb")
	_ = syscall.Kill(-wa.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-sc.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the terminal on the killed worker did not end")
	}
	if !c.(*RemoteTerm).Lost() {
		t.Fatal("the terminal on the killed worker ended, but not as lost")
	}
	c, err = p.Attach(ctx, "ann", 24, 80, nil)
	if err != nil {
		t.Fatalf("attach after ta died: %v", err)
	}
	defer c.Detach()
	if w := c.(*RemoteTerm).Worker(); w != "tb" {
		t.Fatalf("after ta died, placed on %q, want tb", w)
	}
	sc = watch(c)
	_ = c.Write([]byte("echo fresh-$((3*3)) $(cat /tmp/mark 2>/dev/null || echo none)\r"))
	sc.waitFor(t, "fresh-9 none")
	v, err = p.Verify(ctx, "ann", []byte("test -f /tmp/mark"), "en")
	if err != nil || v.Passed {
		t.Fatalf("the check on the new machine: %+v, %v (want not passed: a new machine)", v, err)
	}
	if n, max := p.InUse(); n != 1 || max != 1 {
		t.Fatalf("in use %d of %d, want 1 of 1 (tb only)", n, max)
	}
}
