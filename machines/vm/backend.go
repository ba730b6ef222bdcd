// Package vm runs the lab's Soft-RoCE guests from the host: it has the
// image built (package vmimage), boots guests under QEMU (KVM when it
// really works, else TCG) or restores them from a snapshot, supervises
// them (health pings, a fresh guest after a crash), pauses them, saves and
// restores a guest's whole state (savestate.go), and talks to the guest's
// agent (package vmguest) over a virtio-serial port with the protocol of
// package vmproto: runs (it implements sandbox.Backend, one guest or a
// Pool) and channels (channel.go) for what other packages do in a guest —
// learner terminals are package terminal. It runs on the host.
package vm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmalab/rdmalab/machines/vmimage"
	"github.com/rdmalab/rdmalab/sandbox"
)

// Backend keeps one guest warm and runs requests in it, one at a time.
// Start boots it in the background; Close shuts it down.
type Backend struct {
	cfg Config

	runMu sync.Mutex // one run at a time

	mu      sync.Mutex
	state   sandbox.LabState
	reason  sandbox.Text
	accel   string
	kernel  string
	guest   *Guest
	changed chan struct{} // closed and replaced at every state change
	kick    chan struct{} // ask the supervisor to boot again after a failure
	boots   []time.Duration

	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}
	startOnce sync.Once
	started   atomic.Bool
	paused    atomic.Bool
	restarts  atomic.Int64 // guests lost and booted again (Restarts)

	// key is the snapshot key of the guest running (what a saved state of
	// it depends on); restoreTake and restoreDone, when set, restore a
	// saved state at the first boot instead of a fresh guest (RestoreFirst).
	key         string
	restoreTake func(key string) *SavedState
	restoreDone func(*SavedState, time.Duration, error)
}

// Pause freezes the idle guest's vCPUs (QMP stop), so that it takes no CPU
// from a timing run in another guest, or while no learner's tab shows it;
// Resume continues it. A guest that is booting or absent is left alone.
func (b *Backend) Pause(ctx context.Context) {
	b.mu.Lock()
	g := b.guest
	b.mu.Unlock()
	if g == nil || !g.alive() {
		return
	}
	b.paused.Store(true)
	if err := g.qmpDo(ctx, "stop"); err != nil {
		b.paused.Store(false)
		b.cfg.Logger.Warn("could not pause an idle guest for a timing run", "err", err)
	}
}

// Resume continues a paused guest.
func (b *Backend) Resume() {
	if !b.paused.Load() {
		return
	}
	b.mu.Lock()
	g := b.guest
	b.mu.Unlock()
	if g != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := g.qmpDo(ctx, "cont"); err != nil {
			b.cfg.Logger.Warn("could not resume a paused guest", "err", err)
		}
		cancel()
	}
	b.paused.Store(false)
}

// Paused reports whether the guest is paused (Pause) or stopped for a
// save (SaveState).
func (b *Backend) Paused() bool { return b.paused.Load() }

// New returns a backend that has not started yet.
func New(cfg Config) *Backend {
	cfg = cfg.WithDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Backend{
		cfg: cfg, state: sandbox.LabBooting, reason: sandbox.Text{"en": "not started", "zh": "尚未启动"},
		changed: make(chan struct{}), kick: make(chan struct{}, 1),
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
	}
}

// Start builds the image if needed and boots the guest in the background.
func (b *Backend) Start() {
	b.startOnce.Do(func() {
		b.started.Store(true)
		go b.supervise()
	})
}

// Close stops the guest and the supervisor; a run in flight fails. A
// backend that never started has nothing to wait for.
func (b *Backend) Close() error {
	b.cancel()
	b.startOnce.Do(func() {}) // no start after Close
	if b.started.Load() {
		<-b.done
	}
	return nil
}

// Name implements sandbox.Backend.
func (b *Backend) Name() string { return "vm" }

// GuestPID is the running QEMU's pid, 0 when there is none.
func (b *Backend) GuestPID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.guest == nil {
		return 0
	}
	return b.guest.PID()
}

// ready reports whether the guest is up (not booting, failed or dead).
func (b *Backend) ready() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == sandbox.LabReady && b.guest != nil && b.guest.alive()
}

// BootTimes are the durations QEMU start → agent hello of the guests booted
// so far.
func (b *Backend) BootTimes() []time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]time.Duration(nil), b.boots...)
}

