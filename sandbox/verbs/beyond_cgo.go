//go:build cgo

package verbs

/*
#include <stdlib.h>
#include "beyond.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

var (
	xloadOnce sync.Once
	xloadErr  error
)

func loadBeyond() error {
	xloadOnce.Do(func() {
		msg := make([]byte, 512)
		if C.rlx_load((*C.char)(unsafe.Pointer(&msg[0])), C.int(len(msg))) != 0 {
			xloadErr = fmt.Errorf("load libibverbs.so.1: %s", C.GoString((*C.char)(unsafe.Pointer(&msg[0]))))
		}
	})
	return xloadErr
}

// QueryCaps asks the device (ibv_query_device_ex) what it supports.
func (c *Context) QueryCaps() (Caps, error) {
	if err := loadBeyond(); err != nil {
		return Caps{}, err
	}
	var a C.struct_rlx_caps
	if e := C.rlx_query_caps(c.c, &a); e != 0 {
		return Caps{}, callErr("ibv_query_device_ex", int(e), c.name)
	}
	return Caps{
		DeviceCapFlags: uint64(a.device_cap_flags), AtomicCap: AtomicCap(a.atomic_cap),
		MaxQPRdAtom: int(a.max_qp_rd_atom), MaxQPInitRdAtom: int(a.max_qp_init_rd_atom), MaxResRdAtom: int(a.max_res_rd_atom),
		MaxSRQ: int(a.max_srq), MaxSRQWR: int(a.max_srq_wr), MaxMW: int(a.max_mw),
		MaxMcastGrp: int(a.max_mcast_grp), MaxMcastQPs: int(a.max_mcast_qp_attach),
		ODPGeneralCaps: uint32(a.odp_general_caps), ODPRCCaps: uint32(a.odp_rc_caps),
		MaxDMSize: uint64(a.max_dm_size), CQModMaxCount: int(a.cq_mod_max_count), CQModMaxPeriod: int(a.cq_mod_max_period),
		Extended: a.ex != 0,
	}, nil
}

// Probe tries one feature the lesson lists as hardware-only and returns
// the errno the device answered (0: it worked, and what it made was freed).
// feature: "xrc" (ibv_open_xrcd), "dm" (ibv_alloc_dm, 4 KiB), "cq-moderation"
// (ibv_modify_cq on cq), "odp" (ibv_reg_mr with IBV_ACCESS_ON_DEMAND over
// buf), "dmabuf" (ibv_reg_dmabuf_mr with fd -1: EBADF from a provider that
// implements it, EOPNOTSUPP from one that does not).
func (pd *PD) Probe(feature string, cq *CQ, buf *Buffer) (syscall.Errno, error) {
	if err := loadBeyond(); err != nil {
		return 0, err
	}
	var e C.int
	switch feature {
	case "xrc":
		e = C.rlx_try_xrcd(pd.ctx.c)
	case "dm":
		e = C.rlx_try_dm(pd.ctx.c, 4096)
	case "cq-moderation":
		e = C.rlx_try_cq_moderation(cq.cq)
	case "odp":
		e = C.rlx_try_odp(pd.p, unsafe.Pointer(&buf.Bytes()[0]), C.size_t(buf.Len()))
	case "dmabuf":
		e = C.rlx_try_dmabuf(pd.p)
	default:
		return 0, fmt.Errorf("probe %q: unknown feature", feature)
	}
	return syscall.Errno(e), nil
}

// PostAtomic posts one atomic on an RC QP: FETCH_AND_ADD adds compareAdd to
// the remote 8-byte word at remoteAddr; CMP_AND_SWP writes swap there if it
// holds compareAdd. Either way the word's old value lands in the 8 bytes
// of mr at off (the MR needs LOCAL_WRITE).
func (qp *QP) PostAtomic(id uint64, op Opcode, flags SendFlags, mr *MR, off int, remoteAddr uint64, rkey uint32, compareAdd, swap uint64) error {
	if op != OpAtomicCmpSwp && op != OpAtomicFetchAdd {
		return fmt.Errorf("PostAtomic: %s is not an atomic", OpName(op))
	}
	e := C.rlx_post_atomic(qp.qp, C.uint64_t(id), C.int(op), C.int(flags), C.uint64_t(mr.addr+uint64(off)), C.uint32_t(mr.lkey),
		C.uint64_t(remoteAddr), C.uint32_t(rkey), C.uint64_t(compareAdd), C.uint64_t(swap))
	return callErr("ibv_post_send", int(e), OpName(op))
}

// SRQ is a shared receive queue: one pool of receive buffers for many QPs.
type SRQ struct {
	s *C.struct_ibv_srq
}

// NewSRQ creates a shared receive queue for up to maxWR receives.
func (pd *PD) NewSRQ(maxWR int) (*SRQ, error) {
	if err := loadBeyond(); err != nil {
		return nil, err
	}
	var e C.int
	s := C.rlx_create_srq(pd.p, C.uint32_t(maxWR), &e)
	if s == nil {
		return nil, callErr("ibv_create_srq", int(e), fmt.Sprintf("%d WRs", maxWR))
	}
	return &SRQ{s: s}, nil
}

// Arm sets the SRQ limit (ibv_modify_srq with IBV_SRQ_LIMIT): when fewer
// than limit receives remain, the device raises IBV_EVENT_SRQ_LIMIT_REACHED
// once and disarms.
func (s *SRQ) Arm(limit int) error {
	return callErr("ibv_modify_srq", int(C.rlx_arm_srq(s.s, C.uint32_t(limit))), fmt.Sprintf("srq_limit %d", limit))
}

// Query returns the SRQ's size and its limit as the device holds them now
// (0 once the limit event has fired).
func (s *SRQ) Query() (maxWR, limit int, err error) {
	var mw, l C.uint32_t
	if e := C.rlx_query_srq(s.s, &mw, &l); e != 0 {
		return 0, 0, callErr("ibv_query_srq", int(e), "")
	}
	return int(mw), int(l), nil
}

// PostRecv adds one receive buffer to the pool.
func (s *SRQ) PostRecv(id uint64, mr *MR, offset, length int) error {
	e := C.rlx_post_srq_recv(s.s, C.uint64_t(id), C.uint64_t(mr.addr+uint64(offset)), C.uint32_t(length), C.uint32_t(mr.lkey))
	return callErr("ibv_post_srq_recv", int(e), "")
}

// Close destroys the SRQ. Destroy the QPs that use it first.
func (s *SRQ) Close() error {
	if s == nil || s.s == nil {
		return nil
	}
	e := C.rlx_destroy_srq(s.s)
	s.s = nil
	return callErr("ibv_destroy_srq", int(e), "")
}

// NewQPWithSRQ creates an RC QP in RESET whose receives come from srq.
func (pd *PD) NewQPWithSRQ(send, recv *CQ, srq *SRQ, maxSendWR int) (*QP, error) {
	if err := loadBeyond(); err != nil {
		return nil, err
	}
	var e C.int
	qp := C.rlx_create_qp_srq(pd.p, send.cq, recv.cq, srq.s, C.uint32_t(maxSendWR), &e)
	if qp == nil {
		return nil, callErr("ibv_create_qp", int(e), "RC with an SRQ")
	}
	return &QP{qp: qp, pd: pd, caps: QPCaps{MaxSendWR: maxSendWR}}, nil
}

// AsyncEvent waits up to timeout for one async event of the device (QP,
// CQ, SRQ, port), reads it with ibv_get_async_event and acknowledges it.
// ok is false when none came in time.
func (c *Context) AsyncEvent(timeout time.Duration) (ev AsyncEvent, ok bool, err error) {
	if err := loadBeyond(); err != nil {
		return ev, false, err
	}
	fd := int(C.rlx_async_fd(c.c))
	if err := unix.SetNonblock(fd, true); err != nil {
		return ev, false, fmt.Errorf("set the async event fd non-blocking: %w", err)
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(timeout)
	for {
		ms := int(time.Until(deadline) / time.Millisecond)
		if ms < 0 {
			ms = 0
		}
		n, err := unix.Poll(fds, ms)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return ev, false, &Error{Call: "poll", Errno: err.(unix.Errno), Detail: "async event fd"}
		}
		if n == 0 {
			return ev, false, nil
		}
		break
	}
	var out C.struct_rlx_event
	if e := C.rlx_get_async_event(c.c, &out); e != 0 {
		if syscall.Errno(e) == unix.EAGAIN {
			return ev, false, nil
		}
		return ev, false, callErr("ibv_get_async_event", int(e), c.name)
	}
	ev = AsyncEvent{Type: EventType(out._type), QPNum: uint32(out.qp_num), Port: int(out.port)}
	ev.Element = [...]string{"", "qp", "cq", "srq", "port", "device"}[min(int(out.element), 5)]
	return ev, true, nil
}

// MW is a memory window: a second, narrower rkey over part of an MR that
// can be revoked (invalidated) without deregistering the MR.
type MW struct {
	m    *C.struct_ibv_mw
	rkey uint32
}

// AllocMW allocates a memory window of the given type.
func (pd *PD) AllocMW(t MWType) (*MW, error) {
	if err := loadBeyond(); err != nil {
		return nil, err
	}
	var e C.int
	m := C.rlx_alloc_mw(pd.p, C.int(t), &e)
	if m == nil {
		return nil, callErr("ibv_alloc_mw", int(e), fmt.Sprintf("type %d", t))
	}
	return &MW{m: m, rkey: uint32(C.rlx_mw_rkey(m))}, nil
}

// RKey is the window's current rkey (after a completed bind, the one bound).
func (mw *MW) RKey() uint32 { return mw.rkey }

// NextRKey is the rkey for the next bind: ibv_inc_rkey changes the low
// 8 bits (the "key" part the consumer owns), so an old rkey never matches.
func (mw *MW) NextRKey() uint32 { return uint32(C.rlx_inc_rkey(C.uint32_t(mw.rkey))) }

// PostBind posts a BIND_MW work request on qp binding the window to
// [addr, addr+length) of mr with the given remote access and rkey. The
// rkey takes effect once the bind completes; call Bound then.
func (qp *QP) PostBind(id uint64, mw *MW, rkey uint32, mr *MR, addr uint64, length int, access Access) error {
	e := C.rlx_post_bind_mw(qp.qp, C.uint64_t(id), mw.m, C.uint32_t(rkey), mr.m, C.uint64_t(addr), C.uint64_t(length), C.int(access))
	return callErr("ibv_post_send", int(e), "BIND_MW")
}

// Bound records rkey as the window's current rkey (after its bind completed).
func (mw *MW) Bound(rkey uint32) { mw.rkey = rkey }

// PostLocalInv posts a LOCAL_INV work request invalidating rkey.
func (qp *QP) PostLocalInv(id uint64, rkey uint32) error {
	return callErr("ibv_post_send", int(C.rlx_post_local_inv(qp.qp, C.uint64_t(id), C.uint32_t(rkey))), "LOCAL_INV")
}

// PostSendInv posts a SEND_WITH_INV: a SEND that also asks the receiver's
// device to invalidate invRKey there.
func (qp *QP) PostSendInv(id uint64, mr *MR, off, length int, invRKey uint32) error {
	e := C.rlx_post_send_inv(qp.qp, C.uint64_t(id), C.uint64_t(mr.addr+uint64(off)), C.uint32_t(length), C.uint32_t(mr.lkey), C.uint32_t(invRKey))
	return callErr("ibv_post_send", int(e), "SEND_WITH_INV")
}

// PollInv polls one completion and returns whether one was there, with its
// raw wc_flags and the invalidated_rkey field a SEND_WITH_INV fills.
func (cq *CQ) PollInv() (InvCompletion, bool, error) {
	var id C.uint64_t
	var st, fl C.int
	var rk C.uint32_t
	n := C.rlx_poll_inv(cq.cq, &id, &st, &fl, &rk)
	if n < 0 {
		return InvCompletion{}, false, callErr("ibv_poll_cq", int(-n), "")
	}
	if n == 0 {
		return InvCompletion{}, false, nil
	}
	return InvCompletion{WRID: uint64(id), Status: WCStatus(st), Flags: int(fl), InvRKey: uint32(rk)}, true, nil
}

// Close deallocates the window.
func (mw *MW) Close() error {
	if mw == nil || mw.m == nil {
		return nil
	}
	e := C.rlx_dealloc_mw(mw.m)
	mw.m = nil
	return callErr("ibv_dealloc_mw", int(e), "")
}

// AttachMcast attaches a UD QP to the multicast group gid: datagrams sent
// to the group reach every attached QP.
func (qp *QP) AttachMcast(gid GID) error {
	if err := loadBeyond(); err != nil {
		return err
	}
	e := C.rlx_attach_mcast(qp.qp, (*C.uint8_t)(unsafe.Pointer(&gid[0])), 0)
	return callErr("ibv_attach_mcast", int(e), gid.String())
}

// DetachMcast detaches the QP from the group.
func (qp *QP) DetachMcast(gid GID) error {
	e := C.rlx_detach_mcast(qp.qp, (*C.uint8_t)(unsafe.Pointer(&gid[0])), 0)
	return callErr("ibv_detach_mcast", int(e), gid.String())
}
