// Package attackcost measures what an attack in a test costs the lab
// server — its peak memory and the bytes it logged — against the bounds
// issue 43 set for every hostile-learner test: labserver stays under
// MemMax and its log under LogMax through the attack.
//
// Two kinds of measure, and a test says which it has:
//
//   - Watch(pid, …) watches a separate server process (bin/labserver,
//     a `labserver worker`): its peak resident memory is the kernel's
//     high-water mark (VmHWM in /proc/PID/status), reset when the watch
//     starts, so it is the process's peak during the attack, nothing of
//     the test's.
//   - WatchSelf(…) is for a server running inside the test process
//     (httptest, fleet.Start, terminal.Terminals): the peak is the whole
//     test process's VmHWM during the attack — the server, the attacker
//     and the test's own clients together, and whatever the process held
//     before (earlier tests' memory, which Go returns to the system
//     slowly; Cost.BaseRSS says how much) — so under the bound it is an
//     upper bound on the server's share; the Go heap's growth (peak
//     HeapInuse above where it was) is reported beside it. Under -race
//     the process's memory is the race detector's several-fold, and the
//     bound is RaceFactor times MemMax (Cost.Race says so).
//
// The log is whatever the caller counts (a server process's output as
// internal/labproc reads it, the buffer an in-process server logs to).
package attackcost

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The bounds of issue 43's "done when".
const (
	MemMax = 512 << 20 // the lab server's peak resident memory through an attack
	LogMax = 10 << 20  // the bytes it logs through one
)

// RaceFactor multiplies MemMax for a test process built with -race, whose
// memory the race detector's shadow multiplies (5–10× by Go's own
// account; the server process a test starts is built without it).
const RaceFactor = 4

// Kind says what a Cost measured.
type Kind string

const (
	// Process is a separate server process's own memory.
	Process Kind = "labserver process"
	// InProcess is the test process's memory, the server inside it.
	InProcess Kind = "test process (server in-process)"
)

// sampleEvery is how often resident memory (and, in-process, the heap)
// is sampled: the fallback for a kernel that does not reset VmHWM.
const sampleEvery = 20 * time.Millisecond

// Meter watches one process through an attack; Stop ends the watch.
type Meter struct {
	kind   Kind
	pid    int
	logLen func() int64
	log0   int64
	heap0  uint64
	reset  bool // VmHWM was reset at the start: it is the attack's peak

	rss0 int64 // resident at the start

	mu       sync.Mutex
	rssPeak  int64
	heapPeak uint64
	stop     chan struct{}
	done     chan struct{}
}

// Watch starts watching the server process pid; logLen (nil: no log)
// says how many bytes it has logged so far.
func Watch(pid int, logLen func() int64) *Meter {
	return start(Process, pid, logLen)
}

// WatchSelf starts watching the test process, whose server runs inside
// it; logLen says how many bytes that server has logged so far.
func WatchSelf(logLen func() int64) *Meter {
	return start(InProcess, os.Getpid(), logLen)
}

func start(kind Kind, pid int, logLen func() int64) *Meter {
	m := &Meter{kind: kind, pid: pid, logLen: logLen, stop: make(chan struct{}), done: make(chan struct{})}
	if logLen != nil {
		m.log0 = logLen()
	}
	if kind == InProcess {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		m.heap0, m.heapPeak = ms.HeapInuse, ms.HeapInuse
	}
	// "5" resets the peak resident set size to the present one
	// (proc(5), clear_refs; Linux 4.0 on); the process is ours.
	m.reset = os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0) == nil
	m.rss0 = status(pid)["VmRSS"]
	m.rssPeak = m.rss0
	go m.sample()
	return m
}

func (m *Meter) sample() {
	defer close(m.done)
	var ms runtime.MemStats
	for {
		rss := status(m.pid)["VmRSS"]
		var heap uint64
		if m.kind == InProcess {
			runtime.ReadMemStats(&ms)
			heap = ms.HeapInuse
		}
		m.mu.Lock()
		m.rssPeak = max(m.rssPeak, rss)
		m.heapPeak = max(m.heapPeak, heap)
		m.mu.Unlock()
		select {
		case <-m.stop:
			return
		case <-time.After(sampleEvery):
		}
	}
}

