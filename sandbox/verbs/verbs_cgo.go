//go:build cgo

package verbs

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Supported reports whether this build has verbs support (it has: cgo).
const Supported = true

var (
	loadOnce sync.Once
	loadErr  error
)

// Load opens libibverbs.so.1. Every other call does it too; Load lets a
// caller report a missing rdma-core before touching any device.
func Load() error {
	loadOnce.Do(func() {
		msg := make([]byte, 512)
		if C.rl_load((*C.char)(unsafe.Pointer(&msg[0])), C.int(len(msg))) != 0 {
			loadErr = fmt.Errorf("load libibverbs.so.1 (install rdma-core: apt-get install ibverbs-providers libibverbs1): %s", C.GoString((*C.char)(unsafe.Pointer(&msg[0]))))
		}
	})
	return loadErr
}

// Context is an open RDMA device (struct ibv_context).
type Context struct {
	c    *C.struct_ibv_context
	name string
}

// Open opens the RDMA device called name ("rxe0").
func Open(name string) (*Context, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	var n, e C.int
	list := C.rl_get_device_list(&n, &e)
	if list == nil {
		return nil, callErr("ibv_get_device_list", int(e), "")
	}
	defer C.rl_free_device_list(list)
	var names []string
	for i := 0; i < int(n); i++ {
		dn := C.GoString(C.rl_device_name(list, C.int(i)))
		names = append(names, dn)
		if dn != name {
			continue
		}
		c := C.rl_open_device(list, C.int(i), &e)
		if c == nil {
			return nil, callErr("ibv_open_device", int(e), name)
		}
		return &Context{c: c, name: name}, nil
	}
	return nil, &Error{Call: "ibv_get_device_list", Errno: unix.ENODEV, Detail: fmt.Sprintf("no device %q among %v", name, names)}
}

// Name is the device name.
func (c *Context) Name() string { return c.name }

// QueryPort returns the attributes of a port (1-based).
func (c *Context) QueryPort(port int) (PortAttr, error) {
	var a C.struct_ibv_port_attr
	if e := C.rl_query_port(c.c, C.uint8_t(port), &a); e != 0 {
		return PortAttr{}, callErr("ibv_query_port", int(e), fmt.Sprintf("%s port %d", c.name, port))
	}
	return PortAttr{
		State: int(a.state), MaxMTU: MTU(a.max_mtu), ActiveMTU: MTU(a.active_mtu),
		GIDTblLen: int(a.gid_tbl_len), LID: uint16(a.lid), LinkLayer: int(a.link_layer),
	}, nil
}

// QueryDevice returns the device's limits.
func (c *Context) QueryDevice() (DeviceAttr, error) {
	var a C.struct_ibv_device_attr
	if e := C.rl_query_device(c.c, &a); e != 0 {
		return DeviceAttr{}, callErr("ibv_query_device", int(e), c.name)
	}
	return DeviceAttr{
		MaxQP: int(a.max_qp), MaxQPWR: int(a.max_qp_wr), MaxCQ: int(a.max_cq), MaxCQE: int(a.max_cqe),
		MaxMR: int(a.max_mr), MaxPD: int(a.max_pd), MaxMRSize: uint64(a.max_mr_size),
	}, nil
}

// QueryGID reads one entry of the port's GID table through libibverbs.
func (c *Context) QueryGID(port, index int) (GID, error) {
	var g C.union_ibv_gid
	var out GID
	if e := C.rl_query_gid(c.c, C.uint8_t(port), C.int(index), &g); e != 0 {
		return out, callErr("ibv_query_gid", int(e), fmt.Sprintf("%s port %d index %d", c.name, port, index))
	}
	copy(out[:], C.GoBytes(unsafe.Pointer(&g), 16))
	return out, nil
}

// Close closes the device. Close every PD, CQ and channel first.
func (c *Context) Close() error {
	if c == nil || c.c == nil {
		return nil
	}
	e := C.rl_close_device(c.c)
	c.c = nil
	return callErr("ibv_close_device", int(e), c.name)
}

