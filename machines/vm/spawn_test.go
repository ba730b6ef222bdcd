package vm

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/internal/attackcost"
)

// killedOrDying says whether process pid is gone, a zombie, or has a
// SIGKILL pending (sent, not yet acted on).
func killedOrDying(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return true
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			if strings.HasPrefix(v, "Z") || strings.HasPrefix(v, "X") {
				return true
			}
		case "SigPnd", "ShdPnd":
			if m, err := strconv.ParseUint(v, 16, 64); err == nil && m&(1<<(syscall.SIGKILL-1)) != 0 {
				return true
			}
		}
	}
	return false
}

// TestGuestOutlivesAnotherGuestsThread is issue 43, fall 9: every QEMU
// has Pdeathsig, which fires when the thread that forked it ends, and a
// learner machine's QEMU was forked from a locked thread that ended with
// the machine. A goroutine that locks its thread locks whatever thread it
// is on: if that thread had forked an experiment guest, the experiment
// guest died when the learner's machine ended. Here a goroutine locks
// its thread, forks a control child there directly (as the old start
// did) and starts an "experiment guest" through startNiced, then ends,
// ending the thread: the control child is killed, the guest lives on.
// A niced start (a learner's QEMU) still gets its niceness.
func TestGuestOutlivesAnotherGuestsThread(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep here")
	}
	cmd := func() *exec.Cmd {
		c := exec.Command(sleep, "1000")
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return c
	}
	control, guest := cmd(), cmd()
	cost := attackcost.WatchSelf(nil) // the supervisor is in-process; it logs nothing here
	defer func() { cost.Stop().Check(t, "fall 9 a guest's thread ends (in-process supervisor, sleep for QEMU)") }()
	// The runtime keeps the main thread when a goroutine locked to it
	// ends: a goroutine that lands there holds it (released at the end)
	// and another one tries.
	release := make(chan struct{})
	defer close(release)
	for {
		errc := make(chan error, 2)
		onMain := make(chan bool, 1)
		go func() {
			runtime.LockOSThread() // never unlocked off the main thread: the thread ends with this goroutine
			if unix.Gettid() == unix.Getpid() {
				onMain <- true
				<-release
				runtime.UnlockOSThread()
				return
			}
			onMain <- false
			errc <- control.Start()
			errc <- startNiced(guest, 0)
		}()
		if <-onMain {
			continue
		}
		for range 2 {
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
		break
	}
	defer guest.Process.Kill()
	// The control child dies when the locked thread ends: by then the
	// thread has sent every child it forked its Pdeathsig.
	_ = control.Wait()
	if killedOrDying(guest.Process.Pid) {
		t.Fatalf("the guest started through startNiced was killed when another goroutine's locked thread ended")
	}

	learner := cmd()
	if err := startNiced(learner, 10); err != nil {
		t.Fatal(err)
	}
	if n, err := unix.Getpriority(unix.PRIO_PROCESS, learner.Process.Pid); err != nil || 20-n != 10 {
		t.Errorf("the niced start runs at nice %d (%v), want 10", 20-n, err)
	}
	_ = learner.Process.Kill()
	_ = learner.Wait()
	if killedOrDying(guest.Process.Pid) {
		t.Errorf("the guest died with the learner's machine")
	}
}
