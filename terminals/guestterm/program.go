package guestterm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/machines/demanddisk"
	"github.com/rdmalab/rdmalab/machines/vmguest"
	"github.com/rdmalab/rdmalab/machines/vmproto"
	"github.com/rdmalab/rdmalab/sandbox"
)

// A learner's own program (vmproto.OpProgram, a lesson's :::program):
// compiled with tcc and run in this guest, which is the learner's own, as
// the learner's own user (learnerUID, no capabilities: the program is the
// learner's code, so it gets no more than their shell — it cannot reach
// the agent, the check's evidence or the cgroup limits, and
// RLIMIT_MEMLOCK binds ibv_reg_mr as for any unprivileged program), in a
// cgroup of its own under the learner cgroup, bounded in time and
// output. Only the work directory's "work" folder is the learner's; the
// evidence beside it (counters, output, the peer's report) is root's. The lab's peer, when the exercise has one, runs as the lab
// (root, outside the learner cgroup) on rxe1 and is told to report by
// closing its standard input once the learner's program is over; the
// exercise's check script then judges by the peer's report, the devices'
// counters, the verbs calls the kernel saw the program make (LAB_TRACE,
// verbstrace.go) and the program's exit status, not by what the program
// printed.

const (
	peerDir     = "/run/lab-peer"     // what the peer publishes for the learner's side
	peerRoot    = "/run/rdmalab-peer" // the peer's source and binary, a folder per run (root only)
	peerReadyS  = 30                  // seconds the peer has to publish "ready"
	compileMaxS = 60
	// outputFlush: program output is sent at least this often while it
	// comes, so the page shows it live.
	outputFlush = 50 * time.Millisecond
)

// program starts request m's program run; one at a time per guest.
func (s *Service) program(ctx context.Context, m vmproto.HostMsg, ch vmguest.Channel) {
	p := m.Program
	if p == nil || len(p.Source) == 0 || len(p.Source) > vmproto.ProgramSourceMax || len(p.Check) == 0 {
		_ = ch.End(sandbox.End{Kind: vmproto.EndBadOp, Error: "program without a bounded source and a check"})
		return
	}
	s.mu.Lock()
	if s.progCancel != nil {
		s.mu.Unlock()
		_ = ch.End(sandbox.End{Kind: vmproto.EndBusy, Error: "another program is running"})
		return
	}
	pctx, cancel := context.WithCancel(ctx)
	s.progID, s.progCancel = m.ID, cancel
	s.mu.Unlock()
	ch.Go(func() {
		defer cancel()
		sent := 0
		emit := func(ev sandbox.Event) {
			if sent >= vmproto.ProgramEvents-1 {
				return
			}
			sent++
			ev.Time = time.Now()
			_ = ch.Event(ev)
		}
		end := runProgram(pctx, m.ID, p, m.Lang, emit)
		s.mu.Lock()
		s.progID, s.progCancel = 0, nil
		s.mu.Unlock()
		msg := vmproto.GuestMsg{End: &sandbox.End{}, Program: &end}
		if pctx.Err() != nil && ctx.Err() == nil {
			msg.End = &sandbox.End{Kind: vmproto.EndCancelled, Error: "cancelled"}
		}
		_ = ch.Send(msg)
	})
}

// cancelProgram ends program id; false if it is not the one running.
func (s *Service) cancelProgram(id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.progID != id || s.progCancel == nil {
		return false
	}
	s.progCancel()
	return true
}