// PD is a protection domain: QPs and MRs may only be used together when they
// belong to the same PD.
type PD struct {
	p   *C.struct_ibv_pd
	ctx *Context
}

// AllocPD allocates a protection domain.
func (c *Context) AllocPD() (*PD, error) {
	var e C.int
	p := C.rl_alloc_pd(c.c, &e)
	if p == nil {
		return nil, callErr("ibv_alloc_pd", int(e), c.name)
	}
	return &PD{p: p, ctx: c}, nil
}

// Context is the device the PD belongs to.
func (pd *PD) Context() *Context { return pd.ctx }

// Close deallocates the PD. Deregister its MRs and destroy its QPs first.
func (pd *PD) Close() error {
	if pd == nil || pd.p == nil {
		return nil
	}
	e := C.rl_dealloc_pd(pd.p)
	pd.p = nil
	return callErr("ibv_dealloc_pd", int(e), "")
}

// MR is a registered memory region: pinned memory the NIC may DMA to and
// from, named locally by LKey and remotely by RKey.
type MR struct {
	m      *C.struct_ibv_mr
	addr   uint64
	length int
	lkey   uint32
	rkey   uint32
	access Access
}

// RegMR registers length bytes of buf from byte offset off. This is the call
// that pins pages and counts them against RLIMIT_MEMLOCK unless the process
// has CAP_IPC_LOCK.
func (pd *PD) RegMR(buf *Buffer, off, length int, access Access) (*MR, error) {
	if off < 0 || length <= 0 || off+length > buf.Len() {
		return nil, fmt.Errorf("register [%d,%d) of a %d-byte buffer: out of range", off, off+length, buf.Len())
	}
	addr := unsafe.Pointer(&buf.Bytes()[off])
	var e C.int
	m := C.rl_reg_mr(pd.p, addr, C.size_t(length), C.int(access), &e)
	if m == nil {
		return nil, callErr("ibv_reg_mr", int(e), fmt.Sprintf("%d bytes, %s", length, access))
	}
	return &MR{m: m, addr: uint64(uintptr(addr)), length: length, lkey: uint32(m.lkey), rkey: uint32(m.rkey), access: access}, nil
}

// Addr is the MR's first byte as the NIC sees it.
func (mr *MR) Addr() uint64 { return mr.addr }

// Len is the MR's length in bytes.
func (mr *MR) Len() int { return mr.length }

// LKey names the MR in local scatter/gather entries.
func (mr *MR) LKey() uint32 { return mr.lkey }

// RKey lets a remote peer access the MR (with the access flags granted).
func (mr *MR) RKey() uint32 { return mr.rkey }

// Access is the set of access flags the MR was registered with.
func (mr *MR) Access() Access { return mr.access }

// Close deregisters the MR (unpins its pages). The buffer stays mapped.
func (mr *MR) Close() error {
	if mr == nil || mr.m == nil {
		return nil
	}
	e := C.rl_dereg_mr(mr.m)
	mr.m = nil
	return callErr("ibv_dereg_mr", int(e), "")
}

// CompChannel delivers CQ events through a file descriptor, so a waiting
// thread sleeps in the kernel instead of spinning on the CQ (event mode).
type CompChannel struct {
	ch  *C.struct_ibv_comp_channel
	mu  sync.Mutex
	cqs map[*C.struct_ibv_cq]*CQ
}

// NewCompChannel creates a completion channel.
func (c *Context) NewCompChannel() (*CompChannel, error) {
	var e C.int
	ch := C.rl_create_comp_channel(c.c, &e)
	if ch == nil {
		return nil, callErr("ibv_create_comp_channel", int(e), c.name)
	}
	// non-blocking, so Wait can time out in poll(2) instead of hanging in read(2)
	if err := unix.SetNonblock(int(ch.fd), true); err != nil {
		C.rl_destroy_comp_channel(ch)
		return nil, fmt.Errorf("set completion channel non-blocking: %w", err)
	}
	return &CompChannel{ch: ch, cqs: map[*C.struct_ibv_cq]*CQ{}}, nil
}

