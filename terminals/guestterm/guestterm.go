// Package guestterm is the guest's side of a learner's terminal and tasks,
// inside the learner's own guest: shells on PTYs as the ordinary user
// learner (terminal.go), the learner cgroup and its limits
// (termlimits.go), a lesson task's verify script (verify.go) and a
// learner's program compiled and checked there (program.go). Service
// serves them on the agent's port as operations of the guest's server
// (vmguest.Ops); the host's side is package terminal. It never runs on
// the host.
package guestterm

import (
	"context"
	"sync"

	"github.com/rdmalab/rdmalab/machines/vmguest"
	"github.com/rdmalab/rdmalab/machines/vmproto"
)

// Service serves a learner's guest's operations (vmproto.OpTerm,
// OpTermIn, OpVerify, OpProgram) for one agent server; the zero value is
// ready.
type Service struct {
	mu    sync.Mutex
	terms map[uint64]*guestTerm // learners' shells by request id (terminal.go)
	// verifying: a task's verify script runs (verify.go)
	verifying bool
	// progID, progCancel: the learner program running (program.go)
	progID     uint64
	progCancel context.CancelFunc
}

var _ vmguest.Ops = (*Service)(nil)

// Handle implements vmguest.Ops.
func (s *Service) Handle(ctx context.Context, m vmproto.HostMsg, ch vmguest.Channel) bool {
	switch m.Op {
	case vmproto.OpTerm:
		s.startTerm(ctx, m, ch)
	case vmproto.OpTermIn:
		s.termIn(m)
	case vmproto.OpVerify:
		s.verify(ctx, m, ch)
	case vmproto.OpProgram:
		s.program(ctx, m, ch)
	default:
		return false
	}
	return true
}

// Cancel implements vmguest.Ops: it closes shell target, or stops
// program target.
func (s *Service) Cancel(target uint64) {
	s.closeTerm(target)
	s.cancelProgram(target)
}