// runProgram does one program run, start to end.
func runProgram(ctx context.Context, id uint64, p *vmproto.Program, lang string, emit func(sandbox.Event)) (end vmproto.ProgramEnd) {
	phase := func(name string) { emit(sandbox.Event{Type: sandbox.EvPhase, Name: name}) }
	timeout := min(max(p.TimeoutS, 1), vmproto.ProgramTimeoutMax)
	// Every run starts without the last run's peerDir, with a peer or
	// not: a program without one would otherwise find what an earlier
	// run's peer published there, or what the learner left in it.
	if err := resetPeerDir(); err != nil {
		end.Stage, end.Detail = "peer", err.Error()
		return end
	}
	dir, err := os.MkdirTemp("/tmp", "program-")
	if err != nil {
		end.Stage, end.Detail = "peer", "no work directory: "+err.Error()
		return end
	}
	defer os.RemoveAll(dir)
	_ = os.Chmod(dir, 0o755)
	src := filepath.Join(dir, "main.c")
	if err := os.WriteFile(src, p.Source, 0o644); err != nil {
		end.Stage, end.Detail = "peer", "write the source: "+err.Error()
		return end
	}
	before := filepath.Join(dir, "counters-before")
	_ = os.WriteFile(before, rxeCounters(), 0o644)

	// A collective's check compares with Open MPI's (lesson 09), which
	// lives on the guest's on-demand disk: mounted now, before anything
	// is timed, bounded as the experiments bound it; a disk that does not
	// mount is the check's to report (LAB_DISK_ERROR), not the run's end.
	diskErr := ""
	if p.Ranks > 1 {
		phase("peer") // the harness, next: the page knows no phase of the disk's own
		dctx, dcancel := context.WithTimeout(ctx, 2*time.Minute)
		if err := demanddisk.Mount(dctx); err != nil {
			diskErr = strings.ReplaceAll(err.Error(), "\n", " ")
		}
		dcancel()
	}

	var peer *peerProc
	if len(p.Peer) > 0 {
		if p.Ranks <= 1 {
			phase("peer")
		}
		peer, err = startPeer(ctx, p)
		if err != nil {
			end.Stage, end.Detail = "peer", err.Error()
			return end
		}
		defer peer.stop()
	}

	// The learner's processes write only here: the evidence beside it
	// stays root's.
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err == nil {
		err = os.Chown(work, learnerUID, learnerUID)
	}
	if err != nil {
		end.Stage, end.Detail = "peer", "no work directory: "+err.Error()
		return end
	}

	phase("compile")
	t0 := time.Now()
	out, cerr := compile(ctx, id, src, filepath.Join(work, progName), p.Libs)
	end.Millis.Compile = time.Since(t0).Milliseconds()
	end.Compiler = out
	if len(out) > 0 {
		emit(sandbox.Event{Type: sandbox.EvLog, Name: "compile", Level: "stderr", Message: string(out)})
	}
	if cerr != nil {
		end.Stage, end.Detail = "compile", cerr.Error()
		return end
	}

	phase("run")
	outFile := filepath.Join(dir, "output")
	trace := startVerbsTrace() // verbstrace.go: what reached the kernel
	t0 = time.Now()
	ranks := min(max(p.Ranks, 1), vmproto.ProgramRanksMax)
	run := runLearner(ctx, id, filepath.Join(work, progName), p.Args, work, time.Duration(timeout)*time.Second, outFile, ranks, emit)
	end.Millis.Run = time.Since(t0).Milliseconds()
	traceFile := filepath.Join(dir, "verbs-trace")
	_ = os.WriteFile(traceFile, trace.stop(), 0o644)
	end.Exit, end.Signal, end.TimedOut, end.Capped = run.exit, run.signal, run.timedOut, run.capped

	peerOut := filepath.Join(dir, "peer-output")
	if peer != nil {
		rep := peer.report()
		_ = os.WriteFile(peerOut, rep, 0o644)
		if len(rep) > 0 {
			emit(sandbox.Event{Type: sandbox.EvLog, Name: "peer", Level: "info", Message: string(rep)})
		}
	} else {
		_ = os.WriteFile(peerOut, nil, 0o644)
	}
	after := filepath.Join(dir, "counters-after")
	_ = os.WriteFile(after, rxeCounters(), 0o644)

	phase("check")
	end.Stage = "check"
	timedOut := "0"
	if run.timedOut {
		timedOut = "1"
	}
	// A check that runs more than a verdict (lesson 09 runs Open MPI to
	// compare) may ask for more time than a task's script, within bounds.
	checkS := vmproto.VerifyTimeoutS
	if p.CheckTimeoutS > 0 {
		checkS = min(p.CheckTimeoutS, vmproto.ProgramCheckMaxS)
	}
	cout, cerr := runScript(ctx, p.Check, checkS, lang,
		"LAB_EXIT="+strconv.Itoa(run.exit), "LAB_SIGNAL="+run.signal, "LAB_TIMED_OUT="+timedOut,
		"LAB_SIZE="+strconv.Itoa(ranks), "LAB_FAILED_RANK="+strconv.Itoa(run.rank), "LAB_DISK_ERROR="+diskErr,
		"LAB_OUT="+outFile, "LAB_PEER_OUT="+peerOut, "LAB_SOURCE="+src,
		"LAB_COUNTERS_BEFORE="+before, "LAB_COUNTERS_AFTER="+after, "LAB_TRACE="+traceFile)
	end.Check = cout
	if cerr == nil {
		end.Passed = true
	} else {
		end.Detail = cerr.Error()
	}
	return end
}

