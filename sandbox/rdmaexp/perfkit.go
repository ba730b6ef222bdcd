package rdmaexp

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
	"github.com/rdmalab/rdmalab/sandbox/verbs/tsc"
)

// What the lesson-05 experiments (perf-*) share: both ends of one RC
// connection opened in this process (the client on rxe1, the server on
// rxe0, connected without an out-of-band socket since both are here), a
// streaming loop that keeps a chosen number of RDMA WRITEs in flight and
// signals every Nth, and a latency loop (one signaled WRITE, spin on its
// completion). RDMA WRITE needs nothing from the server's CPU, so one
// thread drives the whole measurement — what it cannot show, the
// experiments say.

// pair is both ends of one RC connection.
type pair struct {
	top      topology
	cli, srv *rc
}

// openPair opens and connects the two ends; cli and srv carry everything
// but the sides, which come from top.
func openPair(top topology, cli, srv rcOpts) (p *pair, err error) {
	p = &pair{top: top}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	cli.Side, srv.Side = top.Client, top.Server
	if p.srv, err = openRC(srv); err != nil {
		return nil, err
	}
	if p.cli, err = openRC(cli); err != nil {
		return nil, err
	}
	if err = p.srv.connect(p.cli.local()); err != nil {
		return nil, err
	}
	if err = p.cli.connect(p.srv.local()); err != nil {
		return nil, err
	}
	return p, nil
}

// Close frees both ends.
func (p *pair) Close() error {
	if p == nil {
		return nil
	}
	return errorsJoin(p.cli.Close(), p.srv.Close())
}

func errorsJoin(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// writeWR is WRITE k of size bytes from the client's buffer at off into the
// server's buffer.
func (p *pair) writeWR(k uint64, off, size int, flags verbs.SendFlags) verbs.SendWR {
	return verbs.SendWR{ID: k, Op: verbs.OpWrite, Flags: flags, MR: p.cli.mr, Offset: off, Length: size,
		RemoteAddr: p.srv.mr.Addr(), RKey: p.srv.mr.RKey()}
}

// streamOpts says how to stream WRITEs.
type streamOpts struct {
	Size        int
	Depth       int // WRs in flight at most
	SignalEvery int // 1 = every WR signaled; clamped to Depth
	Inline      bool
	Msgs        int           // stop after this many (0: no limit)
	Budget      time.Duration // or after this long (0: no limit)
}

// streamStats is what a stream measured.
type streamStats struct {
	Msgs        int
	Bytes       int64
	Elapsed     time.Duration
	CPU         time.Duration // the posting thread's CPU time (user + kernel)
	Completions int           // CQEs polled
	Polls       int           // ibv_poll_cq calls
}

// MBps is megabytes (10^6) per second.
func (s streamStats) MBps() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Bytes) / s.Elapsed.Seconds() / 1e6
}

// MsgRate is messages per second.
func (s streamStats) MsgRate() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Msgs) / s.Elapsed.Seconds()
}

// CPUPerMsg is the posting thread's CPU time per message.
func (s streamStats) CPUPerMsg() time.Duration {
	if s.Msgs == 0 {
		return 0
	}
	return s.CPU / time.Duration(s.Msgs)
}

// stream keeps o.Depth WRITEs in flight until o.Msgs or o.Budget, signals
// every o.SignalEvery-th (and the last) one, and retires the unsignaled
// ones when a later signaled one completes — as perftest's ib_write_bw does
// with its tx depth and cq moderation. The caller holds the OS thread.
func (p *pair) stream(ctx context.Context, o streamOpts) (streamStats, error) {
	if o.Depth < 1 {
		o.Depth = 1
	}
	sig := max(1, min(o.SignalEvery, o.Depth))
	wcs := make([]verbs.WC, 16)
	var st streamStats
	var posted, retired uint64 // WRs posted; WRs known complete
	var budget uint64          // in cycles of the time-stamp counter
	if o.Budget > 0 {
		budget = cycles(o.Budget)
	}
	cpu0 := threadCPU()
	t0, c0 := time.Now(), tsc.Now()
	done := false
	sw := spinWait{ctx: ctx, limit: 10 * time.Second, err: fmt.Errorf("stream: %w", errCompletionTimeout)}
	spins := 0
	for {
		for !done && posted-retired < uint64(o.Depth) {
			final := o.Msgs > 0 && int(posted) == o.Msgs-1
			// The budget is checked where the last WR posted was a
			// signaled one, so its completion retires everything.
			if budget > 0 && !final && posted > 0 && posted%uint64(sig) == 0 && tsc.Now()-c0 > budget {
				done = true
				break
			}
			var fl verbs.SendFlags
			if (posted+1)%uint64(sig) == 0 || final {
				fl = verbs.SendSignaled
			}
			if o.Inline {
				fl |= verbs.SendInline
			}
			if err := p.cli.qp.PostSend(p.writeWR(posted, 0, o.Size, fl)); err != nil {
				return st, err
			}
			posted++
			done = final
		}
		n, err := p.cli.sendCQ.Poll(wcs)
		st.Polls++
		if err != nil {
			return st, err
		}
		for _, wc := range wcs[:n] {
			if err := wc.Err(); err != nil {
				return st, err
			}
			retired = wc.WRID + 1
			st.Completions++
		}
		if done && retired == posted {
			break
		}
		if n == 0 {
			if err := sw.check(spins); err != nil {
				return st, err
			}
			spins++
		} else {
			spins = 0
		}
	}
	st.Elapsed = time.Since(t0)
	st.CPU = threadCPU() - cpu0
	st.Msgs = int(posted)
	st.Bytes = int64(posted) * int64(o.Size)
	return st, nil
}

