package vm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/time/rate"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/fsutil"
	"github.com/rdmalab/rdmalab/internal/lineio"
	"github.com/rdmalab/rdmalab/internal/textclip"
	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/machines/vmproto"
	"github.com/rdmalab/rdmalab/sandbox"
)

// Guest is one running QEMU guest and the host's end of its agent port.
type Guest struct {
	Accel   string        // kvm|tcg
	Hello   vmproto.Hello // what the agent said when it came up
	Started time.Time     // QEMU started
	Ready   time.Time     // hello received
	Console string        // console log file

	cmd         *exec.Cmd
	runDir      string
	keepConsole string // the console log is copied here when the guest stops
	console     *consoleSink
	log         *slog.Logger
	exited      chan struct{} // closed when QEMU has exited
	waitErr     error

	client   *client
	qmpSock  string
	Restored bool // started from a snapshot, not booted

	ram     *guestRAM // where its RAM lives (sharedram.go); nil: QEMU's own
	bootRAM string    // the RAM file this guest writes, removed when it stops unless a snapshot took it
	// ramFile is the RAM file this guest maps copy-on-write, open: the
	// file a kept state is diffed against (keepdiff.go), whatever its
	// name becomes meanwhile.
	ramFile *os.File
	ramMu   sync.Mutex // ramFile: Stop closes it while a save may read it
}

// StartGuest boots a guest from im and returns once its agent said hello,
// or with an error that includes the console's last lines. shell puts the
// console on this process's stdio with a root shell (labserver vm shell).
func StartGuest(ctx context.Context, cfg Config, im *vmimage.Image, accel string, shell bool) (*Guest, error) {
	return startGuest(ctx, cfg, im, accel, shell, nil)
}