// compile runs tcc on src as the learner would (in their cgroup).
func compile(ctx context.Context, id uint64, src, bin string, libs []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, compileMaxS*time.Second)
	defer cancel()
	args := []string{"-Wall", "-o", bin, filepath.Base(src)}
	for _, l := range libs {
		if l == "ibverbs" || l == "rdmacm" || l == "m" {
			args = append(args, "-l"+l)
		}
	}
	out := &capped{n: vmproto.ProgramCompileMax}
	cmd := exec.CommandContext(ctx, "/usr/bin/tcc", args...)
	cmd.Dir = filepath.Dir(src)
	cmd.Env = learnerEnv()
	cmd.Stdout, cmd.Stderr = out, out
	grp := learnerProc(cmd, "compile", id)
	if grp != nil {
		defer grp.remove()
	}
	err := cmd.Run()
	if grp != nil {
		grp.kill()
	}
	if ctx.Err() == context.DeadlineExceeded {
		return out.b, fmt.Errorf("the compiler took more than %d s", compileMaxS)
	}
	if err != nil {
		return out.b, fmt.Errorf("tcc: %w", err)
	}
	return out.b, nil
}

func learnerEnv() []string {
	return []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + learnerHome, "LANG=C.UTF-8", "LAB_PEER_DIR=" + peerDir}
}

// learnerProc makes cmd run as the learner's own processes do: as the
// learner's user with no capabilities, in a cgroup of its own under the
// learner cgroup (nil when the guest has none: then only the process
// group bounds it), in a process group of its own.
func learnerProc(cmd *exec.Cmd, kind string, id uint64) *termGroup {
	asLearner(cmd)
	grp := programGroup(kind, id)
	if grp != nil {
		grp.place(cmd.SysProcAttr)
	}
	return grp
}

// asLearner makes cmd run as the learner's user with no capabilities, in
// a process group of its own that cancelling kills.
func asLearner(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true,
		Credential: &syscall.Credential{Uid: learnerUID, Gid: learnerUID, Groups: []uint32{}}}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
}

// programGroup is the cgroup of one program run's processes (nil when the
// guest has none).
func programGroup(kind string, id uint64) *termGroup {
	grp, err := newLearnerGroup(fmt.Sprintf("%s-%d", kind, id))
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdmalab-guest: program %d without its cgroup limits: %v\n", id, err)
		return nil
	}
	return grp
}

// learnerRun is how the learner's program ended.
type learnerRun struct {
	exit     int
	signal   string
	rank     int // the rank exit and signal are of: the first that failed (0 when none did)
	timedOut bool
	capped   bool
}