// Wait sleeps until a CQ attached to the channel has an event (after
// CQ.ReqNotify), acknowledges it and returns that CQ.
func (ch *CompChannel) Wait(timeout time.Duration) (*CQ, error) {
	fds := []unix.PollFd{{Fd: int32(ch.ch.fd), Events: unix.POLLIN}}
	ms := int(timeout / time.Millisecond)
	if timeout < 0 {
		ms = -1
	}
	for {
		n, err := unix.Poll(fds, ms)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &Error{Call: "poll", Errno: err.(unix.Errno), Detail: "completion channel"}
		}
		if n == 0 {
			return nil, ErrWaitTimeout
		}
		break
	}
	var cq *C.struct_ibv_cq
	if e := C.rl_get_cq_event(ch.ch, &cq); e != 0 {
		return nil, callErr("ibv_get_cq_event", int(e), "")
	}
	C.rl_ack_cq_events(cq, 1)
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.cqs[cq], nil
}

// Close destroys the channel. Destroy its CQs first.
func (ch *CompChannel) Close() error {
	if ch == nil || ch.ch == nil {
		return nil
	}
	e := C.rl_destroy_comp_channel(ch.ch)
	ch.ch = nil
	return callErr("ibv_destroy_comp_channel", int(e), "")
}

// CQ is a completion queue.
type CQ struct {
	cq  *C.struct_ibv_cq
	ch  *CompChannel
	wcs *C.struct_ibv_wc // C array of wcBatch entries, reused by Poll
}

const wcBatch = 16

// NewCQ creates a CQ with room for cqe completions; with a channel it can
// signal events (event mode), without one it can only be polled.
func (c *Context) NewCQ(cqe int, ch *CompChannel) (*CQ, error) {
	var e C.int
	var cch *C.struct_ibv_comp_channel
	if ch != nil {
		cch = ch.ch
	}
	cq := C.rl_create_cq(c.c, C.int(cqe), cch, &e)
	if cq == nil {
		return nil, callErr("ibv_create_cq", int(e), fmt.Sprintf("%d entries", cqe))
	}
	out := &CQ{cq: cq, ch: ch, wcs: (*C.struct_ibv_wc)(C.calloc(wcBatch, C.size_t(unsafe.Sizeof(C.struct_ibv_wc{}))))}
	if ch != nil {
		ch.mu.Lock()
		ch.cqs[cq] = out
		ch.mu.Unlock()
	}
	return out, nil
}

// ReqNotify arms the CQ: the next completion raises one event on its channel.
func (cq *CQ) ReqNotify(solicitedOnly bool) error {
	s := 0
	if solicitedOnly {
		s = 1
	}
	return callErr("ibv_req_notify_cq", int(C.rl_req_notify_cq(cq.cq, C.int(s))), "")
}

// Poll moves up to len(out) completions (at most 16 per call) into out and
// returns how many; 0 means the CQ is empty. It never blocks.
func (cq *CQ) Poll(out []WC) (int, error) {
	n := len(out)
	if n > wcBatch {
		n = wcBatch
	}
	if n == 0 {
		return 0, nil
	}
	got := int(C.rl_poll_cq(cq.cq, C.int(n), cq.wcs))
	if got < 0 {
		return 0, callErr("ibv_poll_cq", -got, "")
	}
	wcs := unsafe.Slice(cq.wcs, wcBatch)
	for i := 0; i < got; i++ {
		w := &wcs[i]
		out[i] = WC{
			WRID: uint64(w.wr_id), Status: WCStatus(w.status), Opcode: WCOpcode(w.opcode),
			VendorErr: uint32(w.vendor_err), ByteLen: uint32(w.byte_len), QPNum: uint32(w.qp_num),
			SrcQP: uint32(w.src_qp), GRH: w.wc_flags&C.IBV_WC_GRH != 0,
		}
		if w.wc_flags&C.IBV_WC_WITH_IMM != 0 {
			out[i].HasImm = true
			raw := *(*C.uint32_t)(unsafe.Pointer(&w.anon0))
			out[i].Imm = beToHost(uint32(raw))
		}
	}
	return got, nil
}

