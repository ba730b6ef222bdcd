package main

import (
	"context"
	"sync"

	"github.com/rdmalab/rdmalab/lti"
	"github.com/rdmalab/rdmalab/web"
)

// ltiRun is serve's LTI 1.3 tool: the protocol (package lti) over the
// store, its key beside the database (made at first use), and the
// deliverer posting queued scores to the platforms in the background.
type ltiRun struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	bg     sync.WaitGroup // web's background work (web.LTI.Background)
}

// start makes the tool and starts the deliverer; it returns what web needs.
func (r *ltiRun) start(ctx context.Context, m *Main) *web.LTI {
	tool := &lti.Tool{Registry: m.DB, KeyFile: ltiKeyFile(m.Config.DBPath)}
	d := lti.NewDeliverer(tool, m.DB, m.Log)
	r.ctx, r.cancel = context.WithCancel(ctx)
	ctx = r.ctx
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		d.Run(ctx)
	}()
	return &web.LTI{Tool: tool, Kick: d.Kick, PublicURL: m.Config.PublicURL, Background: r.background}
}

// background runs web's LTI work (the scores sent at a graded lesson's
// close) until stop.
func (r *ltiRun) background(run func(context.Context)) {
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		run(r.ctx)
	}()
}

// stop ends the deliverer and waits for it (before the database closes).
func (r *ltiRun) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	r.bg.Wait()
	r.cancel = nil
}
