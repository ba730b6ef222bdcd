package rdmaexp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// rcOpts describes one end of an RC connection.
type rcOpts struct {
	Side      side
	BufSize   int          // bytes of registered memory
	Access    verbs.Access // MR access flags
	QPAccess  verbs.Access // what the peer may do through the QP
	Event     bool         // receive completions through a completion channel
	SendWR    int
	RecvWR    int
	MaxInline int
	RNRRetry  int // 7 = forever
	// Tune, when set, changes the connection attributes last (lesson 02:
	// timeout, retry count, traffic class).
	Tune func(a *verbs.QPAttr)
}

// rc owns every verbs object of one end. Close frees them in reverse order.
type rc struct {
	opt    rcOpts
	ctx    *verbs.Context
	pd     *verbs.PD
	ch     *verbs.CompChannel
	sendCQ *verbs.CQ
	recvCQ *verbs.CQ
	qp     *verbs.QP
	buf    *verbs.Buffer
	mr     *verbs.MR
	port   verbs.PortAttr
	psn    uint32
	closed bool
	polls  int // ibv_poll_cq calls so far (the syscalls experiment shows they make none)
}

// openRC creates device context, PD, buffer+MR, CQs and a QP in RESET.
func openRC(o rcOpts) (r *rc, err error) {
	if o.SendWR == 0 {
		o.SendWR = 64
	}
	if o.RecvWR == 0 {
		o.RecvWR = 64
	}
	if o.QPAccess == 0 {
		o.QPAccess = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead
	}
	r = &rc{opt: o, psn: rand.Uint32() & 0xffffff}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	if r.ctx, err = verbs.Open(o.Side.Dev); err != nil {
		return nil, err
	}
	if r.port, err = r.ctx.QueryPort(1); err != nil {
		return nil, err
	}
	if !r.port.Active() {
		return nil, fmt.Errorf("%s port 1 is not active (state %d): is its netdev up?", o.Side.Dev, r.port.State)
	}
	if r.pd, err = r.ctx.AllocPD(); err != nil {
		return nil, err
	}
	if o.BufSize > 0 {
		if r.buf, err = verbs.NewBuffer(o.BufSize); err != nil {
			return nil, err
		}
		if r.mr, err = r.pd.RegMR(r.buf, 0, o.BufSize, o.Access); err != nil {
			return nil, err
		}
	}
	if o.Event {
		if r.ch, err = r.ctx.NewCompChannel(); err != nil {
			return nil, err
		}
	}
	if r.sendCQ, err = r.ctx.NewCQ(o.SendWR, nil); err != nil {
		return nil, err
	}
	if r.recvCQ, err = r.ctx.NewCQ(o.RecvWR, r.ch); err != nil {
		return nil, err
	}
	if r.qp, err = r.pd.NewQP(r.sendCQ, r.recvCQ, verbs.QPCaps{MaxSendWR: o.SendWR, MaxRecvWR: o.RecvWR, MaxInline: o.MaxInline}); err != nil {
		return nil, err
	}
	return r, nil
}

// local is what the peer needs to know about this end.
func (r *rc) local() verbs.Endpoint {
	e := verbs.Endpoint{LID: r.port.LID, QPN: r.qp.Num(), PSN: r.psn, GID: r.opt.Side.GID.GID.String()}
	if r.mr != nil {
		e.Addr, e.RKey, e.Len = r.mr.Addr(), r.mr.RKey(), uint64(r.mr.Len())
	}
	return e
}

// attr is the full attribute set for connecting to remote.
func (r *rc) attr(remote verbs.Endpoint) (verbs.QPAttr, error) {
	g, err := remote.RemoteGID()
	if err != nil {
		return verbs.QPAttr{}, err
	}
	a := verbs.DefaultQPAttr(1, r.opt.Side.GID.Index, r.port.ActiveMTU)
	a.AccessFlags = r.opt.QPAccess
	a.DestQPN, a.RQPSN, a.DGID, a.SQPSN = remote.QPN, remote.PSN, g, r.psn
	a.MinRNRTimer = 1 // 0.01 ms: RNR retries come fast, no-recv fails quickly
	if r.opt.RNRRetry > 0 {
		a.RNRRetry = r.opt.RNRRetry
	}
	if r.opt.Tune != nil {
		r.opt.Tune(&a)
	}
	return a, nil
}