// latency posts n signaled WRITEs one at a time and times each from the
// post to its completion (the responder's ACK back at the requester), with
// the cycle counter. It returns the durations and the thread's CPU time.
func (p *pair) latency(ctx context.Context, size, n int, inline bool) ([]time.Duration, time.Duration, error) {
	fl := verbs.SendSignaled
	if inline {
		fl |= verbs.SendInline
	}
	wcs := make([]verbs.WC, 1)
	cyc := make([]uint64, 0, n)
	var clk tsc.Clock
	cpu0 := threadCPU()
	clk.Start()
	for i := 0; i < n; i++ {
		c0 := tsc.Now()
		if err := p.cli.qp.PostSend(p.writeWR(uint64(i), 0, size, fl)); err != nil {
			return nil, 0, err
		}
		sw := spinWait{ctx: ctx, limit: 10 * time.Second, err: fmt.Errorf("latency: %w", errCompletionTimeout)}
		for j := 0; ; j++ {
			k, err := p.cli.sendCQ.Poll(wcs)
			if err != nil {
				return nil, 0, err
			}
			if k == 1 {
				if err := wcs[0].Err(); err != nil {
					return nil, 0, err
				}
				break
			}
			if err := sw.check(j); err != nil {
				return nil, 0, err
			}
		}
		if c1 := tsc.Now(); c1 > c0 {
			cyc = append(cyc, c1-c0)
		}
	}
	clk.Stop()
	cpu := threadCPU() - cpu0
	out := make([]time.Duration, len(cyc))
	for i, c := range cyc {
		out[i] = clk.Duration(c)
	}
	return out, cpu, nil
}

// cycles converts a duration to time-stamp-counter cycles, calibrated
// once per process over 20 ms (time.Now costs microseconds in the TCG
// guest, too much to read on every post).
func cycles(d time.Duration) uint64 {
	calOnce.Do(func() {
		var c tsc.Clock
		c.Start()
		time.Sleep(20 * time.Millisecond)
		c.Stop()
		nsPerCycle = float64(c.Duration(1<<20)) / (1 << 20)
		if nsPerCycle <= 0 {
			nsPerCycle = 1
		}
	})
	return uint64(float64(d) / nsPerCycle)
}

var (
	calOnce    sync.Once
	nsPerCycle float64
)

// lockThread pins the measuring goroutine to one OS thread on the last CPU
// (thread CPU time is per thread; a moving thread spoils the cycle counter)
// and returns the undo.
func lockThread() func() {
	runtime.LockOSThread()
	unpin := pinThread(runtime.NumCPU() - 1)
	return func() {
		unpin()
		runtime.UnlockOSThread()
	}
}

// tcgNote says, in the run's log, how to read the absolute figures.
func tcgNote(emit sandbox.Emitter) {
	if emulated() {
		note(emit, "info", say("Measured here: Soft-RoCE in a QEMU guest whose CPU is emulated (TCG). Every figure is many times slower than on hardware — read the ratios between the rows, never the absolute numbers.",
			"此处实测：Soft-RoCE 运行在 CPU 靠模拟（TCG）的 QEMU 虚拟机中。每个数值都比硬件慢很多倍——请看各行之间的比例，而不是绝对值。"))
		return
	}
	note(emit, "info", say("Measured here: Soft-RoCE, a NIC written in software — the kernel builds every packet. Read the ratios between the rows; hardware's absolute figures are far better.",
		"此处实测：Soft-RoCE，一块用软件写成的网卡——每个报文都由内核构造。请看各行之间的比例；硬件的绝对数值要好得多。"))
}

// medianOf is the median of d (0 if empty).
func medianOf(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// ratio is a/b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// yesNoIn is a yes/no in lang.
func yesNoIn(b bool, lang string) string {
	if lang == "zh" {
		return map[bool]string{true: "是", false: "否"}[b]
	}
	return map[bool]string{true: "yes", false: "no"}[b]
}

// quotedInner is s as %q escapes it, without the ASCII quotation marks:
// Chinese text puts it in “”.
func quotedInner(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// sameRow adds a row of language-free cells (figures, sizes).
func sameRow(t *sandbox.Table, cells ...string) {
	txt := make([]sandbox.Text, len(cells))
	for i, c := range cells {
		txt[i] = sandbox.Same(c)
	}
	t.AddRow(txt...)
}

// metric emits one chart point of series (labelled in both languages).
func metric(emit sandbox.Emitter, series string, label sandbox.Text, x, y float64, unit string) {
	emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: series, X: x, Y: y, Unit: unit, Message: label["en"], Messages: label})
}

// failWith emits t, a bilingual error event, for a failure that is not a
// verbs call's (verbsError explains those) and returns err marked as
// reported.
func failWith(emit sandbox.Emitter, err error, t sandbox.Text) error {
	emit.Emit(sandbox.Event{Type: sandbox.EvError, Message: t["en"], Messages: t})
	return sandbox.Reported(err)
}

// quoteZh quotes a system's own English words inside Chinese text, as is.
func quoteZh(err error) string {
	return "“" + strings.ReplaceAll(err.Error(), "”", "\"") + "”"
}