// Close destroys the CQ. Destroy the QPs that use it first.
func (cq *CQ) Close() error {
	if cq == nil || cq.cq == nil {
		return nil
	}
	if cq.ch != nil {
		cq.ch.mu.Lock()
		delete(cq.ch.cqs, cq.cq)
		cq.ch.mu.Unlock()
	}
	e := C.rl_destroy_cq(cq.cq)
	cq.cq = nil
	C.free(unsafe.Pointer(cq.wcs))
	cq.wcs = nil
	return callErr("ibv_destroy_cq", int(e), "")
}

// QP is a reliable-connected queue pair.
type QP struct {
	qp   *C.struct_ibv_qp
	pd   *PD
	caps QPCaps
}

// NewQP creates an RC QP in state RESET, with one scatter/gather entry per
// work request.
func (pd *PD) NewQP(send, recv *CQ, caps QPCaps) (*QP, error) {
	var a C.struct_ibv_qp_init_attr
	a.send_cq = send.cq
	a.recv_cq = recv.cq
	a.qp_type = C.IBV_QPT_RC
	if caps.Type != 0 {
		a.qp_type = C.enum_ibv_qp_type(caps.Type)
	}
	a.cap.max_send_wr = C.uint32_t(caps.MaxSendWR)
	a.cap.max_recv_wr = C.uint32_t(caps.MaxRecvWR)
	a.cap.max_send_sge = 1
	a.cap.max_recv_sge = 1
	a.cap.max_inline_data = C.uint32_t(caps.MaxInline)
	var e C.int
	qp := C.rl_create_qp(pd.p, &a, &e)
	if qp == nil {
		return nil, callErr("ibv_create_qp", int(e), fmt.Sprintf("%s, %d send / %d recv WRs", caps.Type, caps.MaxSendWR, caps.MaxRecvWR))
	}
	caps.MaxInline = int(a.cap.max_inline_data) // what the device granted
	return &QP{qp: qp, pd: pd, caps: caps}, nil
}

// Num is the QP number the peer must address.
func (qp *QP) Num() uint32 { return uint32(qp.qp.qp_num) }

// Caps is what the device granted at creation (MaxInline may differ).
func (qp *QP) Caps() QPCaps { return qp.caps }

// Type is the QP's transport service.
func (qp *QP) Type() QPType {
	if qp.caps.Type == 0 {
		return QPTypeRC
	}
	return qp.caps.Type
}

