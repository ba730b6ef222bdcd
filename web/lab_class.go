package web

import (
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/web/page"
)

// What an admin needs to see on /lab before a class: how the learner
// terminals' cap was chosen (serve --terminals auto), and a warning when
// many learners share one client address, so the per-address limits
// (limits.go) bind the whole class together.

// TermSizing is how `--terminals auto` chose the terminals' cap from the
// machine (terminal.AutoTerminals).
type TermSizing struct {
	Auto         bool  // false: the admin set the number
	AvailableMiB int64 // memory available when chosen
	CPUs         int
	PoolGuests   int // experiment guests reserved for
	ByMemory     int // what memory allows
	ByCPU        int // what CPUs allow
	// PerGuestMiB is what one learner guest was counted at: its PSS
	// (proportional memory), not its RSS; SharedMiB the snapshot's RAM
	// the guests share, counted once (0: they do not share it).
	PerGuestMiB int
	SharedMiB   int
}

// TermSpares is the state of the paused spare learner guests (serve
// --spares; terminal.SpareStats).
type TermSpares struct {
	Ready, Starting int // paused and waiting; being restored
	Target          int // wanted now
	Class           int // the class they are kept for
	Room            int // more learner guests free memory holds now
	Bounded         bool
	// The learner guests' memory now (terminal.GuestMemory), in bytes:
	// their PSS summed (what they hold together) and the part of it they
	// share with one another (PSS − USS). Guests 0: not measured.
	Guests      int
	PSS, Shared int64
}

// TermKept is the disk the kept learner machines take (serve
// --keep-total-max; terminal.Keep).
type TermKept struct {
	Machines          int
	Bytes, TotalBytes int64 // taken, and the budget (0: none)
	Evicted           int   // removed for the budget since the start
}

// TerminalInfo is what the lab server knows of its terminals beyond the
// terminals themselves (cmd/labserver's webTerminals): how the cap was
// chosen, the paused spares, the kept machines.
type TerminalInfo interface {
	Sizing() TermSizing
	Spares() TermSpares
	Kept() (TermKept, bool) // false: machines are not kept
	// KeepsFor is how long a reclaimed machine is kept for its learner
	// (0: it is not).
	KeepsFor() time.Duration
	// ReclaimsAfter is how long a learner's machine here may go without a
	// keystroke before it is reclaimed (serve --terminal-idle).
	ReclaimsAfter() time.Duration
}

// reclaimsAfter is TermInfo's ReclaimsAfter; 10 minutes, the terminals'
// default, without one.
func (s *Server) reclaimsAfter() time.Duration {
	if s.cfg.TermInfo != nil {
		if d := s.cfg.TermInfo.ReclaimsAfter(); d > 0 {
			return d
		}
	}
	return 10 * time.Minute
}

// keepsFor is TermInfo's KeepsFor, 0 without one.
func (s *Server) keepsFor() time.Duration {
	if s.cfg.TermInfo == nil {
		return 0
	}
	return s.cfg.TermInfo.KeepsFor()
}

var labClassStrings = page.Table{
	"zh": {
		"lab.spares":         "暂停的备用虚拟机",
		"lab.spares.n":       "%d 台就绪，%d 台正在恢复；目标 %d 台（为 %d 人同时打开终端准备，减去已在用的学员，不超过剩余名额）",
		"lab.spares.room":    "；可用内存还能再容纳 %d 台学员虚拟机",
		"lab.spares.mem":     "；现有 %d 台学员虚拟机共占 %d MiB 内存（按分摊计，平均每台 %d MiB，其中共用的部分共 %d MiB）",
		"lab.kept":           "保存的学员虚拟机",
		"lab.kept.n":         "%d 台，占用磁盘 %d MiB",
		"lab.kept.budget":    "（总上限 %d MiB，超出时先删除占用最多的网络地址的最旧虚拟机；启动以来已删除 %d 台）",
		"term.kept.evicted":  "保存的虚拟机总共占用的磁盘超过了实验室的上限，占用最多的网络地址的最旧虚拟机先被删除，你上次的虚拟机因此没有保留；这是一台全新的虚拟机。",
		"term.kept.share":    "为你的网络地址保存的虚拟机超过了每个地址可占用的磁盘份额，最旧的先被删除，你上次的虚拟机因此没有保留；这是一台全新的虚拟机。",
		"lab.terminals.auto": "（自动：每台学员虚拟机按分摊的内存计 %d MiB，共用的快照内存 %d MiB 只计一次；可用内存 %d MiB 允许 %d 个，%d 个 CPU 允许 %d 个，已为 %d 个实验虚拟机留出内存；用 --terminals 可手动设定）",
		"lab.crowd": "最近 %d 分钟里有 %d 位学员来自同一个网络地址（%s）。按地址计的限制由他们共用：同时排队或运行的实验最多 %d 个，新学员一次最多 %d 位。" +
			"如果整个班级在同一个 NAT 或反向代理后面，请设置 LAB_TRUSTED_PROXY_HEADER 和 LAB_TRUSTED_PROXIES，或调高 LAB_RUNS_PER_ADDR 和 LAB_NEW_LEARNERS_PER_ADDR（见 docs/operations.md 的「限制」一节）。",
	},
	"en": {
		"lab.spares":         "Paused spare machines",
		"lab.spares.n":       "%d ready, %d restoring; target %d (kept for %d learners opening their terminals at once, less the learners in, within the places left)",
		"lab.spares.room":    "; free memory holds %d more learner machines",
		"lab.spares.mem":     "; the %d learner machines hold %d MiB in all (proportional memory, PSS: %d MiB each on average, %d MiB of it the part they share)",
		"lab.kept":           "Kept learner machines",
		"lab.kept.n":         "%d, taking %d MiB of disk",
		"lab.kept.budget":    " (of %d MiB in all; over it, the oldest of the network address holding the most go first; %d removed since the start)",
		"term.kept.evicted":  "The lab's kept machines went over their disk budget, and the oldest of the network address holding the most go first, so your last machine was removed; this is a fresh machine.",
		"term.kept.share":    "The machines kept for your network address went over the disk one address may take, and its oldest go first, so your last machine was removed; this is a fresh machine.",
		"lab.terminals.auto": " (auto: each learner machine counted at its proportional memory (PSS), %d MiB, the snapshot's shared memory, %d MiB, once; %d MiB of available memory allows %d, %d CPUs allow %d, with memory kept for %d experiment guests; set --terminals to choose)",
		"lab.crowd": "In the last %d minutes, learners from one network address: %d (%s). They share the per-address limits: runs queued or running at once, at most %d; new learners at once, at most %d. " +
			"If the whole class is behind one NAT or reverse proxy, set LAB_TRUSTED_PROXY_HEADER and LAB_TRUSTED_PROXIES, or raise LAB_RUNS_PER_ADDR and LAB_NEW_LEARNERS_PER_ADDR (docs/operations.md, \"Limits\").",
	},
}

