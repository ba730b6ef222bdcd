package rdmaexp

import (
	"os"
	"path/filepath"
	"testing"
)

// TestParseStrace reads lines as strace -qq -yy -s 0 writes them for one
// thread: calls cut by the attach/detach are not counted, nor a call a
// signal interrupted that the kernel restarts (the restart is the call),
// fds are named by what they are, and each call is sorted by what it was
// for.
func TestParseStrace(t *testing.T) {
	log := `read(5<TCP:[10.0.0.2:41000->10.0.0.1:39999]>, 0xc000200000, 64) = ? ERESTARTSYS (To be restarted if SA_RESTART is set)
rt_sigreturn({mask=[]})                 = 0
read(5<TCP:[10.0.0.2:41000->10.0.0.1:39999]>, ""..., 64) = 64
write(5<TCP:[10.0.0.2:41000->10.0.0.1:39999]>, ""..., 64) = 64
write(3</dev/infiniband/uverbs0>, ""..., 32) = 32
write(3</dev/infiniband/uverbs0>, ""..., 32) = 32
poll([{fd=7<anon_inode:[infinibandevent]>, events=POLLIN}], 1, 10000) = 1 ([{fd=7, revents=POLLIN}])
read(7<anon_inode:[infinibandevent]>, ""..., 16) = 16
ppoll([{fd=7, events=POLLIN}], 1, {tv_sec=10, tv_nsec=0}, NULL, 0) = 1 ([{fd=7, revents=POLLIN}], left {tv_sec=9, tv_nsec=0})
ioctl(3</dev/infiniband/uverbs0<char 231:192>>, RDMA_VERBS_IOCTL, 0x7ffc) = 0
sched_yield()                           = 0
write(1<pipe:[4242]>, ""..., 40) = 40
futex(0xc000100148, FUTEX_WAKE_PRIVATE, 1) = 1
read(5<TCP:[10.0.0.2:41000->10.0.0.1:39999]>,  <detached ...>
`
	f := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(f, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := parseStrace(f, trTCP)
	if err != nil {
		t.Fatal(err)
	}
	// In an RDMA leg the TCP socket is the lab's control channel: its
	// calls are not the message path (a loaded machine caught its last
	// read() inside the traced window and failed the guest test).
	rdma, err := parseStrace(f, trSend)
	if err != nil {
		t.Fatal(err)
	}
	if lr := (legCount{Counts: rdma}); lr.named(scControl, "read") != 1 || lr.named(scControl, "write") != 1 || lr.named(scMessage, "write") != 2 || lr.of(scMessage) != 6 {
		t.Errorf("an RDMA leg's TCP socket: %+v", rdma)
	}
	l := legCount{Counts: got}
	for _, c := range []struct {
		kind, name string
		want       int
	}{
		{scMessage, "write", 3}, {scMessage, "read", 2}, {scMessage, "poll", 1}, {scMessage, "ppoll", 1}, {scMessage, "ioctl", 1},
		{scYield, "sched_yield", 1}, {scReport, "write", 1}, {scRuntime, "futex", 1},
	} {
		if n := l.named(c.kind, c.name); n != c.want {
			t.Errorf("%s %s: %d, want %d (all: %+v)", c.kind, c.name, n, c.want, got)
		}
	}
	if n := l.of(scMessage); n != 8 {
		t.Errorf("message path: %d calls, want 8", n)
	}
	for _, c := range got {
		if c.Name == "write" && c.Kind == scMessage && c.FD != "TCP socket" && c.FD != "/dev/infiniband/uverbs0" {
			t.Errorf("write on %q", c.FD)
		}
	}
}
