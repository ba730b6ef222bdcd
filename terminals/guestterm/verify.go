package guestterm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/machines/vmguest"
	"github.com/rdmalab/rdmalab/machines/vmproto"
	"github.com/rdmalab/rdmalab/sandbox"
)

// verify runs a lesson task's verify script (vmproto.OpVerify) in this
// guest, which is one learner's own: the script inspects what the learner
// did in their terminal (the shells' /proc, files, counters). One at a
// time per guest; bounded in time and output; killed with its process
// group when the time is up.
func (s *Service) verify(ctx context.Context, m vmproto.HostMsg, ch vmguest.Channel) {
	if len(m.Data) == 0 {
		_ = ch.End(sandbox.End{Kind: vmproto.EndBadOp, Error: "verify without a script"})
		return
	}
	s.mu.Lock()
	if s.verifying {
		s.mu.Unlock()
		_ = ch.End(sandbox.End{Kind: vmproto.EndBusy, Error: "another check is running"})
		return
	}
	s.verifying = true
	pids := s.termPIDs()
	s.mu.Unlock()
	ch.Go(func() {
		out, err := runVerify(ctx, m.Data, pids, m.Lang)
		// Free before the end line: the host may send the next check
		// as soon as it reads it.
		s.mu.Lock()
		s.verifying = false
		s.mu.Unlock()
		_ = ch.Data(out)
		end := sandbox.End{}
		if err != nil {
			end.Kind, end.Error = vmproto.EndFailed, err.Error()
		}
		_ = ch.End(end)
	})
}

// termPIDs lists every process of the open terminals' sessions (the
// shells and what they started). Called with c.mu held.
func (s *Service) termPIDs() []int {
	sids := map[int]bool{}
	for _, t := range s.terms {
		if t.cmd.Process != nil {
			sids[t.cmd.Process.Pid] = true
		}
	}
	if len(sids) == 0 {
		return nil
	}
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := unix.Getsid(pid); err == nil && sids[s] {
			out = append(out, pid)
		}
	}
	return out
}

// capped keeps the first n bytes written to it.
type capped struct {
	b []byte
	n int
}

func (w *capped) Write(p []byte) (int, error) {
	if room := w.n - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// runVerify runs script with /bin/sh; a nil error is exit status 0.
func runVerify(ctx context.Context, script []byte, pids []int, lang string) ([]byte, error) {
	ps := make([]string, len(pids))
	for i, p := range pids {
		ps[i] = strconv.Itoa(p)
	}
	return runScript(ctx, script, vmproto.VerifyTimeoutS, lang, "LAB_TERM_PIDS="+strings.Join(ps, " "))
}

// runScript runs a lesson's script with /bin/sh as the lab (root), with
// LAB_LANG, LAB_CHECK_TIMEOUT (limitS) and env, bounded by limitS seconds
// and VerifyOutputMax; a nil error is exit status 0.
func runScript(ctx context.Context, script []byte, limitS int, lang string, env ...string) ([]byte, error) {
	if lang != "zh" && lang != "en" {
		lang = "en"
	}
	f, err := os.CreateTemp("", "task-*.sh")
	if err != nil {
		return nil, fmt.Errorf("write the script: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(script); err != nil {
		f.Close()
		return nil, fmt.Errorf("write the script: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write the script: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(limitS)*time.Second)
	defer cancel()
	out := &capped{n: vmproto.VerifyOutputMax}
	cmd := exec.CommandContext(ctx, "/bin/sh", f.Name())
	cmd.Dir = "/root"
	cmd.Env = append([]string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8",
		"LAB_LANG=" + lang, "LAB_CHECK_TIMEOUT=" + strconv.Itoa(limitS)}, env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left behind
	}
	if ctx.Err() == context.DeadlineExceeded {
		return out.b, fmt.Errorf("timed out after %d s", limitS)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.b, fmt.Errorf("exit status %d", ee.ExitCode())
	}
	return out.b, err
}