// startGuest boots a guest, or with snap restores one from a snapshot: the
// restored guest is the snapshotted one, ready at once, so it answers a
// ping instead of saying hello.
func startGuest(ctx context.Context, cfg Config, im *vmimage.Image, accel string, shell bool, snap *Snapshot) (*Guest, error) {
	cfg = cfg.WithDefaults()
	qemu, err := vmimage.CheckQEMU(cfg.QEMU)
	if err != nil {
		return nil, err
	}
	// A short directory of our own: unix socket paths are limited to 108 bytes.
	runDir, err := os.MkdirTemp("", "rdmalab-vm-")
	if err != nil {
		return nil, fmt.Errorf("guest run dir: %w", err)
	}
	g := &Guest{
		Accel:       accel,
		Console:     filepath.Join(runDir, "console.log"),
		runDir:      runDir,
		log:         cfg.Logger,
		keepConsole: filepath.Join(cfg.Dir, "console.log"),
		exited:      make(chan struct{}),
	}
	sock := filepath.Join(runDir, "agent.sock")
	if !shell {
		if g.console, err = newConsoleSink(consoleFIFO(runDir), g.Console, cfg.ConsoleMax, cfg.Logger); err != nil {
			os.RemoveAll(runDir)
			return nil, err
		}
	}
	g.ram = ramFor(cfg, snap, shell, func() string { return bootRAMFile(cfg.Dir, snapshotSlot(cfg)) })
	if g.ram != nil && g.ram.shared {
		g.bootRAM = g.ram.file
	}
	if g.ram != nil && g.ram.file != "" && !g.ram.shared {
		// Opened before QEMU maps it: the same file. Without it the
		// guest runs as well; its kept state then holds all its RAM.
		g.ramFile, _ = os.Open(g.ram.file)
	}
	args := qemuArgs(cfg, im, accel, sock, consoleFIFO(runDir), shell)
	args = append(args, g.ram.args(cfg.MemoryMiB)...)
	incoming := filepath.Join(runDir, "incoming.sock")
	switch {
	case snap != nil && snap.kept:
		args = append(args, "-incoming", "unix:"+incoming)
	case snap != nil && snap.RAMFile != "":
		// The capability x-ignore-shared first, then the stream (resume).
		args = append(args, "-incoming", "defer")
	case snap != nil:
		args = append(args, "-incoming", "exec:cat "+shellQuote(snap.Path))
	}
	g.qmpSock = qmpPath(sock)
	g.cmd = exec.Command(qemu, args...)
	if shell {
		g.cmd.Stdin, g.cmd.Stdout, g.cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	} else {
		g.cmd.Stdout = &tailBuffer{max: 4096}
		g.cmd.Stderr = g.cmd.Stdout
	}
	// If labserver dies without cleaning up, the kernel ends QEMU too.
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	g.Started = time.Now()
	// A cold boot that will become the snapshot is the lab's work, done
	// once for every guest after it: it runs at labserver's niceness, not
	// a learner guest's 10. At 10 it starved beside a CPU-bound process
	// (make test with both cores busy: a learner slot's first boot never
	// said hello within the boot timeout, three times over). Guests
	// restored from the snapshot run at cfg.Nice; should the save fail,
	// that one guest runs on at 0.
	nice := cfg.Nice
	if snap == nil && !shell && !cfg.NoSnapshot {
		nice = 0
	}
	if err := startNiced(g.cmd, nice); err != nil {
		if g.console != nil {
			g.console.stop()
		}
		os.RemoveAll(runDir)
		if g.bootRAM != "" {
			os.Remove(g.bootRAM)
		}
		if g.ramFile != nil {
			g.ramFile.Close()
		}
		return nil, fmt.Errorf("start %s: %w", qemu, err)
	}
	go func() {
		g.waitErr = g.cmd.Wait()
		close(g.exited)
	}()
	g.log.Info("guest starting", "pid", g.cmd.Process.Pid, "accel", accel, "kernel", im.Release)

	ctx, cancel := context.WithTimeout(ctx, cfg.BootTimeout)
	defer cancel()
	if snap != nil && snap.kept {
		// A learner's kept machine: this process decompresses it into
		// QEMU, bounded; a state that fails to feed makes QEMU exit, and
		// the wait below reports it.
		rawMax := keptRawMax(cfg)
		go func() {
			if err := feedKept(ctx, incoming, snap.Path, rawMax, g.exited); err != nil {
				g.log.Warn("a kept machine's state did not load", "err", err)
				_ = g.cmd.Process.Kill()
			}
		}()
	}
	if cfg.progressWithin > 0 {
		// The KVM probe: a guest that shows no progress on its console
		// in time is given up at once instead of at BootTimeout.
		ctx = g.watchProgress(ctx, cfg.progressWithin)
	}
	conn, err := g.dial(ctx, sock)
	if err == nil && snap != nil {
		g.client = newClient(conn, g.log, g.whyClosed, clientOpts{restored: true, restartBreaks: cfg.Learner})
		g.client.nextID = snap.nextID // above every id the restored agent may still hold
		err = g.resume(ctx, snap)
		for _, id := range snap.terms {
			if err == nil {
				// The shells of the connection that was saved: their
				// output would go nowhere; history and files stay.
				g.client.cancelInGuest(id)
			}
		}
	} else if err == nil {
		g.client = newClient(conn, g.log, g.whyClosed, clientOpts{restartBreaks: cfg.Learner})
		select {
		case h := <-g.client.hello:
			g.Hello, g.Ready = h, time.Now()
		case <-g.client.done:
			err = fmt.Errorf("agent port closed during boot: %w", g.client.err())
		case <-g.exited:
			err = g.exitError()
		case <-ctx.Done():
			err = fmt.Errorf("%w within %s", errBootTimeout, cfg.BootTimeout)
			if cause := context.Cause(ctx); errors.Is(cause, errNoProgress) {
				err = cause
			}
		}
	} else if cause := context.Cause(ctx); errors.Is(cause, errNoProgress) {
		err = cause
	}
	if err == nil && g.Hello.SetupErr != "" {
		err = fmt.Errorf("Soft-RoCE setup in the guest failed: %s", g.Hello.SetupErr)
	}
	if err != nil {
		tail := consoleTail(g.Console, 15)
		g.Stop()
		if tail != "" {
			err = fmt.Errorf("%w; console:\n%s", err, tail)
		}
		return nil, err
	}
	g.log.Info("guest ready", "pid", g.cmd.Process.Pid, "boot", g.Ready.Sub(g.Started).Round(time.Millisecond),
		"kernel", g.Hello.Kernel, "guest_uptime", g.Hello.Uptime)
	return g, nil
}

