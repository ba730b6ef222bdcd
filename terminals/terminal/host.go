package terminal

import (
	"context"

	"github.com/rdmalab/rdmalab"
)

// Host is t as the domain's rdmalab.TermHost: what fleet places
// terminals on (the lab server's own and each worker's).
func (t *Terminals) Host() rdmalab.TermHost { return host{t} }

// host is Terminals by the domain's interface: Attach with its queue's
// news, the attachment as a TermConn.
type host struct{ t *Terminals }

func (h host) Attach(ctx context.Context, learner string, rows, cols uint16, wait func(rdmalab.TermQueue)) (rdmalab.TermConn, error) {
	a, err := h.t.AttachWait(ctx, learner, rows, cols, wait)
	if err != nil {
		return nil, err
	}
	return a, nil
}

func (h host) InUse() (int, int)                               { return h.t.InUse() }
func (h host) Waiting() int                                    { return h.t.Waiting() }
func (h host) Holds(learner string) bool                       { return h.t.Holds(learner) }
func (h host) Reset(ctx context.Context, learner string) error { return h.t.Reset(ctx, learner) }

func (h host) Verify(ctx context.Context, learner string, script []byte, lang string) (rdmalab.TaskVerdict, error) {
	return h.t.Verify(ctx, learner, script, lang)
}
