package vm

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/rdmalab/rdmalab/sandbox"
)

// Pool is several lab guests, each kept warm by its own Backend
// (supervised, restarted when it dies), running one run each at a time:
// runs that may share the machine (sandbox.Shareable) go side by side, each
// in a guest of its own with its own Soft-RoCE devices and counters. The
// first guest boots (or restores the cache's snapshot); the others start
// once it is ready, from its snapshot, in a fraction of a boot. It
// implements sandbox.Backend; Slots says how many runs it takes at once.
type Pool struct {
	members []*Backend

	// Timing says whether an experiment is a timing one (the registry's
	// sharing class). While such a run goes, the pool's other guests are
	// paused: the runner starts nothing beside it, and a paused guest
	// cannot spend CPU in the background (its agent's spare child starting
	// after the last run) that the timing run would measure as its own.
	Timing func(experiment string) bool

	mu      sync.Mutex
	busy    map[*Backend]bool
	changed chan struct{} // closed and replaced when a member is released

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewPool returns a pool of n guests (at least 1) that has not started.
func NewPool(cfg Config, n int) *Pool {
	n = max(n, 1)
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool{busy: map[*Backend]bool{}, changed: make(chan struct{}), ctx: ctx, cancel: cancel}
	for i := range n {
		c := cfg
		if i > 0 && c.Logger != nil {
			c.Logger = c.Logger.With("guest", i)
		}
		p.members = append(p.members, New(c))
	}
	return p
}

// DefaultGuests is how many guests a pool gets when the admin does not say:
// one per two CPUs (a guest has two vCPUs, and a run in it keeps them busy
// under TCG: measured, two guests on two cores drained a burst no faster
// than one), no more than fit in half the memory available now, at least
// one; $LAB_GUESTS overrides.
func DefaultGuests(memoryMiB int) int {
	if n, err := strconv.Atoi(os.Getenv("LAB_GUESTS")); err == nil && n > 0 {
		return n
	}
	if memoryMiB <= 0 {
		memoryMiB = 256
	}
	n := runtime.NumCPU() / 2
	if avail := MemAvailableMiB(); avail > 0 {
		// QEMU itself adds about 60 MiB to the guest's RAM (measured RSS).
		n = min(n, int(avail/2)/(memoryMiB+64))
	}
	return max(n, 1)
}

// MemAvailableMiB is MemAvailable of /proc/meminfo in MiB (0 if unknown).
func MemAvailableMiB() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb / 1024
		}
	}
	return 0
}

// Start boots the first guest now and the others once it is ready.
func (p *Pool) Start() {
	p.members[0].Start()
	if len(p.members) == 1 {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		// Whatever the first guest's fate, the others start: if it failed
		// they boot (and may fail the same way, with the same reason).
		_, _ = p.members[0].WaitReady(p.ctx)
		if p.ctx.Err() != nil {
			return
		}
		for _, m := range p.members[1:] {
			m.Start()
		}
	}()
}

// Close stops every guest; runs in flight fail.
func (p *Pool) Close() error {
	p.cancel()
	p.wg.Wait()
	var wg sync.WaitGroup
	for _, m := range p.members {
		wg.Add(1)
		go func() { defer wg.Done(); m.Close() }()
	}
	wg.Wait()
	return nil
}

// Name implements sandbox.Backend.
func (p *Pool) Name() string { return "vm" }

// Slots is how many runs the pool takes at once: one per guest.
func (p *Pool) Slots() int { return len(p.members) }

// Guests implements sandbox.GuestPool.
func (p *Pool) Guests() int { return len(p.members) }

// Members are the pool's guests' backends (for tests and benchmarks).
func (p *Pool) Members() []*Backend { return p.members }

// WaitReady waits for the first guest.
func (p *Pool) WaitReady(ctx context.Context) (*Guest, error) {
	return p.members[0].WaitReady(ctx)
}

// Exec implements sandbox.Backend: it runs req in an idle guest, a ready
// one if there is any, waiting for one to be released otherwise.
func (p *Pool) Exec(ctx context.Context, s *sandbox.Session) error {
	m, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer p.release(m)
	if p.Timing != nil && p.Timing(s.Experiment) {
		for _, o := range p.members {
			if o != m {
				o.Pause(ctx)
				defer o.Resume()
			}
		}
	}
	return m.Exec(ctx, s)
}

func (p *Pool) acquire(ctx context.Context) (*Backend, error) {
	for {
		p.mu.Lock()
		var pick *Backend
		for _, m := range p.members {
			if p.busy[m] {
				continue
			}
			if pick == nil || (m.ready() && !pick.ready()) {
				pick = m
			}
		}
		changed := p.changed
		if pick != nil {
			p.busy[pick] = true
			p.mu.Unlock()
			return pick, nil
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for a free guest: %w", ctx.Err())
		case <-p.ctx.Done():
			return nil, fmt.Errorf("the lab is shutting down")
		case <-changed:
		}
	}
}

func (p *Pool) release(m *Backend) {
	p.mu.Lock()
	delete(p.busy, m)
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// Lab implements sandbox.Backend: the first guest's state and devices,
// and how many of the pool's guests are ready.
func (p *Pool) Lab(ctx context.Context) sandbox.Lab {
	lab := p.members[0].Lab(ctx)
	lab.Guests = len(p.members)
	for _, m := range p.members {
		if m.ready() {
			lab.GuestsReady++
		}
	}
	if lab.State != sandbox.LabReady && lab.GuestsReady > 0 {
		// Another guest is serving while the first one restarts.
		lab.State = sandbox.LabReady
		lab.Reason = sandbox.Text{"en": "guest 1 is restarting: " + lab.Reason.Get("en"), "zh": "虚拟机 1 正在重启：" + lab.Reason.Get("zh")}
	}
	return lab
}

// IdleRSS is the resident memory of each ready guest's QEMU, in bytes.
func (p *Pool) IdleRSS() []int64 {
	var out []int64
	for _, m := range p.members {
		if pid := m.GuestPID(); pid != 0 {
			if rss := ProcessRSS(pid); rss > 0 {
				out = append(out, rss)
			}
		}
	}
	return out
}

// ProcessRSS is VmRSS of pid in bytes (0 if unknown).
func ProcessRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