// runLearner runs the learner's program, streaming its output (at most
// ProgramOutputMax bytes: beyond it the program is killed) and keeping it
// in outFile for the check. With ranks > 1 it runs that many copies at
// once, each told its LAB_RANK and LAB_SIZE, in the one cgroup, with the
// one time limit and the one output budget; the first rank that fails
// ends the others (they would wait for it until the time limit).
func runLearner(ctx context.Context, id uint64, bin string, args []string, dir string, limit time.Duration, outFile string, ranks int, emit func(sandbox.Event)) learnerRun {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	grp := programGroup("run", id)
	if grp != nil {
		defer grp.remove()
	}
	cmds := make([]*exec.Cmd, ranks)
	for r := range cmds {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = dir
		cmd.Env = learnerEnv()
		if ranks > 1 {
			cmd.Env = append(cmd.Env, "LAB_RANK="+strconv.Itoa(r), "LAB_SIZE="+strconv.Itoa(ranks))
		}
		asLearner(cmd)
		if grp != nil {
			grp.place(cmd.SysProcAttr)
		}
		cmds[r] = cmd
	}
	f, _ := os.Create(outFile)
	if f != nil {
		defer f.Close()
	}
	st := &outStream{emit: emit, file: f, kill: cancel}
	// Standard output is a terminal, as in the learner's shell: stdio
	// then flushes every line, so output shows while the program runs
	// (and is not lost in a buffer when it is killed). The ranks share
	// it, a line at a time.
	var copied chan struct{}
	master, slave, perr := pty.Open()
	if perr == nil {
		if t, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS); err == nil {
			t.Oflag &^= unix.OPOST // no \r before \n
			t.Lflag &^= unix.ECHO
			_ = unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, t)
		}
		copied = make(chan struct{})
		go func() {
			defer close(copied)
			_, _ = io.Copy(st.writer("stdout"), master) // ends with EIO once every copy of the slave is closed
		}()
	}
	stderr := st.writer("stderr")
	errs := make([]error, ranks)
	var wg sync.WaitGroup
	var failOnce sync.Once
	r0 := learnerRun{}
	for r, cmd := range cmds {
		cmd.Stderr = stderr
		cmd.Stdout = st.writer("stdout")
		if slave != nil {
			cmd.Stdout = slave
		}
		if errs[r] = cmd.Start(); errs[r] != nil {
			cancel()
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = cmd.Wait()
			if errs[r] != nil {
				// The first rank to fail is the one to report; the
				// others are ended, not left waiting for it.
				failOnce.Do(func() { r0.rank = r; cancel() })
			}
		}()
	}
	if slave != nil {
		slave.Close()
	}
	wg.Wait()
	if grp != nil {
		grp.kill() // what it left behind (a fork bomb's children)
	}
	for _, cmd := range cmds {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	if copied != nil {
		select {
		case <-copied:
		case <-time.After(2 * time.Second):
		}
		master.Close()
	}
	st.flush()
	r := learnerRun{capped: st.over(), rank: r0.rank}
	r.timedOut = ctx.Err() == context.DeadlineExceeded && !r.capped
	err := errs[r.rank]
	if err == nil {
		for i, e := range errs { // a rank that did not start
			if e != nil {
				r.rank, err = i, e
				break
			}
		}
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.exit, r.signal = -1, ws.Signal().String()
		}
	case err != nil:
		r.exit, r.signal = -1, err.Error()
	}
	return r
}

// outStream collects a program's stdout and stderr: kept in a file for
// the check, sent as log events in chunks, at most ProgramOutputMax bytes.
type outStream struct {
	mu    sync.Mutex
	emit  func(sandbox.Event)
	file  *os.File
	kill  func()
	total int
	name  string // stream of buf
	buf   []byte
	last  time.Time
}

type streamWriter struct {
	s    *outStream
	name string
}

func (s *outStream) writer(name string) io.Writer { return &streamWriter{s, name} }