// connect walks the QP RESET → INIT → RTR → RTS towards remote.
func (r *rc) connect(remote verbs.Endpoint) error {
	a, err := r.attr(remote)
	if err != nil {
		return err
	}
	for _, s := range []verbs.QPState{verbs.StateInit, verbs.StateRTR, verbs.StateRTS} {
		if err := r.qp.Modify(s, a); err != nil {
			return err
		}
	}
	return nil
}

// errCompletionTimeout: the device produced no completion in time.
var errCompletionTimeout = errors.New("no work completion arrived in time")

// waitCQ returns the next completion of cq, polling (busy) or, with a
// channel, sleeping until the device signals one.
func (r *rc) waitCQ(ctx context.Context, cq *verbs.CQ, timeout time.Duration) (verbs.WC, error) {
	wc := make([]verbs.WC, 1)
	useEvent := cq == r.recvCQ && r.ch != nil
	sw := spinWait{ctx: ctx, limit: timeout, err: errCompletionTimeout}
	for i := 0; ; i++ {
		n, err := cq.Poll(wc)
		r.polls++
		if err != nil {
			return verbs.WC{}, err
		}
		if n == 1 {
			return wc[0], nil
		}
		if useEvent {
			if err := cq.ReqNotify(false); err != nil {
				return verbs.WC{}, err
			}
			r.polls++
			if n, err = cq.Poll(wc); err != nil || n == 1 { // completion raced the arming
				return wc[0], err
			}
			if _, err := r.ch.Wait(timeout); err != nil {
				if errors.Is(err, verbs.ErrWaitTimeout) {
					return verbs.WC{}, errCompletionTimeout
				}
				return verbs.WC{}, err
			}
			continue
		}
		if err := sw.check(i); err != nil {
			return verbs.WC{}, err
		}
	}
}

// spinWait bounds a polling loop without reading the clock on every turn:
// in the lab's TCG guest the clock is an emulated HPET behind a system call
// and QEMU's global lock, slower than the round trip being measured. The
// clock is first read after 64 Ki turns, so the limit is approximate.
type spinWait struct {
	// yieldEvery is the number of turns between two yields (64 if 0): a
	// turn that only reads memory is far cheaper than one that polls a CQ.
	yieldEvery int
	ctx        context.Context
	limit      time.Duration
	err        error // returned when the limit passes
	start      time.Time
}

func (s *spinWait) check(i int) error {
	if s.yieldEvery == 0 {
		relax(i)
	} else if i%s.yieldEvery == s.yieldEvery-1 {
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
	if i&0xffff != 0xffff {
		return nil
	}
	if s.ctx != nil && s.ctx.Err() != nil {
		return s.ctx.Err()
	}
	now := time.Now()
	if s.start.IsZero() {
		s.start = now
	} else if now.Sub(s.start) > s.limit {
		return s.err
	}
	return nil
}

// Close frees everything this end owns and returns the first error.
func (r *rc) Close() error {
	if r == nil || r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if r.qp != nil {
		add(r.qp.Close())
	}
	if r.mr != nil {
		add(r.mr.Close())
	}
	if r.buf != nil {
		add(r.buf.Close())
	}
	if r.recvCQ != nil {
		add(r.recvCQ.Close())
	}
	if r.sendCQ != nil {
		add(r.sendCQ.Close())
	}
	if r.ch != nil {
		add(r.ch.Close())
	}
	if r.pd != nil {
		add(r.pd.Close())
	}
	if r.ctx != nil {
		add(r.ctx.Close())
	}
	return errors.Join(errs...)
}

// relax lets the kernel run every 64 spins of a polling loop. On Soft-RoCE
// the "NIC" is the kernel: a poller that never yields keeps the packet work
// it waits for (softirq, ksoftirqd) off its CPU until the next scheduler
// tick — milliseconds under emulation (perftest shows the same tail). A
// hardware RNIC needs no such courtesy; sched_yield costs microseconds.
func relax(i int) {
	if i&63 == 63 {
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
}
