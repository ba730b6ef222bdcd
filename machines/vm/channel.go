package vm

import (
	"golang.org/x/time/rate"

	"github.com/rdmalab/rdmalab/machines/vmproto"
	"github.com/rdmalab/rdmalab/sandbox"
)

// A Channel is one request on a guest's agent port beside the runs: a
// learner's shell, a task check, a program (package terminal opens them
// with the operations of vmproto). Everything that comes back on it is
// bounded as every line from a guest is (bounds.go), and by the channel's
// own bounds (ChannelOpts); a guest that breaks one is discarded.
type Channel struct {
	c  *client
	id uint64
	p  *pending
}

// ChannelOpts say what a channel takes from the guest.
type ChannelOpts struct {
	// Data gets Data lines (a shell's output, a check's), Event the
	// request's events, Final its end line itself, before End delivers.
	// They are called by the connection's reader: they must not block long.
	Data  func([]byte)
	Event func(sandbox.Event)
	Final func(vmproto.GuestMsg)
	// DataMax bounds the channel's Data bytes in all (a check's output,
	// vmproto.VerifyOutputMax); 0: no total.
	DataMax int
	// Rated holds Data at the guests' terminal rate (a shell's output):
	// the guest holds a shell at a rate of its own, the host at this one,
	// whatever the guest says.
	Rated bool
}

// Open sends m as a new request (its ID set here) and returns its channel.
func (g *Guest) Open(m vmproto.HostMsg, o ChannelOpts) (*Channel, error) {
	c := g.client
	p := &pending{data: o.Data, event: o.Event, final: o.Final, end: make(chan error, 1), dataMax: o.DataMax}
	if o.Rated {
		p.rate = rate.NewLimiter(c.bounds.TermRate, c.bounds.TermBurst)
	}
	c.mu.Lock()
	if c.closed != nil {
		err := c.closed
		c.mu.Unlock()
		return nil, err
	}
	c.nextID++
	ch := &Channel{c: c, id: c.nextID, p: p}
	c.calls[ch.id] = p
	c.mu.Unlock()
	m.ID = ch.id
	if err := c.send(m); err != nil {
		c.forget(ch.id)
		return nil, err
	}
	return ch, nil
}

// ID is the request's id on the port.
func (ch *Channel) ID() uint64 { return ch.id }

// Send sends m about the channel's request (m.Target is set to it): a
// shell's keystrokes or size (vmproto.OpTermIn), which are not answered.
func (ch *Channel) Send(m vmproto.HostMsg) error {
	m.Target = ch.id
	return ch.c.send(m)
}

// End delivers, once, how the request ended: nil, the guest's end as an
// error (*sandbox.AgentFailure for a failed one), or why the connection
// ended.
func (ch *Channel) End() <-chan error { return ch.p.end }

// Cancel asks the guest to end the request (vmproto.OpCancel); the answer
// is not awaited.
func (ch *Channel) Cancel() { ch.c.cancelInGuest(ch.id) }

// Forget stops listening: later lines of the request are dropped, and End
// never delivers.
func (ch *Channel) Forget() { ch.c.forget(ch.id) }
