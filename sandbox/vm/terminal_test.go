package vm

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// readUntil collects a's output until it contains every want, or the
// output ends. It returns what it saw.
func readUntil(t *testing.T, a *Attachment, want ...string) string {
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
	cfg.Dir = ownCache(t)
	cfg.Accel = AccelTCG
	terms := &Terminals{Cfg: cfg, Max: 2}
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
	// b's machine is another one: a's file is not there.
	if err := a.Write([]byte("echo secret-a > /root/mine; echo wrote-$((3+4))\n")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, a, "wrote-7")
	if err := b.Write([]byte("cat /root/mine 2>/dev/null || echo not-$((1+1))-here\n")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, b, "not-2-here")

	if n, max := terms.InUse(); n != 2 || max != 2 {
		t.Errorf("in use: %d of %d, want 2 of 2", n, max)
	}
	_, err = terms.Attach(ctx, "learner-c", 24, 80)
	if !errors.Is(err, ErrTerminalsFull) || !strings.Contains(err.Error(), "all 2 terminals are in use") {
		t.Fatalf("a third learner: err %v, want the terminals-full message", err)
	}

	// A second tab of learner a: the same shell, with what it printed.
	a2, err := terms.Attach(ctx, "learner-a", 24, 80)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(a2.Scrollback, []byte("marker-42")) {
		t.Errorf("the re-attach's scrollback lacks the earlier output:\n%s", a2.Scrollback)
	}
	if err := a2.Write([]byte("cat /root/mine\n")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, a2, "secret-a\r\n")
	a.Detach()
	a2.Detach()

	// Discarding a frees a place.
	terms.Discard("learner-a")
	start := time.Now()
	c, err := terms.Attach(ctx, "learner-c", 24, 80)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("learner c's guest ready after %s", time.Since(start).Round(time.Millisecond))
	_ = c.Write([]byte("echo c-$((2+3))\n"))
	readUntil(t, c, "c-5")
}