// errNoProgress is a guest whose kernel did not reach our init in the time
// a working accelerator needs (the KVM probe).
var errNoProgress = errors.New("the guest made no progress")

// initMarker is the first line our init prints on the console.
const initMarker = "rdmalab-guest: init at uptime"

// watchProgress returns a context that ends with errNoProgress when the
// console shows no sign of our init within d of QEMU's start. A working
// KVM runs the kernel to init in well under a second; under a nested
// hypervisor that accepts the ioctls but cannot run the guest, the console
// stays empty. If the kernel printed something but has not reached init
// yet (a loaded host), it gets three times as long before the verdict.
func (g *Guest) watchProgress(ctx context.Context, d time.Duration) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		deadline := g.Started.Add(d)
		extended := false
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-g.exited:
				return
			case now := <-t.C:
				out := consoleHead(g.Console, 64<<10)
				if strings.Contains(out, initMarker) {
					return // it runs: the normal boot timeout applies from here
				}
				if now.Before(deadline) {
					continue
				}
				if out != "" && !extended {
					extended = true
					deadline = g.Started.Add(3 * d)
					continue
				}
				what := "its console stayed empty"
				if out != "" {
					what = "its kernel printed but did not reach init"
				}
				cancel(fmt.Errorf("%w: %s within %s of QEMU's start (a working KVM gets there in well under a second)",
					errNoProgress, what, time.Since(g.Started).Round(10*time.Millisecond)))
				return
			}
		}
	}()
	return ctx
}

// consoleHead is the first max bytes of the console log.
func consoleHead(path string, max int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, max)
	n, _ := io.ReadFull(f, b)
	return string(b[:n])
}

// dial connects to QEMU's agent socket as soon as QEMU has created it.
func (g *Guest) dial(ctx context.Context, sock string) (net.Conn, error) {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "unix", sock)
		if err == nil {
			return c, nil
		}
		select {
		case <-g.exited:
			return nil, g.exitError()
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: agent socket: %v", errBootTimeout, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// whyClosed explains a lost agent connection: usually QEMU died, and how it
// died is the reason a learner's run failed.
func (g *Guest) whyClosed(err error) error {
	select {
	case <-g.exited:
		return fmt.Errorf("the Soft-RoCE guest died: %w", g.exitError())
	case <-time.After(2 * time.Second):
		return err
	}
}

// alive reports whether QEMU runs and the agent connection is open.
func (g *Guest) alive() bool {
	select {
	case <-g.exited:
		return false
	case <-g.client.done:
		return false
	default:
		return true
	}
}

// PID is QEMU's process id.
func (g *Guest) PID() int { return g.cmd.Process.Pid }

// Exited is closed when QEMU has exited.
func (g *Guest) Exited() <-chan struct{} { return g.exited }

// exitError describes how QEMU ended, with what it printed.
func (g *Guest) exitError() error {
	<-g.exited
	msg := "qemu exited"
	if g.waitErr != nil {
		msg += ": " + g.waitErr.Error()
	}
	if tb, ok := g.cmd.Stdout.(*tailBuffer); ok {
		if s := tb.String(); s != "" {
			msg += ": " + s
		}
	}
	return errors.New(msg)
}

// Stop kills QEMU, fails whatever is in flight with reason, and removes the
// run directory. It is safe to call more than once.
func (g *Guest) Stop() {
	select {
	case <-g.exited:
	default:
		// QEMU exits promptly on SIGTERM; the guest has nothing to save.
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-g.exited:
		case <-time.After(3 * time.Second):
			_ = g.cmd.Process.Kill()
			<-g.exited
		}
	}
	if g.client != nil {
		g.client.close(errors.New("the guest was stopped"))
	}
	if g.console != nil {
		g.console.stop()
	}
	// Keep the last console for the admin (labserver vm status names it):
	// at most consoleMax bytes (console.go).
	if g.keepConsole != "" {
		_ = fsutil.CopyFile(g.Console, g.keepConsole)
	}
	os.RemoveAll(g.runDir)
	if g.bootRAM != "" {
		os.Remove(g.bootRAM)
	}
	g.ramMu.Lock()
	if g.ramFile != nil {
		g.ramFile.Close()
		g.ramFile = nil
	}
	g.ramMu.Unlock()
}

