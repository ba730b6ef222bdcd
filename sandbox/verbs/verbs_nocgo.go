//go:build !cgo

package verbs

import "time"

// This file keeps the API of verbs_cgo.go for builds without cgo: the
// package compiles, everything above it compiles, and every call that would
// touch libibverbs returns ErrNoVerbs.

// Supported reports whether this build has verbs support (it has not).
const Supported = false

// Load reports that this build has no verbs support.
func Load() error { return ErrNoVerbs }

// Context is an open RDMA device (unavailable in this build).
type Context struct{}

// Open returns ErrNoVerbs.
func Open(name string) (*Context, error) { return nil, ErrNoVerbs }

// Name is empty.
func (c *Context) Name() string { return "" }

// QueryPort returns ErrNoVerbs.
func (c *Context) QueryPort(port int) (PortAttr, error) { return PortAttr{}, ErrNoVerbs }

// QueryDevice returns ErrNoVerbs.
func (c *Context) QueryDevice() (DeviceAttr, error) { return DeviceAttr{}, ErrNoVerbs }

// QueryGID returns ErrNoVerbs.
func (c *Context) QueryGID(port, index int) (GID, error) { return GID{}, ErrNoVerbs }

// Close does nothing.
func (c *Context) Close() error { return nil }

// AllocPD returns ErrNoVerbs.
func (c *Context) AllocPD() (*PD, error) { return nil, ErrNoVerbs }

// NewCompChannel returns ErrNoVerbs.
func (c *Context) NewCompChannel() (*CompChannel, error) { return nil, ErrNoVerbs }

// NewCQ returns ErrNoVerbs.
func (c *Context) NewCQ(cqe int, ch *CompChannel) (*CQ, error) { return nil, ErrNoVerbs }

// PD is a protection domain (unavailable in this build).
type PD struct{}

// Context is nil.
func (pd *PD) Context() *Context { return nil }

// RegMR returns ErrNoVerbs.
func (pd *PD) RegMR(buf *Buffer, off, length int, access Access) (*MR, error) { return nil, ErrNoVerbs }

// NewQP returns ErrNoVerbs.
func (pd *PD) NewQP(send, recv *CQ, caps QPCaps) (*QP, error) { return nil, ErrNoVerbs }

// Close does nothing.
func (pd *PD) Close() error { return nil }

// MR is a memory region (unavailable in this build).
type MR struct{}

// Addr is 0.
func (mr *MR) Addr() uint64 { return 0 }

// Len is 0.
func (mr *MR) Len() int { return 0 }

// LKey is 0.
func (mr *MR) LKey() uint32 { return 0 }

// RKey is 0.
func (mr *MR) RKey() uint32 { return 0 }

// Access is 0.
func (mr *MR) Access() Access { return 0 }

// Close does nothing.
func (mr *MR) Close() error { return nil }

// CompChannel is a completion channel (unavailable in this build).
type CompChannel struct{}

// Wait returns ErrNoVerbs.
func (ch *CompChannel) Wait(timeout time.Duration) (*CQ, error) { return nil, ErrNoVerbs }

// Close does nothing.
func (ch *CompChannel) Close() error { return nil }

// CQ is a completion queue (unavailable in this build).
type CQ struct{}

// ReqNotify returns ErrNoVerbs.
func (cq *CQ) ReqNotify(solicitedOnly bool) error { return ErrNoVerbs }

// Poll returns ErrNoVerbs.
func (cq *CQ) Poll(out []WC) (int, error) { return 0, ErrNoVerbs }

// Close does nothing.
func (cq *CQ) Close() error { return nil }

// QP is a queue pair (unavailable in this build).
type QP struct{}

// Num is 0.
func (qp *QP) Num() uint32 { return 0 }

// Caps is empty.
func (qp *QP) Caps() QPCaps { return QPCaps{} }

// Modify returns ErrNoVerbs.
func (qp *QP) Modify(to QPState, a QPAttr) error { return ErrNoVerbs }

// State returns ErrNoVerbs.
func (qp *QP) State() (QPState, error) { return 0, ErrNoVerbs }

// PostSend returns ErrNoVerbs.
func (qp *QP) PostSend(wr SendWR) error { return ErrNoVerbs }

// PostRecv returns ErrNoVerbs.
func (qp *QP) PostRecv(id uint64, mr *MR, offset, length int) error { return ErrNoVerbs }

// Close does nothing.
func (qp *QP) Close() error { return nil }

// Type is RC.
func (qp *QP) Type() QPType { return QPTypeRC }

// AH is an address handle (unavailable in this build).
type AH struct{}

// NewAH returns ErrNoVerbs.
func (pd *PD) NewAH(port, sgidIndex int, dgid GID, hopLimit int) (*AH, error) { return nil, ErrNoVerbs }

// Close does nothing.
func (ah *AH) Close() error { return nil }

// PostSendUD returns ErrNoVerbs.
func (qp *QP) PostSendUD(wr SendWR, ah *AH, remoteQPN, qkey uint32) error { return ErrNoVerbs }
