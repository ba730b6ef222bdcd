package expkit

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func TestHuman(t *testing.T) {
	for n, want := range map[int64]string{2: "2 B", 64 << 10: "64 KiB", 3 << 19: "1.5 MiB", 1 << 30: "1 GiB"} {
		if got := Human(n); got != want {
			t.Errorf("Human(%d) = %q, want %q", n, got, want)
		}
	}
	if LimitText(Unlimited) != "unlimited" || LimitTextZh(Unlimited) != "不限" || LimitText(8<<20) != "8 MiB" {
		t.Error("LimitText")
	}
}

func TestMemAvailable(t *testing.T) {
	n, err := MemAvailable()
	if err != nil || n <= 0 {
		t.Fatalf("MemAvailable = %d, %v", n, err)
	}
}

// TestChildSetup runs what a locked-memory child does, on a locked thread
// of this process: lower the soft limit (always allowed), pin past it with
// and without CAP_IPC_LOCK. The thread is never unlocked, so the runtime
// retires it with its dropped capability.
func TestChildSetup(t *testing.T) {
	if !HasPermitted(unix.CAP_IPC_LOCK) {
		t.Skip("needs CAP_IPC_LOCK")
	}
	var saved unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &saved); err != nil {
		t.Fatal(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_MEMLOCK, &saved)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		lim, err := SetLockLimit(64 << 10)
		if err != nil || lim.SetErr != nil || lim.Soft != 64<<10 {
			t.Errorf("SetLockLimit(64 KiB) = %+v, %v", lim, err)
		}
		mem, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			done <- err
			return
		}
		defer unix.Munmap(mem)
		if err := unix.Mlock(mem); err != nil {
			t.Errorf("with CAP_IPC_LOCK, mlock 1 MiB over a 64 KiB limit: %v", err)
		}
		_ = unix.Munlock(mem)
		if err := DropIPCLock(); err != nil {
			done <- err
			return
		}
		if HasEffective(unix.CAP_IPC_LOCK) {
			t.Error("CAP_IPC_LOCK still effective after DropIPCLock")
		}
		done <- unix.Mlock(mem)
	}()
	if err := <-done; err != unix.ENOMEM && err != unix.EPERM {
		t.Errorf("without CAP_IPC_LOCK, mlock 1 MiB over a 64 KiB limit: %v, want ENOMEM/EPERM", err)
	}
}

// TestLimitFailure: only a failure the locked-memory limit explains is
// the intended one.
func TestLimitFailure(t *testing.T) {
	cases := []struct {
		size, limit int64
		cap         bool
		errno       string
		want        bool
	}{
		{1 << 20, 64 << 10, false, "ENOMEM", true}, // lesson 01's preset
		{1 << 20, 0, false, "EPERM", true},
		{1 << 20, 64 << 10, true, "ENOMEM", false}, // CAP_IPC_LOCK lifts the limit: something else failed
		{32 << 10, 64 << 10, false, "ENOMEM", false},
		{1 << 20, -1, false, "ENOMEM", false}, // unlimited
		{1 << 20, 64 << 10, false, "EFAULT", false},
	}
	for _, c := range cases {
		if got := LimitFailure(c.size, c.limit, c.cap, c.errno); got != c.want {
			t.Errorf("LimitFailure(%d, %d, %v, %s) = %v, want %v", c.size, c.limit, c.cap, c.errno, got, c.want)
		}
	}
}