func (b *Backend) setState(state sandbox.LabState, reason sandbox.Text, g *Guest) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state, b.reason, b.guest = state, reason, g
	if g != nil {
		b.accel, b.kernel = g.Accel, g.Hello.Kernel
		b.boots = append(b.boots, g.Ready.Sub(g.Started))
	}
	close(b.changed)
	b.changed = make(chan struct{})
	b.cfg.Logger.Info("lab guest", "state", state, "reason", firstLine(reason.Get("en")))
}

// WaitReady waits until the guest is ready and returns it, or returns the
// failure reason. A failed lab is asked to boot again.
func (b *Backend) WaitReady(ctx context.Context) (*Guest, error) {
	for {
		b.mu.Lock()
		state, reason, g, changed := b.state, b.reason, b.guest, b.changed
		b.mu.Unlock()
		switch state {
		case sandbox.LabReady:
			if g.alive() {
				return g, nil
			}
			// Dead but not yet noticed by the supervisor: wait for the change.
		case sandbox.LabFailed:
			select {
			case b.kick <- struct{}{}:
			default:
			}
			return nil, &sandbox.Reason{Kind: "guest-failed", Text: sandbox.Text{
				"en": "the Soft-RoCE lab guest is not available: " + reason.Get("en"),
				"zh": "Soft-RoCE 虚拟机不可用：" + reason.Get("zh")}}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the Soft-RoCE guest (%s): %w", reason.Get("en"), ctx.Err())
		case <-b.ctx.Done():
			return nil, errors.New("the lab is shutting down")
		case <-changed:
		}
	}
}

// Exec implements sandbox.Backend: it runs req in the warm guest. If the
// guest dies or hangs during the run, the run fails with that reason and
// the supervisor boots a fresh guest for the next one.
func (b *Backend) Exec(ctx context.Context, s *sandbox.Session) error {
	b.runMu.Lock()
	defer b.runMu.Unlock()
	g, err := b.WaitReady(ctx)
	if err != nil {
		return err
	}
	return g.Run(ctx, s)
}

// Lab implements sandbox.Backend: state, kernel, accelerator and, when the
// guest is ready, its devices with their counters now.
func (b *Backend) Lab(ctx context.Context) sandbox.Lab {
	b.mu.Lock()
	lab := sandbox.Lab{Backend: "vm", State: b.state, Reason: b.reason, Kernel: b.kernel, Accel: b.accel, Devices: []sandbox.Device{}}
	g := b.guest
	b.mu.Unlock()
	if lab.State != sandbox.LabReady || g == nil {
		return lab
	}
	// Generous: a guest under TCG on a busy host can take seconds to answer.
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	gl, err := g.Lab(ctx)
	if err != nil {
		lab.Reason = sandbox.Detail("device info unavailable", "无法取得设备信息", err.Error())
		return lab
	}
	lab.Devices = gl.Devices
	if gl.Reason != nil {
		lab.Reason = gl.Reason
	}
	return lab
}

// supervise boots guests until Close: after a crash or hang it boots a new
// one at once; after a failed boot it waits to be kicked (by a run or a
// status request) so a broken setup does not burn CPU in a loop.
func (b *Backend) supervise() {
	defer close(b.done)
	var quickDeaths int
	for b.ctx.Err() == nil {
		g, err := b.bootOnce()
		if err != nil {
			if b.ctx.Err() != nil {
				break
			}
			b.setState(sandbox.LabFailed, failedBoot(err), nil)
			select {
			case <-b.ctx.Done():
			case <-b.kick:
				b.setState(sandbox.LabBooting, sandbox.Text{"en": "booting again after a failure", "zh": "失败后重新启动"}, nil)
			}
			continue
		}
		b.setState(sandbox.LabReady, nil, g)
		reason := b.watch(g)
		g.Fail(reason)
		tail := consoleTail(g.Console, 10)
		g.Stop()
		if b.ctx.Err() != nil {
			break
		}
		b.cfg.Logger.Warn("lab guest lost; booting a fresh one", "reason", reason, "console", tail)
		b.restarts.Add(1)
		if time.Since(g.Ready) < 30*time.Second {
			quickDeaths++
		} else {
			quickDeaths = 0
		}
		if quickDeaths >= 3 {
			b.setState(sandbox.LabFailed, sandbox.Detail("the guest keeps dying", "虚拟机反复死掉", reason.Error()), nil)
			quickDeaths = 0
			select {
			case <-b.ctx.Done():
			case <-b.kick:
			}
			continue
		}
		b.setState(sandbox.LabBooting, sandbox.Detail("restarting after", "重启中，原因", reason.Error()), nil)
	}
	b.mu.Lock()
	g := b.guest
	b.mu.Unlock()
	if g != nil {
		g.Stop()
	}
	b.setState(sandbox.LabFailed, sandbox.Text{"en": "the lab was shut down", "zh": "实验环境已关闭"}, nil)
}