// Fail ends every call in flight with reason (the guest died or hung).
func (g *Guest) Fail(reason error) {
	if g.client != nil {
		g.client.close(reason)
	}
}

// Run performs one run in the guest: the request's bytes go in the run
// envelope as they are, the commands follow as command envelopes.
func (g *Guest) Run(ctx context.Context, s *sandbox.Session) error {
	return g.client.callRun(ctx, vmproto.HostMsg{Op: vmproto.OpRun, Req: s.Request, Commands: s.Interactive()}, s.Emit, s.Commands)
}

// Lab asks the agent for the guest's devices now.
func (g *Guest) Lab(ctx context.Context) (sandbox.Lab, error) {
	var lab sandbox.Lab
	err := g.client.call(ctx, vmproto.HostMsg{Op: vmproto.OpLab}, nil, func(l sandbox.Lab) { lab = l })
	return lab, err
}

// Ping checks that the agent answers.
func (g *Guest) Ping(ctx context.Context) error {
	return g.client.call(ctx, vmproto.HostMsg{Op: vmproto.OpPing}, nil, nil)
}

// client is the host's side of the protocol: it numbers requests and routes
// the guest's lines to the call that asked.
type client struct {
	conn  net.Conn
	log   *slog.Logger
	why   func(error) error // explains a lost connection
	hello chan vmproto.Hello
	done  chan struct{} // closed when the connection is finished

	clientOpts
	// greeted: the agent has said hello (or the guest was restored from a
	// snapshot, whose agent said it before the snapshot): a hello now
	// means the agent restarted and forgot every call in flight.
	greeted atomic.Bool

	port   *rate.Limiter // bytes of every line (bounds.PortRate)
	bad    *rate.Limiter // malformed lines (bounds.BadLines)
	badLog *limitedLog

	wmu sync.Mutex

	mu      sync.Mutex
	nextID  uint64
	calls   map[uint64]*pending
	running uint64 // id of the run in flight (malformed lines fail it)
	closed  error
}

type pending struct {
	event func(sandbox.Event)
	lab   func(sandbox.Lab)
	data  func([]byte)           // a channel's Data (channel.go)
	final func(vmproto.GuestMsg) // the end line itself, before end (a channel's)
	end   chan error             // buffered 1: the call's outcome

	// bounds.go: what this call has received, and its own bounds
	dataMax    int           // total Data bytes (a check's output); 0: none
	rate       *rate.Limiter // Data bytes per second (a terminal); nil: none
	dataBytes  int
	events     int
	eventBytes int
}

// clientOpts say how a client treats its guest.
type clientOpts struct {
	// restored: the guest was restored from a snapshot. Its agent said
	// hello before the snapshot, so any hello means a restart; and its
	// clock starts where the snapshot's stopped, so events get the host's
	// time on arrival.
	restored bool
	// restartBreaks: an agent restart closes the channel and the guest is
	// discarded (a learner's guest: whatever restarted there may not be
	// our agent); otherwise the calls in flight fail and it goes on.
	restartBreaks bool
	bounds        guestBounds // zero: defaultBounds
}

// newClient starts reading conn.
func newClient(conn net.Conn, log *slog.Logger, why func(error) error, o clientOpts) *client {
	if o.bounds == (guestBounds{}) {
		o.bounds = defaultBounds
	}
	b := o.bounds
	c := &client{conn: conn, log: log, why: why, hello: make(chan vmproto.Hello, 1), done: make(chan struct{}), calls: map[uint64]*pending{},
		clientOpts: o, port: rate.NewLimiter(b.PortRate, b.PortBurst), bad: rate.NewLimiter(b.BadLineRate, b.BadLines),
		badLog: &limitedLog{log: log, every: b.LogEvery}}
	c.greeted.Store(o.restored)
	go c.read()
	return c
}