// Cost is what one attack cost the server.
type Cost struct {
	Kind Kind
	// PeakRSS is the peak resident memory through the attack: VmHWM when
	// the kernel reset it at Watch (Since "the attack"), else the larger
	// of VmHWM since the process began and the sampled peak (Since
	// "process start"). Zero if the process was gone before Stop and
	// never sampled.
	PeakRSS int64
	Since   string
	// BaseRSS is the resident memory when the watch began: in-process,
	// what the test process already held (earlier tests' too).
	BaseRSS int64
	// HeapGrowth is, in-process, how far the Go heap in use rose above
	// where it was at Watch (sampled every 20 ms).
	HeapGrowth int64
	// LogBytes is what the server logged through the attack.
	LogBytes int64
	// Race is set when the test process runs under the race detector
	// (its memory bound is then RaceFactor × MemMax).
	Race bool
}

// Stop ends the watch and returns what the attack cost.
func (m *Meter) Stop() Cost {
	close(m.stop)
	<-m.done
	st := status(m.pid)
	m.mu.Lock()
	defer m.mu.Unlock()
	c := Cost{Kind: m.kind, PeakRSS: max(st["VmHWM"], m.rssPeak), Since: "process start", BaseRSS: m.rss0, Race: raceEnabled && m.kind == InProcess}
	if m.reset {
		c.Since = "the attack"
	}
	if m.kind == InProcess && m.heapPeak > m.heap0 {
		c.HeapGrowth = int64(m.heapPeak - m.heap0)
	}
	if m.logLen != nil {
		c.LogBytes = m.logLen() - m.log0
	}
	return c
}

// MemBound is the bound PeakRSS is held to.
func (c Cost) MemBound() int64 {
	if c.Race {
		return RaceFactor * MemMax
	}
	return MemMax
}

// String is the cost in one line, the figures the operations doc quotes.
func (c Cost) String() string {
	s := fmt.Sprintf("%s: peak RSS %s (since %s; %s at its start), log +%s", c.Kind, human(c.PeakRSS), c.Since, human(c.BaseRSS), human(c.LogBytes))
	if c.Kind == InProcess {
		s += fmt.Sprintf(", Go heap +%s", human(c.HeapGrowth))
	}
	if c.Race {
		s += " (-race)"
	}
	return s
}

// Check logs the cost of the attack named what ("attackcost: what: …",
// the line the operations doc's table is made from) and fails t when
// the server's memory or log went past its bound.
func (c Cost) Check(t testing.TB, what string) {
	t.Helper()
	t.Logf("attackcost: %s: %s", what, c)
	if c.PeakRSS > c.MemBound() {
		t.Errorf("%s: the %s peaked at %s resident, over the bound of %s", what, c.Kind, human(c.PeakRSS), human(c.MemBound()))
	}
	if c.LogBytes > LogMax {
		t.Errorf("%s: the server logged %s, over the bound of %s", what, human(c.LogBytes), human(LogMax))
	}
}

// Measure watches the test process through attack (the server in-process)
// and checks its cost; it is WatchSelf, attack, Stop and Check in one.
func Measure(t testing.TB, what string, logLen func() int64, attack func()) Cost {
	t.Helper()
	m := WatchSelf(logLen)
	attack()
	c := m.Stop()
	c.Check(t, what)
	return c
}

// LogCounter is a server's log writer that counts what passes through
// it to W (nil: discarded), for a server whose log has no size of its own
// to ask: give it as the server's log and Len as Watch's logLen.
type LogCounter struct {
	W io.Writer
	n atomic.Int64
}

// Write counts p and passes it on.
func (c *LogCounter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	if c.W == nil {
		return len(p), nil
	}
	return c.W.Write(p)
}

// Len is the bytes written so far.
func (c *LogCounter) Len() int64 { return c.n.Load() }

// status is /proc/PID/status's memory lines in bytes (missing when the
// process is gone).
func status(pid int) map[string]int64 {
	out := map[string]int64{}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok || !strings.HasPrefix(k, "Vm") {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 2 && f[1] == "kB" {
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				out[k] = n << 10
			}
		}
	}
	return out
}

// human is n bytes as B, KiB or MiB.
func human(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