// bootOnce builds the image if needed and boots one guest, falling back
// from KVM to TCG when KVM turns out not to work.
func (b *Backend) bootOnce() (*Guest, error) {
	b.setState(sandbox.LabBooting, sandbox.Text{"en": "checking the guest image", "zh": "检查虚拟机镜像"}, nil)
	im, err := ensureImage(b.ctx, b.cfg)
	if err != nil {
		return nil, err
	}
	qemu, err := vmimage.CheckQEMU(b.cfg.QEMU)
	if err != nil {
		return nil, err
	}
	accel, why, probe := chooseAccel(b.cfg, qemu)
	b.setState(sandbox.LabBooting, bootingText(im.Release, accel, nil), nil)
	if probe {
		// The real KVM probe: a nested hypervisor may accept the ioctls
		// and still be unable to run the kernel. QEMU's exit or a silent
		// console within KVMProbe gives KVM up; the verdict is kept per
		// host kernel and QEMU, so later starts do not pay the probe.
		cfg := b.cfg
		cfg.progressWithin = cfg.KVMProbe
		key := accelKey(qemu)
		begin := time.Now()
		g, err := StartGuest(b.ctx, cfg, im, AccelKVM, false)
		if err == nil {
			saveAccelRecord(b.cfg.Dir, accelRecord{Key: key, Accel: AccelKVM, Reason: "KVM booted the guest"})
			b.mu.Lock()
			b.key = snapshotKey(b.cfg, qemu, im, AccelKVM)
			b.mu.Unlock()
			return b.snapshot(g, qemu, im, AccelKVM)
		}
		if b.ctx.Err() != nil {
			return nil, err
		}
		why = "KVM boot failed: " + firstLine(err.Error())
		saveAccelRecord(b.cfg.Dir, accelRecord{Key: key, Accel: AccelTCG, Reason: why})
		b.cfg.Logger.Warn("KVM cannot boot the guest; using TCG from now on with this host kernel and QEMU",
			"probe", time.Since(begin).Round(time.Millisecond), "reason", why)
		accel = AccelTCG
		b.setState(sandbox.LabBooting, bootingText(im.Release, AccelTCG, sandbox.Detail("KVM boot failed", "KVM 启动失败", firstLine(err.Error()))), nil)
	}
	key := snapshotKey(b.cfg, qemu, im, accel)
	b.mu.Lock()
	b.key = key
	take, done := b.restoreTake, b.restoreDone
	b.restoreTake = nil // only the first boot: after a crash the learner gets a fresh machine
	b.mu.Unlock()
	if take != nil {
		if g := b.restoreSaved(take, done, key, im, accel); g != nil {
			return g, nil
		}
	}
	if !b.cfg.NoSnapshot {
		if snap := loadSnapshot(b.cfg.Dir, snapshotSlot(b.cfg), snapshotKey(b.cfg, qemu, im, accel)); snap != nil {
			b.setState(sandbox.LabBooting, sandbox.Text{"en": "restoring the guest from its snapshot (" + strings.ToUpper(accel) + ")",
				"zh": "从快照恢复虚拟机（" + strings.ToUpper(accel) + "）"}, nil)
			g, err := startGuest(b.ctx, b.cfg, im, accel, false, snap)
			if err == nil {
				return g, nil
			}
			if b.ctx.Err() != nil {
				return nil, err
			}
			b.cfg.Logger.Warn("restoring the guest failed; booting it", "err", firstLine(err.Error()))
			b.setState(sandbox.LabBooting, bootingText(im.Release, accel, sandbox.Text{"en": "the snapshot did not restore", "zh": "快照没能恢复"}), nil)
		}
	}
	b.cfg.Logger.Info("booting lab guest", "accel", accel, "why_not_kvm", why)
	g, err := StartGuest(b.ctx, b.cfg, im, accel, false)
	if err != nil {
		return nil, err
	}
	return b.snapshot(g, qemu, im, accel)
}