func (w *streamWriter) Write(p []byte) (int, error) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	room := vmproto.ProgramOutputMax - s.total
	if room <= 0 {
		s.kill()
		return n, nil
	}
	if len(p) > room {
		p = p[:room]
	}
	s.total += len(p)
	if s.file != nil {
		_, _ = s.file.Write(p)
	}
	if s.name != w.name {
		s.flushLocked()
		s.name = w.name
	}
	s.buf = append(s.buf, p...)
	if len(s.buf) >= vmproto.ProgramChunk || time.Since(s.last) >= outputFlush {
		s.flushLocked()
	}
	if s.total >= vmproto.ProgramOutputMax {
		s.flushLocked()
		s.kill()
	}
	return n, nil
}

func (s *outStream) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
}

func (s *outStream) flushLocked() {
	s.last = time.Now()
	if len(s.buf) == 0 {
		return
	}
	level := "info"
	if s.name == "stderr" {
		level = "stderr"
	}
	s.emit(sandbox.Event{Type: sandbox.EvLog, Name: s.name, Level: level, Message: string(s.buf)})
	s.buf = nil
}

func (s *outStream) over() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total >= vmproto.ProgramOutputMax
}

// peerProc is the lab's peer program, running.
type peerProc struct {
	srcDir string // its source and binary, removed by stop
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *capped
	done   chan struct{}
	once   sync.Once
}

