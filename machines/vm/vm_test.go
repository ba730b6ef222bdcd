package vm

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/sandbox"
)

// TestWarmGuest is the lab guest end to end: build the image, boot it, list
// rxe0 and rxe1 with IPv4-mapped GIDs and counters, run the memlock
// experiment inside, then kill QEMU mid-run and see the run fail with the
// reason and a fresh guest come back.
func TestWarmGuest(t *testing.T) {
	cfg := testConfig(t)
	// Pings often enough for the hang subtest; generous enough for a
	// guest under TCG on a busy machine.
	cfg.PingEvery, cfg.PingTimeout = 2*time.Second, 30*time.Second
	b := New(cfg)
	b.Start()
	t.Cleanup(func() { b.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if _, err := b.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("booted in %v", b.BootTimes())

	t.Run("devices", func(t *testing.T) {
		lab := b.Lab(ctx)
		if lab.Backend != "vm" || lab.State != sandbox.LabReady {
			t.Fatalf("lab = %+v, want vm ready", lab)
		}
		if lab.Accel != AccelTCG && lab.Accel != AccelKVM {
			t.Errorf("accel %q", lab.Accel)
		}
		if !strings.HasPrefix(lab.Kernel, "6.") {
			t.Errorf("kernel %q", lab.Kernel)
		}
		want := map[string]string{"rxe0": "::ffff:10.0.0.1", "rxe1": "::ffff:10.0.0.2"}
		for _, d := range lab.Devices {
			gid, ok := want[d.Name]
			if !ok {
				continue
			}
			delete(want, d.Name)
			if d.GID != gid || d.GIDIndex < 1 {
				t.Errorf("%s: gid[%d] %q, want IPv4-mapped %s at index ≥ 1", d.Name, d.GIDIndex, d.GID, gid)
			}
			if !strings.HasPrefix(d.Netdev, "veth") {
				t.Errorf("%s: netdev %q, want a veth", d.Name, d.Netdev)
			}
			if _, ok := d.Counters["sent_pkts"]; !ok {
				t.Errorf("%s: counters %v lack sent_pkts", d.Name, d.Counters)
			}
		}
		if len(want) > 0 {
			t.Errorf("devices %+v lack %v", lab.Devices, want)
		}
		t.Log(lab.String())
	})

	t.Run("traffic", func(t *testing.T) {
		// RDMA traffic between rxe1 and rxe0 (perftest's ib_write_lat over
		// the veth wire) moves the counters the lab page shows.
		before := counters(ctx, t, b)
		var last string
		err := b.Exec(ctx, sandbox.NewSession(sandbox.Request{RunID: "tp", Experiment: "perftest", Params: sandbox.Params{}}, nil, func(ev sandbox.Event) {
			if ev.Message != "" {
				last = ev.Message
			}
		}))
		if err != nil {
			t.Fatalf("perftest in the guest: %v (last: %s)", err, last)
		}
		after := counters(ctx, t, b)
		for _, c := range []string{"rxe0/rcvd_pkts", "rxe0/sent_pkts", "rxe1/rcvd_pkts", "rxe1/sent_pkts"} {
			if after[c] <= before[c] {
				t.Errorf("%s: %d before, %d after RDMA traffic", c, before[c], after[c])
			}
		}
		t.Logf("rxe0 rcvd_pkts %d → %d; %s", before["rxe0/rcvd_pkts"], after["rxe0/rcvd_pkts"], last)
	})

	t.Run("memlock", func(t *testing.T) {
		var events []sandbox.Event
		err := b.Exec(ctx, sandbox.NewSession(sandbox.Request{RunID: "t1", Experiment: "memlock",
			Params: sandbox.Params{"limit": "65536", "size": 1 << 20, "ipc_lock": "drop"}}, nil, func(ev sandbox.Event) { events = append(events, ev) }))
		if err != nil {
			t.Fatalf("memlock in the guest: %v (events %+v)", err, events)
		}
		var enomem, result bool
		for _, ev := range events {
			if ev.Type == sandbox.EvError && ev.ErrnoName == "ENOMEM" {
				enomem = true
			}
			if ev.Type == sandbox.EvResult {
				result = true
			}
		}
		if !enomem || !result {
			t.Errorf("want an ENOMEM error event and a result; got %+v", events)
		}
	})

	t.Run("kill", func(t *testing.T) {
		pid := b.GuestPID()
		if pid == 0 {
			t.Fatal("no guest pid")
		}
		done := startLongRun(ctx, t, b)
		// Only the QEMU this test's backend started, by its pid.
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := <-done
		if err == nil || !strings.Contains(err.Error(), "died") {
			t.Fatalf("run in flight: err = %v, want it to fail because the guest died", err)
		}
		t.Logf("in-flight run failed with: %v", err)
		if _, err := b.WaitReady(ctx); err != nil {
			t.Fatalf("no fresh guest: %v", err)
		}
		if np := b.GuestPID(); np == pid || np == 0 {
			t.Fatalf("guest pid %d after restart (was %d)", np, pid)
		}
		lab := b.Lab(ctx)
		if lab.State != sandbox.LabReady || len(lab.Devices) < 2 {
			t.Fatalf("after restart: %+v", lab)
		}
		// And it runs experiments again.
		if err := b.Exec(ctx, sandbox.NewSession(sandbox.Request{RunID: "t3", Experiment: "memlock",
			Params: sandbox.Params{"limit": "8388608", "size": 1 << 20, "ipc_lock": "drop"}}, nil, func(sandbox.Event) {})); err != nil {
			t.Fatalf("run after restart: %v", err)
		}
	})

	t.Run("hang", func(t *testing.T) {
		// A guest that stops answering (here: QEMU stopped, as a hung
		// guest would look) fails the run in flight once the health pings
		// go unanswered, and is replaced.
		pid := b.GuestPID()
		done := startLongRun(ctx, t, b)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		err := <-done
		if err == nil || !strings.Contains(err.Error(), "stopped answering") {
			t.Fatalf("run in flight: err = %v, want it to fail because the guest hung", err)
		}
		t.Logf("in-flight run failed with: %v", err)
		if _, err := b.WaitReady(ctx); err != nil {
			t.Fatalf("no fresh guest: %v", err)
		}
		if np := b.GuestPID(); np == pid {
			t.Fatal("the hung guest is still the lab's guest")
		}
		// The backend killed the stopped QEMU (SIGKILL works on stopped
		// processes); make sure it is gone.
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("hung QEMU %d still exists", pid)
		}
	})
}

// counters reads the lab's counters as "device/name" → value.
func counters(ctx context.Context, t *testing.T, b *Backend) map[string]int64 {
	t.Helper()
	lab := b.Lab(ctx)
	if lab.State != sandbox.LabReady {
		t.Fatalf("lab %+v", lab)
	}
	m := map[string]int64{}
	for _, d := range lab.Devices {
		for k, v := range d.Counters {
			m[d.Name+"/"+k] = v
		}
	}
	return m
}

// startLongRun starts a 10-second run in the guest and returns once its
// first event arrived; the channel yields how the run ended.
func startLongRun(ctx context.Context, t *testing.T, b *Backend) <-chan error {
	t.Helper()
	first := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		done <- b.Exec(ctx, sandbox.NewSession(sandbox.Request{RunID: "long", Experiment: "tcp-cost",
			Params: sandbox.Params{"seconds": 10, "msg_size": 65536}}, nil, func(sandbox.Event) { once.Do(func() { close(first) }) }))
	}()
	select {
	case <-first:
	case err := <-done:
		t.Fatalf("run ended before it started: %v", err)
	case <-ctx.Done():
		t.Fatal("no event from the run")
	}
	return done
}

