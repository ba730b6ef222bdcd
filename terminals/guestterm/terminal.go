package guestterm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/machines/vmguest"
	"github.com/rdmalab/rdmalab/machines/vmproto"
	"github.com/rdmalab/rdmalab/sandbox"
)

// A learner's terminal: a shell on a PTY inside this guest, its output
// relayed to the host as Data lines of the OpTerm request. The guest is the
// learner's own (the host gives each learner one), a machine that has no
// NIC and nothing of anyone else's; still the shell is not root's. A root
// shell could take the guest's agent over (bind-mount a script over
// labagent, kill it: PID 1 restarts the script, which then owns the link
// to the host), leave its cgroup, lift pids.max, install a core_pattern
// helper that runs with every capability, and fake any task check. So the
// shell runs as the ordinary user learnerUID with what the lessons need
// granted narrowly:
//
//   - the RDMA devices: /dev/infiniband/uverbs* and rdma_cm are 0666 by
//     the kernel's own rule, and the counters in sysfs are readable;
//   - RLIMIT_MEMLOCK: soft 8 MiB as for any user, hard learnerMemlockMax,
//     so `ulimit -l 65536` works and the limit binds (no CAP_IPC_LOCK);
//   - CAP_NET_RAW as an ambient capability, for tcpdump on the veths.
//
// Everything else is root's: the agent and its port (/dev/vport*, 0600),
// the cgroups (the learner's limits), /proc/sys, the serial console, the
// check scripts (run by the agent as root, written 0600).
const (
	learnerUID        = 1000
	learnerHome       = "/home/learner"
	learnerMemlockMax = 128 << 20
	capNetRaw         = 13
)

const (
	// maxTerms bounds the shells one guest runs at once.
	maxTerms = 4
	// termRate bounds a terminal's output in bytes per second: the
	// virtio-serial port also carries the host's health pings, and a
	// learner's `yes` must not starve them. A PTY the reader does not
	// drain blocks the writer, so the shell just slows down.
	termRate  = 256 << 10
	termChunk = 4 << 10
)

// guestTerm is one running shell.
type guestTerm struct {
	master *os.File
	cmd    *exec.Cmd
	in     chan []byte // keystrokes, written by their own goroutine
	grp    *termGroup  // its cgroup (termlimits.go); nil if the guest has none
	ch     vmguest.Channel
	// dropping is set from the first keystrokes the full queue drops
	// until some go through again: the host hears once per such spell
	// (KeysDropped), not once per key.
	dropping bool
}

// termShell is the shell a learner gets: bash when the image has it (line
// editing, history), else busybox's ash.
func termShell() []string {
	if _, err := os.Stat("/usr/bin/bash"); err == nil {
		return []string{"/usr/bin/bash", "--login", "-i"}
	}
	return []string{"/usr/bin/busybox", "sh", "-l", "-i"}
}

