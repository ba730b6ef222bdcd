// Package vmguest is what runs inside the lab guest: PID 1 (GuestInit,
// supervising the agent), the agent's set-up of Soft-RoCE (PrepareGuest)
// and its server on the virtio-serial port (GuestServer), which runs each
// request in a fresh `labagent` child and hands the operations it does not
// serve itself (a learner's shells, task checks, programs: package
// guestterm) to its Ops over a Channel per request. The guest's /init is
// in initscript. It never runs on the host.
package vmguest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/internal/lineio"
	"github.com/rdmalab/rdmalab/internal/textclip"
	"github.com/rdmalab/rdmalab/machines/vmproto"
	"github.com/rdmalab/rdmalab/sandbox"
)

// GuestServer is the guest's side of the protocol (see proto.go): it runs
// inside the guest as `labagent --serve PORT`.
type GuestServer struct {
	// Run performs one run; in the guest, agentproc.Agent.Exec with a spare:
	// a fresh `labagent` child per run, in its own process group. The
	// session's request is the run envelope's bytes as they came.
	Run func(ctx context.Context, s *sandbox.Session) error
	// Lab describes the guest's devices now.
	Lab func(ctx context.Context) sandbox.Lab
	// Hello is sent first.
	Hello vmproto.Hello
	// WaitOnEOF: a virtio-serial port reads EOF while the host side is not
	// connected; wait this long and read again instead of stopping. Zero
	// ends Serve at EOF.
	WaitOnEOF time.Duration
	// Ops serves the operations beyond the agent's own (nil: none; they
	// are then unknown ops): a learner's guest's shells, checks and
	// programs (package guestterm).
	Ops Ops
}

// Ops serves operations of the port beyond the agent's own (run, lab,
// ping, cancel, command). Handle is called by the port's reader, in the
// order the host sent its lines: it must not block; long work goes to
// Channel.Go.
type Ops interface {
	// Handle serves m on ch, the request's way back; false when m.Op is
	// not one of its operations.
	Handle(ctx context.Context, m vmproto.HostMsg, ch Channel) bool
	// Cancel ends what request target started, if it is one of its own
	// (a shell to close, a program to stop).
	Cancel(target uint64)
}

// Channel is one request's way back to the host: every line sent on it
// carries the request's id, and its End line is the request's last.
type Channel struct {
	c  *guestConn
	id uint64
}

// ID is the request's id.
func (ch Channel) ID() uint64 { return ch.id }

// Send writes m as a line of the request (m.ID is set to the request's).
func (ch Channel) Send(m vmproto.GuestMsg) error {
	m.ID = ch.id
	return ch.c.send(m)
}

// Data sends output bytes (a shell's, a check's).
func (ch Channel) Data(b []byte) error { return ch.Send(vmproto.GuestMsg{Data: b}) }

// Event sends one event of the request.
func (ch Channel) Event(ev sandbox.Event) error { return ch.Send(vmproto.GuestMsg{Event: &ev}) }

// End sends the request's last line.
func (ch Channel) End(e sandbox.End) error { return ch.Send(vmproto.GuestMsg{End: &e}) }

// Go runs f beside the port's reader; Serve waits for it before it
// returns.
func (ch Channel) Go(f func()) {
	ch.c.wg.Add(1)
	go func() {
		defer ch.c.wg.Done()
		f()
	}()
}

// guestConn is one serving session: the writer and the run in flight.
type guestConn struct {
	s   *GuestServer
	wmu sync.Mutex
	w   io.Writer
	err error

	mu      sync.Mutex
	running uint64 // id of the run in flight, 0 = none
	cancel  context.CancelFunc
	cmds    chan sandbox.Command // the interactive run's commands; nil when it takes none
	wg      sync.WaitGroup
}