func (c *client) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// read routes lines until the connection ends. A line never costs more
// than bounds.MaxLine bytes of memory (lineio skips the rest of a longer
// one), and the port's byte rate is bounded: past it the guest is cut off.
func (c *client) read() {
	defer c.badLog.flush("malformed lines from the guest")
	br := bufio.NewReaderSize(c.conn, 64<<10)
	for {
		line, err := lineio.Read(br, c.bounds.MaxLine)
		if errors.Is(err, lineio.ErrLongLine) {
			if !c.port.AllowN(time.Now(), min(c.bounds.MaxLine, c.bounds.PortBurst)) {
				c.breach(fmt.Sprintf("more than %d bytes/s on its agent port", int(c.bounds.PortRate)))
				return
			}
			c.malformed(err.Error())
			continue
		}
		if err == nil && !c.port.AllowN(time.Now(), len(line)+1) {
			c.breach(fmt.Sprintf("more than %d bytes/s on its agent port", int(c.bounds.PortRate)))
			return
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the guest closed the agent port")
			}
			if c.why != nil {
				err = c.why(err)
			}
			c.close(err)
			return
		}
		var m vmproto.GuestMsg
		if err := json.Unmarshal(line, &m); err != nil {
			c.malformed(fmt.Sprintf("%q", textclip.BytesOf(line, 120)))
			continue
		}
		n := len(line)
		if m.Event != nil {
			n = rdmalab.EventCost(line) // what the lab's encoding of it costs
		}
		if why := c.deliver(m, n); why != "" {
			c.breach(why)
			return
		}
		select {
		case <-c.done:
			return
		default:
		}
	}
}

// breach closes the channel of a guest that broke a bound: every call in
// flight fails, and the backend's supervisor discards the guest.
func (c *client) breach(what string) {
	c.log.Warn("the guest broke a bound of its agent port; discarding it", "bound", what)
	c.close(breachError(what))
}

// malformed fails the run in flight: a line we cannot parse may have been
// one of its events, so its outcome is unknown. Other calls are unaffected.
// Past bounds.BadLines in a row (refilled at BadLineRate) the guest is cut
// off; the log gets one line per bounds.LogEvery.
func (c *client) malformed(what string) {
	if !c.bad.Allow() {
		c.breach(fmt.Sprintf("more than %d malformed lines", c.bounds.BadLines))
		return
	}
	c.badLog.warn("malformed line from the guest", "line", what)
	c.mu.Lock()
	id := c.running
	p := c.calls[id]
	if p != nil {
		delete(c.calls, id)
		c.running = 0
	}
	c.mu.Unlock()
	if p != nil {
		p.end <- &sandbox.ProtocolError{Reason: "the guest sent a malformed event line: " + what}
		c.cancelInGuest(id)
	}
}

// deliver routes one line of n bytes to its call; it returns the bound
// the line broke, or "".
func (c *client) deliver(m vmproto.GuestMsg, n int) string {
	if m.Hello != nil {
		if !c.greeted.Swap(true) {
			select {
			case c.hello <- *m.Hello:
			default:
			}
			return ""
		}
		// A hello after the first (or after a restore): the agent
		// restarted and forgot what it was doing.
		if c.restartBreaks {
			return "its agent restarted"
		}
		c.failAll(errors.New("the guest agent restarted"))
		return ""
	}
	c.mu.Lock()
	p := c.calls[m.ID]
	if p != nil && m.End != nil {
		delete(c.calls, m.ID)
		if c.running == m.ID {
			c.running = 0
		}
	}
	var why string
	if p != nil && m.End == nil {
		switch {
		case m.Data != nil:
			why = c.bounds.checkData(p, len(m.Data))
		case m.Event != nil:
			why = c.bounds.checkEvent(p, n)
		}
	}
	c.mu.Unlock()
	if why != "" {
		return why
	}
	if p == nil {
		// A late line of a cancelled or failed call, or the answer to
		// a cancel or command (bounded by the port's rate like any line).
		return ""
	}
	switch {
	case m.End != nil:
		if p.final != nil {
			p.final(m)
		}
		p.end <- m.End.Err()
	case m.Event != nil && p.event != nil:
		if c.restored {
			m.Event.Time = time.Now()
		}
		p.event(*m.Event)
	case m.Lab != nil && p.lab != nil:
		p.lab(*m.Lab)
	case m.Data != nil && p.data != nil:
		p.data(m.Data)
	}
	return ""
}