// learnerHomeDir makes the learner's home, theirs. The root directory is
// the initramfs's tmpfs, whose mode is 1777 unless set: the learner must
// not create entries beside /usr and /home.
func learnerHomeDir() error {
	if err := os.Chmod("/", 0o755); err != nil {
		return err
	}
	if err := os.Mkdir("/home", 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := os.Mkdir(learnerHome, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return os.Lchown(learnerHome, learnerUID, learnerUID)
}

func setWinsize(f *os.File, rows, cols uint16) {
	if rows == 0 || cols == 0 {
		return
	}
	_ = unix.IoctlSetWinsize(int(f.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
}

// startTerm starts a shell for request m and relays its output until it
// exits; the end line follows the last output.
func (s *Service) startTerm(ctx context.Context, m vmproto.HostMsg, ch vmguest.Channel) {
	s.mu.Lock()
	if s.terms == nil {
		s.terms = map[uint64]*guestTerm{}
	}
	if len(s.terms) >= maxTerms {
		s.mu.Unlock()
		_ = ch.End(sandbox.End{Kind: vmproto.EndBusy, Error: fmt.Sprintf("this guest already runs %d terminals", maxTerms)})
		return
	}
	s.mu.Unlock()
	master, slave, err := pty.Open() // master: ours; slave: the child's stdio
	if err != nil {
		_ = ch.End(sandbox.End{Kind: vmproto.EndFailed, Error: "no terminal: " + err.Error()})
		return
	}
	setWinsize(master, m.Rows, m.Cols)
	shell := termShell()
	if err := learnerHomeDir(); err != nil {
		slave.Close()
		master.Close()
		_ = ch.End(sandbox.End{Kind: vmproto.EndFailed, Error: "no home: " + err.Error()})
		return
	}
	cmd := exec.Command(shell[0], shell[1:]...)
	cmd.Dir = learnerHome
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + learnerHome, "TERM=xterm-256color",
		"LANG=C.UTF-8", "USER=learner", "LOGNAME=learner", "SHELL=" + shell[0], `PS1=learner@rdmalab-guest:\w$ `,
		// History goes to ~/.bash_history after every command, not at the
		// shell's exit: a machine kept for its learner (host: terminals/terminal/keep.go)
		// has its shell ended, not exited, and the next one reads it back.
		"PROMPT_COMMAND=history -a"}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0,
		Credential:  &syscall.Credential{Uid: learnerUID, Gid: learnerUID, Groups: []uint32{}},
		AmbientCaps: []uintptr{capNetRaw}}
	grp, gerr := newTermGroup(m.ID)
	if gerr != nil {
		fmt.Fprintf(os.Stderr, "rdmalab-guest: terminal %d without its cgroup limits: %v\n", m.ID, gerr)
		grp = nil
	} else {
		grp.place(cmd.SysProcAttr)
	}
	if err := cmd.Start(); err != nil {
		if grp != nil {
			grp.remove()
		}
		slave.Close()
		master.Close()
		_ = ch.End(sandbox.End{Kind: vmproto.EndFailed, Error: "no shell: " + err.Error()})
		return
	}
	slave.Close()
	// Soft as for any user, hard above what the lessons ask for.
	_ = unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: 8 << 20, Max: learnerMemlockMax}, nil)
	t := &guestTerm{master: master, cmd: cmd, in: make(chan []byte, 64), grp: grp, ch: ch}
	go func() {
		// A shell that does not read its input must not block the port's
		// reader (which also serves pings): writes happen here, and input
		// beyond the channel is dropped and the host told (termIn).
		for b := range t.in {
			_, _ = master.Write(b)
		}
	}()
	s.mu.Lock()
	s.terms[m.ID] = t
	s.mu.Unlock()
	reaped := make(chan struct{})
	go t.endWithShell(reaped)
	ch.Go(func() {
		defer close(reaped)
		stop := context.AfterFunc(ctx, t.kill)
		defer stop()
		buf := make([]byte, termChunk)
		start, sent := time.Now(), 0
		for {
			n, err := master.Read(buf)
			if n > 0 {
				_ = ch.Data(append([]byte(nil), buf[:n]...))
				sent += n
				// Hold the average at termRate since the last pause.
				if ahead := time.Duration(float64(sent)/termRate*float64(time.Second)) - time.Since(start); ahead > 0 {
					time.Sleep(ahead)
				}
				if time.Since(start) > 2*time.Second {
					start, sent = time.Now(), 0
				}
			}
			if err != nil {
				break // EIO once the shell and its children closed the slave
			}
		}
		t.kill()
		werr := cmd.Wait()
		if t.grp != nil {
			t.grp.remove()
		}
		master.Close()
		s.mu.Lock()
		delete(s.terms, m.ID)
		close(t.in)
		s.mu.Unlock()
		end := sandbox.End{}
		var ee *exec.ExitError
		if werr != nil && !errors.As(werr, &ee) {
			end.Kind, end.Error = vmproto.EndFailed, werr.Error()
		}
		_ = ch.End(end)
	})
}

// endWithShell ends everything the shell started once the shell itself
// has exited: background jobs (or a fork bomb, whose learner can still
// type the builtin `exit`) would keep the PTY open and the terminal alive.
// It stops when the shell is reaped (its pid could then be reused).
func (t *guestTerm) endWithShell(reaped <-chan struct{}) {
	stat := fmt.Sprintf("/proc/%d/stat", t.cmd.Process.Pid)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-reaped:
			return
		case <-tick.C:
		}
		b, err := os.ReadFile(stat)
		if err != nil {
			return
		}
		if i := bytes.LastIndexByte(b, ')'); i > 0 && len(b) > i+2 && b[i+2] == 'Z' {
			t.kill()
			return
		}
	}
}

// kill ends the shell and everything it started: every process of its
// session (job control puts jobs in process groups of their own).
func (t *guestTerm) kill() {
	if t.grp != nil {
		t.grp.kill()
	}
	if t.cmd.Process == nil {
		return
	}
	sid := t.cmd.Process.Pid
	_ = syscall.Kill(-sid, syscall.SIGKILL)
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := unix.Getsid(pid); err == nil && s == sid {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// termIn writes keystrokes to terminal m.Target, or resizes it.
func (s *Service) termIn(m vmproto.HostMsg) {
	s.mu.Lock()
	t := s.terms[m.Target]
	s.mu.Unlock()
	if t == nil {
		return
	}
	if m.Rows > 0 && m.Cols > 0 {
		setWinsize(t.master, m.Rows, m.Cols)
	}
	if len(m.Data) > 0 {
		s.mu.Lock()
		if s.terms[m.Target] == t {
			select {
			case t.in <- m.Data:
				t.dropping = false
			default:
				if !t.dropping {
					t.dropping = true
					_ = t.ch.Event(sandbox.Event{Type: sandbox.EvLog, Name: vmproto.KeysDropped})
				}
			}
		}
		s.mu.Unlock()
	}
}

// closeTerm ends terminal id; false if there is none.
func (s *Service) closeTerm(id uint64) bool {
	s.mu.Lock()
	t := s.terms[id]
	s.mu.Unlock()
	if t == nil {
		return false
	}
	t.kill()
	return true
}