// labTerminalSizing is the terminals' sizing for /lab in lang, "" when the
// admin chose the number.
func (s *Server) labTerminalSizing(lang string) string {
	if s.cfg.TermInfo == nil {
		return ""
	}
	sz := s.cfg.TermInfo.Sizing()
	if !sz.Auto {
		return ""
	}
	return trf(lang, "lab.terminals.auto", sz.PerGuestMiB, sz.SharedMiB, sz.AvailableMiB, sz.ByMemory, sz.CPUs, sz.ByCPU, sz.PoolGuests)
}

// crowdWindow is how long a learner counts for the address they wrote
// from; crowdWarn learners on one address make /lab warn. A class of 30
// behind one NAT address passes the default 4 runs per address at once.
const (
	crowdWindow   = 30 * time.Minute
	crowdWarn     = 10
	crowdMaxAddrs = 10_000 // bounds memory: past it the table starts over
	crowdMaxPer   = 1_000  // learners remembered per address
)

// addrCrowd counts the distinct learners who wrote from each client
// address recently.
type addrCrowd struct {
	mu sync.Mutex
	m  map[string]map[string]time.Time // address → learner → last write
}

// saw records a write of learner from addr.
func (c *addrCrowd) saw(addr, learner string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= crowdMaxAddrs {
		c.m = map[string]map[string]time.Time{}
	}
	ls := c.m[addr]
	if ls == nil {
		ls = map[string]time.Time{}
		c.m[addr] = ls
	}
	if _, ok := ls[learner]; !ok && len(ls) >= crowdMaxPer {
		c.pruneLocked(ls, now)
		if len(ls) >= crowdMaxPer {
			return // counted enough to warn
		}
	}
	ls[learner] = now
}

func (c *addrCrowd) pruneLocked(ls map[string]time.Time, now time.Time) {
	for l, t := range ls {
		if now.Sub(t) > crowdWindow {
			delete(ls, l)
		}
	}
}

// busiest is the address with the most learners in the window, and how many.
func (c *addrCrowd) busiest(now time.Time) (string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	addr, n := "", 0
	for a, ls := range c.m {
		c.pruneLocked(ls, now)
		if len(ls) == 0 {
			delete(c.m, a)
			continue
		}
		if len(ls) > n {
			addr, n = a, len(ls)
		}
	}
	return addr, n
}

// labCrowdWarning is /lab's warning in lang when crowdWarn or more
// learners share one address and the per-address limits are on.
func (s *Server) labCrowdWarning(lang string) string {
	l := s.cfg.Limits
	if l.RunsPerAddr < 0 && l.NewLearnerBurst < 0 {
		return ""
	}
	addr, n := s.crowd.busiest(time.Now())
	if n < crowdWarn {
		return ""
	}
	return trf(lang, "lab.crowd", int(crowdWindow.Minutes()), n, addr, l.RunsPerAddr, l.NewLearnerBurst)
}

// labSpares is /lab's line about the paused spares and the kept machines
// in lang ("" when the terminals do not say).
func (s *Server) labSpares(lang string) (spares, kept string) {
	ts := s.cfg.TermInfo
	if ts == nil {
		return "", ""
	}
	sp := ts.Spares()
	spares = trf(lang, "lab.spares.n", sp.Ready, sp.Starting, sp.Target, sp.Class)
	if sp.Bounded {
		spares += trf(lang, "lab.spares.room", max(sp.Room, 0))
	}
	if sp.Guests > 0 {
		spares += trf(lang, "lab.spares.mem", sp.Guests, sp.PSS>>20, sp.PSS/int64(sp.Guests)>>20, sp.Shared>>20)
	}
	if k, on := ts.Kept(); on {
		kept = trf(lang, "lab.kept.n", k.Machines, k.Bytes>>20)
		if k.TotalBytes > 0 {
			kept += trf(lang, "lab.kept.budget", k.TotalBytes>>20, k.Evicted)
		}
	}
	return spares, kept
}