// call sends one request and waits for its end line, ctx, or the end of
// the connection.
func (c *client) call(ctx context.Context, m vmproto.HostMsg, event func(sandbox.Event), lab func(sandbox.Lab)) error {
	return c.exchange(ctx, m, event, lab, nil)
}

// callRun is call for a run whose commands (nil: none) follow it.
func (c *client) callRun(ctx context.Context, m vmproto.HostMsg, event func(sandbox.Event), cmds <-chan sandbox.Command) error {
	return c.exchange(ctx, m, event, nil, cmds)
}

func (c *client) exchange(ctx context.Context, m vmproto.HostMsg, event func(sandbox.Event), lab func(sandbox.Lab), cmds <-chan sandbox.Command) error {
	p := &pending{event: event, lab: lab, end: make(chan error, 1)}
	c.mu.Lock()
	if c.closed != nil {
		err := c.closed
		c.mu.Unlock()
		return err
	}
	c.nextID++
	m.ID = c.nextID
	c.calls[m.ID] = p
	if m.Op == vmproto.OpRun {
		c.running = m.ID
	}
	c.mu.Unlock()
	if err := c.send(m); err != nil {
		c.forget(m.ID)
		return err
	}
	if m.Op == vmproto.OpRun && cmds != nil {
		stop := c.forwardCommands(ctx, m.ID, cmds)
		defer stop()
	}
	select {
	case err := <-p.end:
		return err
	case <-ctx.Done():
		if m.Op == vmproto.OpRun {
			// Wait for the guest to end the run (it kills the run's
			// process group): a run sent before that finds the guest busy.
			c.cancelInGuest(m.ID)
			t := time.NewTimer(cancelWait)
			defer t.Stop()
			select {
			case <-p.end:
			case <-c.done:
			case <-t.C:
			}
		}
		c.forget(m.ID)
		return ctx.Err()
	}
}

// cancelWait bounds how long a cancelled run waits for the guest to say
// the run has ended.
const cancelWait = 10 * time.Second

func (c *client) forget(id uint64) {
	c.mu.Lock()
	delete(c.calls, id)
	if c.running == id {
		c.running = 0
	}
	c.mu.Unlock()
}

// forwardCommands sends each command of cmds to the guest for run id, and
// an empty command when the stream closes. stop ends it.
func (c *client) forwardCommands(ctx context.Context, id uint64, cmds <-chan sandbox.Command) (stop func()) {
	return sandbox.ForwardCommands(ctx, cmds, func(cmd sandbox.Command, ok bool) error {
		c.mu.Lock()
		c.nextID++
		cid := c.nextID
		c.mu.Unlock()
		m := vmproto.HostMsg{ID: cid, Op: vmproto.OpCommand, Target: id}
		if ok {
			m.Cmd = &cmd
		}
		return c.send(m)
	})
}

// cancelInGuest asks the guest to stop run id (it kills the run's process
// group there); the answer is not awaited.
func (c *client) cancelInGuest(id uint64) {
	c.mu.Lock()
	c.nextID++
	cid := c.nextID
	c.mu.Unlock()
	_ = c.send(vmproto.HostMsg{ID: cid, Op: vmproto.OpCancel, Target: id})
}

func (c *client) send(m vmproto.HostMsg) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.conn.Write(b); err != nil {
		return fmt.Errorf("write to the guest: %w", err)
	}
	return nil
}

// failAll ends every call in flight with err, keeping the connection.
func (c *client) failAll(err error) {
	c.mu.Lock()
	calls := c.calls
	c.calls = map[uint64]*pending{}
	c.running = 0
	c.mu.Unlock()
	for _, p := range calls {
		p.end <- err
	}
}

// close ends the connection and every call in flight with err; the first
// reason wins.
func (c *client) close(err error) {
	c.mu.Lock()
	first := c.closed == nil
	if first {
		c.closed = err
	}
	c.mu.Unlock()
	if first {
		c.conn.Close()
		close(c.done)
	}
	c.failAll(c.err())
}

// tailBuffer keeps the last max bytes written (QEMU's own messages).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytesTrimSpace(t.b))
}

func bytesTrimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
