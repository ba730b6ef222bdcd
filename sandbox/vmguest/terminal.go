package vmguest

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

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/vmproto"
)

// A learner's terminal: a root shell on a PTY inside this guest, its
// output relayed to the host as Data lines of the OpTerm request. The guest
// is the learner's own (the host gives each learner one), so the shell is
// root of a machine that has no NIC and nothing of anyone else's.

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
}

// termShell is the shell a learner gets: bash when the image has it (line
// editing, history), else busybox's ash.
func termShell() []string {
	if _, err := os.Stat("/usr/bin/bash"); err == nil {
		return []string{"/usr/bin/bash", "--login", "-i"}
	}
	return []string{"/usr/bin/busybox", "sh", "-l", "-i"}
}

func setWinsize(f *os.File, rows, cols uint16) {
	if rows == 0 || cols == 0 {
		return
	}
	_ = unix.IoctlSetWinsize(int(f.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
}

// startTerm starts a shell for request m and relays its output until it
// exits; the end line follows the last output.
func (c *guestConn) startTerm(ctx context.Context, m vmproto.HostMsg) {
	c.mu.Lock()
	if c.terms == nil {
		c.terms = map[uint64]*guestTerm{}
	}
	if len(c.terms) >= maxTerms {
		c.mu.Unlock()
		_ = c.send(vmproto.GuestMsg{ID: m.ID, End: &sandbox.End{Kind: vmproto.EndBusy, Error: fmt.Sprintf("this guest already runs %d terminals", maxTerms)}})
		return
	}
	c.mu.Unlock()
	master, slave, err := pty.Open() // master: ours; slave: the child's stdio
	if err != nil {
		_ = c.send(vmproto.GuestMsg{ID: m.ID, End: &sandbox.End{Kind: vmproto.EndFailed, Error: "no terminal: " + err.Error()}})
		return
	}
	setWinsize(master, m.Rows, m.Cols)
	shell := termShell()
	argv := withoutRawIO(shell)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/root"
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "TERM=xterm-256color",
		"LANG=C.UTF-8", "USER=root", "SHELL=" + shell[0], `PS1=root@rdmalab-guest:\w# `}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	grp, gerr := newTermGroup(m.ID)
	if gerr != nil {
		fmt.Fprintf(os.Stderr, "rdmalab-guest: terminal %d without its cgroup limits: %v\n", m.ID, gerr)
		grp = nil
	} else {
		grp.place(cmd.SysProcAttr)
	}
	_ = os.MkdirAll("/root", 0o700)
	if err := cmd.Start(); err != nil {
		if grp != nil {
			grp.remove()
		}
		slave.Close()
		master.Close()
		_ = c.send(vmproto.GuestMsg{ID: m.ID, End: &sandbox.End{Kind: vmproto.EndFailed, Error: "no shell: " + err.Error()}})
		return
	}
	slave.Close()
	t := &guestTerm{master: master, cmd: cmd, in: make(chan []byte, 64), grp: grp}
	go func() {
		// A shell that does not read its input must not block the port's
		// reader (which also serves pings): writes happen here, and input
		// beyond the channel is dropped.
		for b := range t.in {
			_, _ = master.Write(b)
		}
	}()
	c.mu.Lock()
	c.terms[m.ID] = t
	c.mu.Unlock()
	reaped := make(chan struct{})
	go t.endWithShell(reaped)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(reaped)
		stop := context.AfterFunc(ctx, t.kill)
		defer stop()
		buf := make([]byte, termChunk)
		start, sent := time.Now(), 0
		for {
			n, err := master.Read(buf)
			if n > 0 {
				_ = c.send(vmproto.GuestMsg{ID: m.ID, Data: append([]byte(nil), buf[:n]...)})
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
		c.mu.Lock()
		delete(c.terms, m.ID)
		close(t.in)
		c.mu.Unlock()
		end := vmproto.GuestMsg{ID: m.ID, End: &sandbox.End{}}
		var ee *exec.ExitError
		if werr != nil && !errors.As(werr, &ee) {
			end.End.Kind, end.End.Error = vmproto.EndFailed, werr.Error()
		}
		_ = c.send(end)
	}()
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
func (c *guestConn) termIn(m vmproto.HostMsg) {
	c.mu.Lock()
	t := c.terms[m.Target]
	c.mu.Unlock()
	if t == nil {
		return
	}
	if m.Rows > 0 && m.Cols > 0 {
		setWinsize(t.master, m.Rows, m.Cols)
	}
	if len(m.Data) > 0 {
		c.mu.Lock()
		if c.terms[m.Target] == t {
			select {
			case t.in <- m.Data:
			default:
			}
		}
		c.mu.Unlock()
	}
}

// closeTerm ends terminal id; false if there is none.
func (c *guestConn) closeTerm(id uint64) bool {
	c.mu.Lock()
	t := c.terms[id]
	c.mu.Unlock()
	if t == nil {
		return false
	}
	t.kill()
	return true
}