// Modify moves the QP to state to, passing the attributes that transition
// requires for the QP's type (RESET→INIT, INIT→RTR, RTR→RTS; RESET and
// ERROR need none). UD needs only the Q_Key at INIT and the SQ PSN at RTS:
// it has no peer, so nothing describes one.
func (qp *QP) Modify(to QPState, a QPAttr) error {
	var attr C.struct_ibv_qp_attr
	attr.qp_state = C.enum_ibv_qp_state(to)
	mask := C.IBV_QP_STATE
	if t := qp.Type(); t == QPTypeUD || t == QPTypeUC {
		return qp.modifyUnreliable(t, to, a)
	}
	switch to {
	case StateInit:
		attr.pkey_index = C.uint16_t(a.PKeyIndex)
		attr.port_num = C.uint8_t(a.Port)
		attr.qp_access_flags = C.uint(a.AccessFlags)
		mask |= C.IBV_QP_PKEY_INDEX | C.IBV_QP_PORT | C.IBV_QP_ACCESS_FLAGS
	case StateRTR:
		attr.path_mtu = C.enum_ibv_mtu(a.PathMTU)
		attr.dest_qp_num = C.uint32_t(a.DestQPN)
		attr.rq_psn = C.uint32_t(a.RQPSN)
		attr.max_dest_rd_atomic = C.uint8_t(a.MaxDestRdAtomic)
		attr.min_rnr_timer = C.uint8_t(a.MinRNRTimer)
		attr.ah_attr.is_global = 1
		attr.ah_attr.port_num = C.uint8_t(a.Port)
		attr.ah_attr.grh.sgid_index = C.uint8_t(a.SGIDIndex)
		attr.ah_attr.grh.hop_limit = C.uint8_t(a.HopLimit)
		attr.ah_attr.grh.traffic_class = C.uint8_t(a.TrafficClass)
		dgid := unsafe.Slice((*byte)(unsafe.Pointer(&attr.ah_attr.grh.dgid)), 16)
		copy(dgid, a.DGID[:])
		mask |= C.IBV_QP_AV | C.IBV_QP_PATH_MTU | C.IBV_QP_DEST_QPN | C.IBV_QP_RQ_PSN |
			C.IBV_QP_MAX_DEST_RD_ATOMIC | C.IBV_QP_MIN_RNR_TIMER
	case StateRTS:
		attr.sq_psn = C.uint32_t(a.SQPSN)
		attr.timeout = C.uint8_t(a.Timeout)
		attr.retry_cnt = C.uint8_t(a.RetryCnt)
		attr.rnr_retry = C.uint8_t(a.RNRRetry)
		attr.max_rd_atomic = C.uint8_t(a.MaxRdAtomic)
		mask |= C.IBV_QP_TIMEOUT | C.IBV_QP_RETRY_CNT | C.IBV_QP_RNR_RETRY | C.IBV_QP_SQ_PSN | C.IBV_QP_MAX_QP_RD_ATOMIC
	}
	e := C.rl_modify_qp(qp.qp, &attr, C.int(mask))
	return callErr("ibv_modify_qp", int(e), "to "+to.String())
}

func (qp *QP) modifyUnreliable(t QPType, to QPState, a QPAttr) error {
	var attr C.struct_ibv_qp_attr
	attr.qp_state = C.enum_ibv_qp_state(to)
	mask := C.IBV_QP_STATE
	switch {
	case to == StateInit:
		attr.pkey_index = C.uint16_t(a.PKeyIndex)
		attr.port_num = C.uint8_t(a.Port)
		mask |= C.IBV_QP_PKEY_INDEX | C.IBV_QP_PORT
		if t == QPTypeUD {
			attr.qkey = C.uint32_t(a.QKey)
			mask |= C.IBV_QP_QKEY
		} else {
			attr.qp_access_flags = C.uint(a.AccessFlags)
			mask |= C.IBV_QP_ACCESS_FLAGS
		}
	case to == StateRTR && t == QPTypeUC:
		attr.path_mtu = C.enum_ibv_mtu(a.PathMTU)
		attr.dest_qp_num = C.uint32_t(a.DestQPN)
		attr.rq_psn = C.uint32_t(a.RQPSN)
		attr.ah_attr.is_global = 1
		attr.ah_attr.port_num = C.uint8_t(a.Port)
		attr.ah_attr.grh.sgid_index = C.uint8_t(a.SGIDIndex)
		attr.ah_attr.grh.hop_limit = C.uint8_t(a.HopLimit)
		dgid := unsafe.Slice((*byte)(unsafe.Pointer(&attr.ah_attr.grh.dgid)), 16)
		copy(dgid, a.DGID[:])
		mask |= C.IBV_QP_AV | C.IBV_QP_PATH_MTU | C.IBV_QP_DEST_QPN | C.IBV_QP_RQ_PSN
	case to == StateRTS:
		attr.sq_psn = C.uint32_t(a.SQPSN)
		mask |= C.IBV_QP_SQ_PSN
	}
	e := C.rl_modify_qp(qp.qp, &attr, C.int(mask))
	return callErr("ibv_modify_qp", int(e), t.String()+" to "+to.String())
}

// AH is an address handle: where a UD datagram goes (the peer's GID, our
// port and source GID index). One per destination, reused for every send.
type AH struct {
	ah *C.struct_ibv_ah
}

