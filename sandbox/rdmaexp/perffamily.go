package rdmaexp

import (
	"context"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// perfDecl is what one lesson-06 experiment (perf-*) declares of its own;
// perfExperiment adds what the family shares. The rows are in
// perfFamily, registered in that order.
type perfDecl struct {
	id             string
	title, summary sandbox.Text
	params         []sandbox.Param
	presets        []sandbox.Preset
	timeout        time.Duration
	// setup names the opening phase when it is not "Connecting two queue
	// pairs" (perfSetup's default).
	setup sandbox.Text
	run   func(ctx context.Context, p sandbox.Params, top topology, emit sandbox.Emitter) error
}

// perfFamily is lesson 06's perf-* experiments, in the lesson's order.
var perfFamily = []perfDecl{
	perfSweepDecl, perfInlineDecl, perfSignalDecl, perfPostListDecl,
	perfWaitDecl, perfMRCostDecl, perfDepthDecl, perfMTUDecl,
}

// perfExperiment is d as the registry takes it. Every perf-* experiment
// needs an RDMA device, needs the machine alone (its figures are timings)
// and opens with perfSetup: the devices picked and said, and how to read
// figures measured on Soft-RoCE.
func perfExperiment(d perfDecl) *sandbox.Experiment {
	return &sandbox.Experiment{
		ID: d.id, Title: d.title, Summary: d.summary,
		Needs:   sandbox.NeedRDMA,
		Sharing: sandbox.Timing, // figures need the machine alone
		Params:  d.params, Presets: d.presets, Timeout: d.timeout,
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			top, err := perfSetup(emit, d.setup)
			if err != nil {
				return err
			}
			return d.run(ctx, p, top, emit)
		},
	}
}

// perfSetup is the opening every perf-* experiment shares: the setup
// phase (title, or "Connecting two queue pairs"), the devices picked and
// said, and the note on emulation.
func perfSetup(emit sandbox.Emitter, title sandbox.Text) (topology, error) {
	if title == nil {
		title = say("Connecting two queue pairs", "连接两个队列对")
	}
	phase(emit, "setup", title)
	top, err := pickTopology()
	if err != nil {
		return top, err
	}
	note(emit, "info", top.describe())
	tcgNote(emit)
	return top, nil
}
