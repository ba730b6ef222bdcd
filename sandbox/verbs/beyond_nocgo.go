//go:build !cgo

package verbs

import (
	"syscall"
	"time"
)

// The API of beyond_cgo.go for builds without cgo: every call returns
// ErrNoVerbs.

// QueryCaps returns ErrNoVerbs.
func (c *Context) QueryCaps() (Caps, error) { return Caps{}, ErrNoVerbs }

// Probe returns ErrNoVerbs.
func (pd *PD) Probe(feature string, cq *CQ, buf *Buffer) (syscall.Errno, error) { return 0, ErrNoVerbs }

// PostAtomic returns ErrNoVerbs.
func (qp *QP) PostAtomic(id uint64, op Opcode, flags SendFlags, mr *MR, off int, remoteAddr uint64, rkey uint32, compareAdd, swap uint64) error {
	return ErrNoVerbs
}

// SRQ is a shared receive queue (unavailable in this build).
type SRQ struct{}

// NewSRQ returns ErrNoVerbs.
func (pd *PD) NewSRQ(maxWR int) (*SRQ, error) { return nil, ErrNoVerbs }

// Arm returns ErrNoVerbs.
func (s *SRQ) Arm(limit int) error { return ErrNoVerbs }

// Query returns ErrNoVerbs.
func (s *SRQ) Query() (maxWR, limit int, err error) { return 0, 0, ErrNoVerbs }

// PostRecv returns ErrNoVerbs.
func (s *SRQ) PostRecv(id uint64, mr *MR, offset, length int) error { return ErrNoVerbs }

// Close does nothing.
func (s *SRQ) Close() error { return nil }

// NewQPWithSRQ returns ErrNoVerbs.
func (pd *PD) NewQPWithSRQ(send, recv *CQ, srq *SRQ, maxSendWR int) (*QP, error) {
	return nil, ErrNoVerbs
}

// AsyncEvent returns ErrNoVerbs.
func (c *Context) AsyncEvent(timeout time.Duration) (AsyncEvent, bool, error) {
	return AsyncEvent{}, false, ErrNoVerbs
}

// MW is a memory window (unavailable in this build).
type MW struct{}

// AllocMW returns ErrNoVerbs.
func (pd *PD) AllocMW(t MWType) (*MW, error) { return nil, ErrNoVerbs }

// RKey is 0.
func (mw *MW) RKey() uint32 { return 0 }

// NextRKey is 0.
func (mw *MW) NextRKey() uint32 { return 0 }

// Bound does nothing.
func (mw *MW) Bound(rkey uint32) {}

// Close does nothing.
func (mw *MW) Close() error { return nil }

// PostBind returns ErrNoVerbs.
func (qp *QP) PostBind(id uint64, mw *MW, rkey uint32, mr *MR, addr uint64, length int, access Access) error {
	return ErrNoVerbs
}

// PostLocalInv returns ErrNoVerbs.
func (qp *QP) PostLocalInv(id uint64, rkey uint32) error { return ErrNoVerbs }

// PostSendInv returns ErrNoVerbs.
func (qp *QP) PostSendInv(id uint64, mr *MR, off, length int, invRKey uint32) error {
	return ErrNoVerbs
}

// PollInv returns ErrNoVerbs.
func (cq *CQ) PollInv() (InvCompletion, bool, error) { return InvCompletion{}, false, ErrNoVerbs }

// AttachMcast returns ErrNoVerbs.
func (qp *QP) AttachMcast(gid GID) error { return ErrNoVerbs }

// DetachMcast returns ErrNoVerbs.
func (qp *QP) DetachMcast(gid GID) error { return ErrNoVerbs }