// NewAH creates an address handle towards dgid, leaving by port with the
// source GID at sgidIndex.
func (pd *PD) NewAH(port, sgidIndex int, dgid GID, hopLimit int) (*AH, error) {
	var a C.struct_ibv_ah_attr
	a.is_global = 1
	a.port_num = C.uint8_t(port)
	a.grh.sgid_index = C.uint8_t(sgidIndex)
	a.grh.hop_limit = C.uint8_t(hopLimit)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&a.grh.dgid)), 16), dgid[:])
	var e C.int
	ah := C.rl_create_ah(pd.p, &a, &e)
	if ah == nil {
		return nil, callErr("ibv_create_ah", int(e), "to "+dgid.String())
	}
	return &AH{ah: ah}, nil
}

// Close destroys the address handle.
func (ah *AH) Close() error {
	if ah == nil || ah.ah == nil {
		return nil
	}
	e := C.rl_destroy_ah(ah.ah)
	ah.ah = nil
	return callErr("ibv_destroy_ah", int(e), "")
}

// PostSendUD posts one UD SEND of wr's buffer to QP remoteQPN (with Q_Key
// qkey) at the address ah names. wr.Op is ignored: UD only sends.
func (qp *QP) PostSendUD(wr SendWR, ah *AH, remoteQPN, qkey uint32) error {
	var addr C.uint64_t
	var lkey C.uint32_t
	if wr.MR != nil && wr.Length > 0 {
		addr = C.uint64_t(wr.MR.addr + uint64(wr.Offset))
		lkey = C.uint32_t(wr.MR.lkey)
	}
	e := C.rl_post_send_ud(qp.qp, C.uint64_t(wr.ID), C.int(wr.Flags), addr, C.uint32_t(wr.Length), lkey, ah.ah, C.uint32_t(remoteQPN), C.uint32_t(qkey))
	return callErr("ibv_post_send", int(e), "UD SEND")
}

// State asks the device for the QP's current state.
func (qp *QP) State() (QPState, error) {
	var attr C.struct_ibv_qp_attr
	var init C.struct_ibv_qp_init_attr
	if e := C.rl_query_qp(qp.qp, &attr, C.IBV_QP_STATE, &init); e != 0 {
		return 0, callErr("ibv_query_qp", int(e), "")
	}
	return QPState(attr.qp_state), nil
}

// PostSend posts one work request on the send queue.
func (qp *QP) PostSend(wr SendWR) error {
	var addr C.uint64_t
	var lkey C.uint32_t
	if wr.MR != nil && wr.Length > 0 {
		addr = C.uint64_t(wr.MR.addr + uint64(wr.Offset))
		lkey = C.uint32_t(wr.MR.lkey)
	}
	e := C.rl_post_send(qp.qp, C.uint64_t(wr.ID), C.int(wr.Op), C.int(wr.Flags), addr, C.uint32_t(wr.Length), lkey,
		C.uint64_t(wr.RemoteAddr), C.uint32_t(wr.RKey), C.uint32_t(wr.Imm))
	return callErr("ibv_post_send", int(e), wr.Op.String())
}

// PostRecv posts one receive buffer (length bytes of mr from offset).
func (qp *QP) PostRecv(id uint64, mr *MR, offset, length int) error {
	var addr C.uint64_t
	var lkey C.uint32_t
	if mr != nil && length > 0 {
		addr = C.uint64_t(mr.addr + uint64(offset))
		lkey = C.uint32_t(mr.lkey)
	}
	e := C.rl_post_recv(qp.qp, C.uint64_t(id), addr, C.uint32_t(length), lkey)
	return callErr("ibv_post_recv", int(e), "")
}

// Close destroys the QP.
func (qp *QP) Close() error {
	if qp == nil || qp.qp == nil {
		return nil
	}
	e := C.rl_destroy_qp(qp.qp)
	qp.qp = nil
	return callErr("ibv_destroy_qp", int(e), "")
}