// startPeer compiles the peer and starts it, waiting until it has
// published peerDir/ready (or has failed). Everything root does here is
// in folders only root can write (issue 43 fall 1: a learner who could
// pre-create the peer's folder swapped their own peer.c in, and root ran
// it): the source and the binary in a fresh folder under peerRoot, which
// is checked to be root's own; peerDir is made anew, and a peerDir that
// cannot be emptied (a learner's 4,600-deep folder chain) ends the run
// with the reason instead of being used as it is.
func startPeer(ctx context.Context, p *vmproto.Program) (pp *peerProc, err error) {
	if err := resetPeerDir(); err != nil {
		return nil, err
	}
	srcDir, err := os.MkdirTemp(peerRoot, "peer-")
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(srcDir)
		}
	}()
	// The learner's side answers in here (a file of its own, as the
	// exercise says): writable by anyone, like /tmp, and like /tmp root
	// follows no learner's link in it (the guest's fs.protected_*).
	if err := os.Mkdir(peerDir, 0o755); err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	if err := ownedByRoot(peerDir); err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	if err := os.Chmod(peerDir, 0o777|os.ModeSticky); err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	src := filepath.Join(srcDir, "peer.c")
	if err := os.WriteFile(src, p.Peer, 0o600); err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	bin := filepath.Join(srcDir, "peer")
	cctx, cancel := context.WithTimeout(ctx, compileMaxS*time.Second)
	cc := exec.CommandContext(cctx, "/usr/bin/tcc", "-o", bin, src, "-libverbs", "-lrdmacm")
	cc.Dir = srcDir
	out, err := cc.CombinedOutput()
	cancel()
	if err != nil {
		return nil, fmt.Errorf("the lab's peer did not compile: %v: %s", err, bytes.TrimSpace(out))
	}
	pp = &peerProc{out: &capped{n: vmproto.ProgramPeerMax}, done: make(chan struct{}), srcDir: srcDir}
	cmd := exec.Command(bin, p.PeerArgs...)
	cmd.Dir = peerDir
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "LAB_PEER_DIR=" + peerDir}
	cmd.Stdout, cmd.Stderr = pp.out, pp.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pp.stdin, err = cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("the lab's peer did not start: %w", err)
	}
	pp.cmd = cmd
	go func() { _ = cmd.Wait(); close(pp.done) }()
	deadline := time.After(peerReadyS * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(peerDir, "ready")); err == nil {
			return pp, nil
		}
		select {
		case <-pp.done:
			return nil, fmt.Errorf("the lab's peer ended before it was ready: %s", bytes.TrimSpace(pp.out.b))
		case <-deadline:
			pp.stop()
			return nil, fmt.Errorf("the lab's peer was not ready after %d s: %s", peerReadyS, bytes.TrimSpace(pp.out.b))
		case <-ctx.Done():
			pp.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// report asks the peer for its report (its stdin closes) and returns what
// it printed, waiting at most 3 s.
func (pp *peerProc) report() []byte {
	_ = pp.stdin.Close()
	select {
	case <-pp.done:
	case <-time.After(3 * time.Second):
		pp.stop()
	}
	<-pp.done
	return slices.Clone(pp.out.b)
}

// stop kills the peer and its process group and removes its folder.
func (pp *peerProc) stop() {
	pp.once.Do(func() {
		_ = pp.stdin.Close()
		if pp.cmd != nil && pp.cmd.Process != nil {
			_ = syscall.Kill(-pp.cmd.Process.Pid, syscall.SIGKILL)
			<-pp.done
		}
		_ = os.RemoveAll(pp.srcDir)
	})
}

// resetPeerDir removes the last run's peerDir (clearPeerDir) after
// making sure peerRoot, where what cannot be removed goes, is root's own.
func resetPeerDir() error {
	if err := rootOnlyDir(peerRoot); err != nil {
		return fmt.Errorf("peer: %w", err)
	}
	return clearPeerDir()
}

// clearPeerDir removes the last run's peerDir. What cannot be removed
// (a learner's folder chain deeper than the agent's file handles reach)
// is moved whole into peerRoot, out of the learner's reach and out of the
// way; a run goes on only when peerDir is gone, never with the old one.
// Folders moved aside earlier are removed again here, as far as possible.
func clearPeerDir() error {
	olds, _ := filepath.Glob(filepath.Join(peerRoot, "stale-*"))
	for _, o := range olds {
		if err := os.RemoveAll(o); err != nil {
			fmt.Fprintf(os.Stderr, "rdmalab-guest: a peer folder moved aside stays (root's only): %v\n", shortPathErr(err))
		}
	}
	err := os.RemoveAll(peerDir)
	if err == nil {
		return nil
	}
	aside, merr := os.MkdirTemp(peerRoot, "stale-")
	if merr == nil {
		merr = os.Rename(peerDir, filepath.Join(aside, "lab-peer"))
	}
	if merr != nil {
		return fmt.Errorf("the lab's peer folder %s could not be emptied (%v) nor moved aside (%v): reset your machine to start afresh", peerDir, shortPathErr(err), shortPathErr(merr))
	}
	fmt.Fprintf(os.Stderr, "rdmalab-guest: %s could not be emptied (%v): moved aside to %s\n", peerDir, shortPathErr(err), aside)
	return nil
}

// shortPathErr is err without the path a *os.PathError names (a learner's
// folder chain makes it thousands of characters long).
func shortPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// rootOnlyDir makes dir (in a folder of root's) a folder only root may
// enter, or says why it is not one: an existing dir must be root's own,
// not a link, and closed to everyone else.
func rootOnlyDir(dir string) error {
	if err := ownedByRoot(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := ownedByRoot(dir); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is open to others (%v): refusing to use it", dir, fi.Mode().Perm())
	}
	return nil
}

// ownedByRoot says whether dir is a folder (not a link) of root's that no
// one else may write.
func ownedByRoot(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || st.Uid != 0 {
		return fmt.Errorf("%s is not root's own folder: refusing to use it", dir)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s may be written by others (%v): refusing to use it", dir, fi.Mode().Perm())
	}
	return nil
}

// rxeCounters lists every rxe device's hw_counters as "DEV NAME VALUE"
// lines.
func rxeCounters() []byte {
	var b strings.Builder
	devs, _ := filepath.Glob("/sys/class/infiniband/*/ports/1/hw_counters")
	slices.Sort(devs)
	for _, d := range devs {
		dev := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(d))))
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			v, err := os.ReadFile(filepath.Join(d, e.Name()))
			if err != nil {
				continue
			}
			fmt.Fprintf(&b, "%s %s %s\n", dev, e.Name(), strings.TrimSpace(string(v)))
		}
	}
	return []byte(b.String())
}