// Current is the ready guest and its snapshot key, nil when there is none.
func (b *Backend) Current() (*Guest, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != sandbox.LabReady || b.guest == nil || !b.guest.alive() {
		return nil, ""
	}
	return b.guest, b.key
}

// snapshot saves a freshly booted guest's state, so the next guest (a
// restart, another member of the pool, the next server start) is restored
// in a fraction of the boot time. A failure only costs the next start a
// boot. It returns the guest to use: g, or, when g's RAM became the
// snapshot's shared file (g is stopped then), a guest restored from it.
func (b *Backend) snapshot(g *Guest, qemu string, im *vmimage.Image, accel string) (*Guest, error) {
	if b.cfg.NoSnapshot {
		return g, nil
	}
	key := snapshotKey(b.cfg, qemu, im, g.Accel)
	unlock, err := lockSnapshots(b.cfg.Dir)
	if err != nil {
		b.cfg.Logger.Warn("guest snapshot not saved; later guests boot", "err", err)
		return g, nil
	}
	if loadSnapshot(b.cfg.Dir, snapshotSlot(b.cfg), key) != nil {
		unlock()
		return g, nil
	}
	snap, err := g.SaveSnapshot(b.ctx, b.cfg.Dir, snapshotSlot(b.cfg), key)
	unlock()
	if err != nil {
		b.cfg.Logger.Warn("guest snapshot not saved; later guests boot", "err", err)
	}
	select {
	case <-g.Exited():
	default:
		return g, nil
	}
	if snap == nil {
		return nil, fmt.Errorf("the guest stopped while its snapshot was saved: %w", err)
	}
	return startGuest(b.ctx, b.cfg, im, accel, false, snap)
}

// watch returns why g is no longer usable: QEMU exited, the agent port
// closed, pings went unanswered, or the backend is closing.
func (b *Backend) watch(g *Guest) error {
	t := time.NewTicker(b.cfg.PingEvery)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return errors.New("the lab was shut down")
		case <-g.Exited():
			return fmt.Errorf("the Soft-RoCE guest died: %w", g.exitError())
		case <-g.client.done:
			return g.client.err()
		case <-t.C:
			if b.paused.Load() {
				continue // frozen on purpose while a timing run measures elsewhere
			}
			ctx, cancel := context.WithTimeout(b.ctx, b.cfg.PingTimeout)
			err := g.Ping(ctx)
			cancel()
			if err != nil && b.ctx.Err() == nil && !b.paused.Load() {
				select {
				case <-g.Exited():
					return fmt.Errorf("the Soft-RoCE guest died: %w", g.exitError())
				default:
				}
				return fmt.Errorf("the Soft-RoCE guest stopped answering: no reply to a health ping within %s (%v)", b.cfg.PingTimeout, err)
			}
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// bootingText is the booting lab's reason: "booting kernel K with TCG
// (why)"; why may be nil.
func bootingText(release, accel string, why sandbox.Text) sandbox.Text {
	a := strings.ToUpper(accel)
	t := sandbox.Text{"en": "booting kernel " + release + " with " + a, "zh": "用 " + a + " 启动内核 " + release}
	if why != nil {
		t["en"] += " (" + why.Get("en") + ")"
		t["zh"] += "（" + why.Get("zh") + "）"
	}
	return t
}

// failedBoot is why a boot failed: the image or QEMU missing, or the
// guest not coming up; the error itself is a diagnostic.
func failedBoot(err error) sandbox.Text {
	var me *vmimage.MissingError
	if errors.As(err, &me) {
		return sandbox.Text{"en": err.Error(), "zh": "无法启动虚拟机：缺少软件包 " + strings.Join(me.Packages, " ") + " 提供的文件；解决办法：" + me.Fix()}
	}
	return sandbox.Detail("the guest did not boot", "虚拟机没能启动", err.Error())
}

// Restarts is how many times this backend's guest was lost and a fresh
// one booted since the backend started (the lab's metrics).
func (b *Backend) Restarts() int64 { return b.restarts.Load() }

// State is the backend's lab state now, without asking the guest (Lab
// does, for its devices): cheap enough for every metrics scrape.
func (b *Backend) State() sandbox.LabState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}