// Serve answers requests from port until ctx ends, port fails or (with
// WaitOnEOF zero) the host closes it. Runs in flight are cancelled and
// waited for before Serve returns.
func (s *GuestServer) Serve(ctx context.Context, port io.ReadWriter) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &guestConn{s: s, w: port}
	defer c.wg.Wait()
	hello := s.Hello
	if err := c.send(vmproto.GuestMsg{Hello: &hello}); err != nil {
		return err
	}
	br := bufio.NewReaderSize(port, 64<<10)
	for {
		line, err := lineio.Read(br, sandbox.DefaultMaxLine)
		if errors.Is(err, io.EOF) && s.WaitOnEOF > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(s.WaitOnEOF):
				continue
			}
		}
		if errors.Is(err, lineio.ErrLongLine) {
			_ = c.send(vmproto.GuestMsg{End: &sandbox.End{Kind: vmproto.EndBadOp, Error: err.Error()}})
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		var m vmproto.HostMsg
		if err := json.Unmarshal(line, &m); err != nil {
			// Nothing to answer to without an id; say so on the stream.
			_ = c.send(vmproto.GuestMsg{End: &sandbox.End{Kind: vmproto.EndBadOp, Error: fmt.Sprintf("not a request: %q", textclip.BytesOf(line, 80))}})
			continue
		}
		c.dispatch(ctx, m)
		if c.writeErr() != nil {
			return c.writeErr()
		}
	}
}

func (c *guestConn) dispatch(ctx context.Context, m vmproto.HostMsg) {
	switch m.Op {
	case vmproto.OpPing:
		_ = c.send(vmproto.GuestMsg{ID: m.ID, End: &sandbox.End{}})
	case vmproto.OpLab:
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			lab := c.s.Lab(ctx)
			_ = c.send(vmproto.GuestMsg{ID: m.ID, Lab: &lab})
			_ = c.send(vmproto.GuestMsg{ID: m.ID, End: &sandbox.End{}})
		}()
	case vmproto.OpCancel:
		c.mu.Lock()
		if c.running == m.Target && c.cancel != nil {
			c.cancel()
		}
		c.mu.Unlock()
		if c.s.Ops != nil {
			c.s.Ops.Cancel(m.Target)
		}
		_ = c.send(vmproto.GuestMsg{ID: m.ID, End: &sandbox.End{}})
	case vmproto.OpCommand:
		c.mu.Lock()
		if c.running == m.Target && c.cmds != nil {
			if m.Cmd == nil {
				close(c.cmds)
				c.cmds = nil
			} else {
				select {
				case c.cmds <- *m.Cmd:
				default: // the host's runner bounds the queue; more is a broken host
				}
			}
		}
		c.mu.Unlock()
		_ = c.send(vmproto.GuestMsg{ID: m.ID, End: &sandbox.End{}})
	case vmproto.OpRun:
		if len(m.Req) == 0 {
			_ = c.send(vmproto.GuestMsg{ID: m.ID, End: &sandbox.End{Kind: vmproto.EndBadOp, Error: "run without a request"}})
			return
		}
		c.mu.Lock()
		if c.running != 0 {
			busy := c.running
			c.mu.Unlock()
			_ = c.send(vmproto.GuestMsg{ID: m.ID, End: &sandbox.End{Kind: vmproto.EndBusy, Error: fmt.Sprintf("the guest is busy with request %d", busy)}})
			return
		}
		rctx, cancel := context.WithCancel(ctx)
		c.running, c.cancel, c.cmds = m.ID, cancel, nil
		// The request's bytes go to the agent child as they came: only
		// the agent decodes (and validates) them.
		s := &sandbox.Session{Request: m.Req, Emit: func(ev sandbox.Event) {
			_ = c.send(vmproto.GuestMsg{ID: m.ID, Event: &ev})
		}}
		if m.Commands {
			c.cmds = make(chan sandbox.Command, 16)
			s.Commands = c.cmds
		}
		c.mu.Unlock()
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			defer cancel()
			err := c.s.Run(rctx, s)
			end := sandbox.EndOf(err, rctx.Err() != nil)
			c.mu.Lock()
			c.running, c.cancel, c.cmds = 0, nil, nil
			c.mu.Unlock()
			_ = c.send(vmproto.GuestMsg{ID: m.ID, End: &end})
		}()
	default:
		if c.s.Ops != nil && c.s.Ops.Handle(ctx, m, Channel{c: c, id: m.ID}) {
			return
		}
		_ = c.send(vmproto.GuestMsg{ID: m.ID, End: &sandbox.End{Kind: vmproto.EndBadOp, Error: fmt.Sprintf("unknown op %q", m.Op)}})
	}
}

// send writes one message as one line; the first write error sticks.
func (c *guestConn) send(m vmproto.GuestMsg) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %+v: %w", m, err)
	}
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.err != nil {
		return c.err
	}
	if _, err := c.w.Write(b); err != nil {
		c.err = fmt.Errorf("write to host: %w", err)
	}
	return c.err
}

func (c *guestConn) writeErr() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.err
}