// TestBootFailure: a guest that cannot come up ends in state failed with the
// console's last lines, and runs report it instead of hanging.
func TestBootFailure(t *testing.T) {
	cfg := testConfig(t)
	// The kernel cannot find this init: it panics, and with panic=-1 and
	// -no-reboot QEMU exits; the reason must show the console.
	cfg.Append = "rdinit=/nonexistent"
	b := New(cfg)
	b.Start()
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := b.WaitReady(ctx)
	if err == nil {
		t.Fatal("a guest without init came up")
	}
	// WaitReady reports the failed state's reason and asks for a new boot at
	// once (a run wants the lab), so the state may already be booting again:
	// the reason is checked in the error, which carries it verbatim.
	if !strings.Contains(err.Error(), "not available") || !strings.Contains(err.Error(), "console:") {
		t.Fatalf("WaitReady: %v, want the failed lab's reason with the console tail", err)
	}
	t.Logf("reason: %v", err)
	err = b.Exec(ctx, sandbox.NewSession(sandbox.Request{RunID: "x", Experiment: "memlock"}, nil, func(sandbox.Event) {}))
	if err == nil || !strings.Contains(err.Error(), "not available") {
		t.Fatalf("run on a failed lab: %v", err)
	}
}

// TestBootTimeout: a guest that does not answer within the boot timeout is
// stopped and reported with its console.
func TestBootTimeout(t *testing.T) {
	cfg := testConfig(t)
	cfg.BootTimeout = 500 * time.Millisecond
	im, err := vmimage.LoadImage(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = StartGuest(context.Background(), cfg, im, AccelTCG, false)
	if !errors.Is(err, errBootTimeout) {
		t.Fatalf("err = %v, want a boot timeout", err)
	}
}
