package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"strconv"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/fleet"
	"github.com/rdmalab/rdmalab/sandbox/vm"
	"github.com/rdmalab/rdmalab/web"
)

// Learner terminals (`serve --terminals N`): each learner who opens a
// ::terminal gets a guest of their own, restored from the same snapshot as
// the experiment pool's guests (the same guest configuration), never a
// shell on this host. Only when the RDMA backend is the guest pool.

func terminalFlags(fset *flag.FlagSet, n *int, env func(key, def string) string) {
	def := 2 // a TCG guest with a busy shell takes a core; 2 on a 2-core machine
	if v, err := strconv.Atoi(env("LAB_TERMINALS", "")); err == nil && v >= 0 {
		def = v
	}
	fset.IntVar(n, "terminals", def, "learner terminals at once, each in a Soft-RoCE guest of its own (0: off; needs the vm backend) [LAB_TERMINALS]")
}

// learnerTerminals returns the terminals for rdma, nil when there are none.
func learnerTerminals(n int, c sandboxConfig, rdma sandbox.Backend, log *slog.Logger) *vm.Terminals {
	if n <= 0 {
		return nil
	}
	if mix, ok := rdma.(*fleet.Mix); ok {
		rdma = mix.Local
	}
	if _, ok := rdma.(*vm.Pool); !ok {
		log.Info("learner terminals off: they need the vm backend (a guest per learner)")
		return nil
	}
	cfg := vm.Config{Accel: c.VMAccel, MemoryMiB: c.VMMemory, Logger: log, NoSnapshot: !c.VMSnapshot}
	log.Info("learner terminals", "max", n)
	return &vm.Terminals{Cfg: cfg, Max: n}
}

// webTerminals adapts *vm.Terminals to web.Terminals.
type webTerminals struct{ t *vm.Terminals }

func (w webTerminals) Attach(ctx context.Context, learner string, rows, cols uint16, wait func(web.TermQueue)) (web.TermAttachment, error) {
	var told func(vm.Queue)
	if wait != nil {
		told = func(q vm.Queue) { wait(web.TermQueue(q)) }
	}
	a, err := w.t.AttachWait(ctx, learner, rows, cols, told)
	if err != nil {
		if fe, ok := errors.AsType[*vm.FullError](err); ok {
			return nil, &web.TerminalsFullError{Max: fe.Max, Waiting: fe.Waiting}
		}
		return nil, err
	}
	return a, nil
}

func (w webTerminals) InUse() (int, int) { return w.t.InUse() }

func (w webTerminals) Waiting() int { return w.t.Waiting() }

func (w webTerminals) Holds(learner string) bool { return w.t.Holds(learner) }

// VerifyTask runs a lesson task's verify script in learner's own guest.
func (w webTerminals) VerifyTask(ctx context.Context, learner string, script []byte, lang string) (web.TaskVerdict, error) {
	res, err := w.t.Verify(ctx, learner, script, lang)
	if errors.Is(err, vm.ErrNoTerminal) {
		return web.TaskVerdict{}, web.ErrNoTerminal
	}
	if err != nil {
		return web.TaskVerdict{}, err
	}
	return web.TaskVerdict{Passed: res.Passed, Output: string(res.Output), Detail: res.Detail}, nil
}
