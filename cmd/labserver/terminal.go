package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"strconv"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/fleet"
	"github.com/rdmalab/rdmalab/sandbox/terminal"
	"github.com/rdmalab/rdmalab/sandbox/vm"
	"github.com/rdmalab/rdmalab/sandbox/vmproto"
	"github.com/rdmalab/rdmalab/web"
)

// Learner terminals (`serve --terminals N`): each learner who opens a
// ::terminal gets a guest of their own, restored from the same snapshot as
// the experiment pool's guests (the same guest configuration), never a
// shell on this host. Only when the RDMA backend is the guest pool.

// TerminalsAuto is Config.Terminals for `--terminals auto` (the default):
// as many as the machine's free memory and CPUs hold (terminal.AutoTerminals).
const TerminalsAuto = -1

func terminalFlags(fset *flag.FlagSet, n *int, env func(key, def string) string) {
	*n = TerminalsAuto
	if v, err := parseTerminals(env("LAB_TERMINALS", "")); err == nil {
		*n = v
	}
	fset.Func("terminals", "learner terminals at once, each in a Soft-RoCE guest of its own: auto (from free memory and CPUs, logged and shown on /lab), a number, or 0 (off); needs the vm backend [LAB_TERMINALS] (default auto)",
		func(v string) error {
			t, err := parseTerminals(v)
			if err == nil {
				*n = t
			}
			return err
		})
}

// parseTerminals reads "auto" or a count (0 or more).
func parseTerminals(v string) (int, error) {
	if v == "auto" {
		return TerminalsAuto, nil
	}
	t, err := strconv.Atoi(v)
	if err != nil || t < 0 {
		return 0, errors.New(`want "auto" or a number of terminals (0: off)`)
	}
	return t, nil
}

// learnerTerminals returns the terminals for rdma, nil when there are none,
// and how their number was chosen when it was (--terminals auto). They
// live beside a guest pool (sandbox.GuestPool), sized from it.
func learnerTerminals(n int, c sandboxConfig, rdma sandbox.Backend, log *slog.Logger) (*terminal.Terminals, web.TermSizing) {
	if n == 0 {
		return nil, web.TermSizing{}
	}
	pool, ok := rdma.(sandbox.GuestPool)
	if !ok || pool.Guests() == 0 {
		log.Info("learner terminals off here: they need the vm backend (a guest per learner)")
		return nil, web.TermSizing{}
	}
	var sizing web.TermSizing
	if n == TerminalsAuto {
		sz := terminal.AutoTerminals(pool.Guests())
		n = sz.Max
		sizing = web.TermSizing{Auto: true, AvailableMiB: sz.AvailableMiB, CPUs: sz.CPUs, PoolGuests: sz.PoolGuests,
			ByMemory: sz.ByMemory, ByCPU: sz.ByCPU}
		log.Info("learner terminals sized to this machine (--terminals auto)", "max", n, "sizing", sz.String())
	} else {
		log.Info("learner terminals", "max", n)
	}
	cfg := vm.Config{Accel: c.VMAccel, MemoryMiB: c.VMMemory, Logger: log, NoSnapshot: !c.VMSnapshot}
	return &terminal.Terminals{Cfg: cfg, Max: n, Room: terminal.AutoRoom(pool.Guests())}, sizing
}

// vmTermHost adapts *terminal.Terminals to fleet.TermHost: the lab server's own
// terminals in its Placement, and a worker's that it hosts for the lab.
type vmTermHost struct{ t *terminal.Terminals }

func (h vmTermHost) Attach(ctx context.Context, key string, rows, cols uint16, wait func(fleet.TermQueue)) (fleet.TermConn, error) {
	var told func(terminal.Queue)
	if wait != nil {
		told = func(q terminal.Queue) { wait(fleet.TermQueue(q)) }
	}
	a, err := h.t.AttachWait(ctx, key, rows, cols, told)
	if err != nil {
		if fe, ok := errors.AsType[*terminal.FullError](err); ok {
			return nil, &fleet.TermsFullError{Max: fe.Max, Waiting: fe.Waiting}
		}
		return nil, err
	}
	return a, nil
}

func (h vmTermHost) InUse() (int, int)                           { return h.t.InUse() }
func (h vmTermHost) Waiting() int                                { return h.t.Waiting() }
func (h vmTermHost) Holds(key string) bool                       { return h.t.Holds(key) }
func (h vmTermHost) Reset(ctx context.Context, key string) error { return h.t.Reset(ctx, key) }

func (h vmTermHost) Verify(ctx context.Context, key string, script []byte, lang string) (fleet.TermVerdict, error) {
	res, err := h.t.Verify(ctx, key, script, lang)
	if errors.Is(err, terminal.ErrNoTerminal) {
		return fleet.TermVerdict{}, fleet.ErrNoTerminal
	}
	if err != nil {
		return fleet.TermVerdict{}, err
	}
	return fleet.TermVerdict{Passed: res.Passed, Output: res.Output, Detail: res.Detail}, nil
}

// webTerminals adapts the lab's terminals — this machine's and the
// workers', placed by fleet.Placement — to web.Terminals.
type webTerminals struct {
	place  *fleet.Placement
	local  *terminal.Terminals // nil: terminals only on workers
	sizing web.TermSizing      // how --terminals auto chose the local cap
}

// newWebTerminals places terminals on local (nil: none here) and fl's
// workers (nil: none).
func newWebTerminals(local *terminal.Terminals, fl *fleet.Server, sizing web.TermSizing) webTerminals {
	p := &fleet.Placement{}
	if local != nil {
		p.Local = vmTermHost{local}
	}
	if fl != nil {
		p.Fleet = fl
	}
	return webTerminals{place: p, local: local, sizing: sizing}
}

// Sizing is how the cap was chosen (web.TerminalSizing).
func (w webTerminals) Sizing() web.TermSizing { return w.sizing }

func (w webTerminals) Attach(ctx context.Context, learner string, rows, cols uint16, wait func(web.TermQueue)) (web.TermAttachment, error) {
	var told func(fleet.TermQueue)
	if wait != nil {
		told = func(q fleet.TermQueue) { wait(web.TermQueue(q)) }
	}
	a, err := w.place.Attach(ctx, learner, rows, cols, told)
	if err != nil {
		if fe, ok := errors.AsType[*fleet.TermsFullError](err); ok {
			return nil, &web.TerminalsFullError{Max: fe.Max, Waiting: fe.Waiting}
		}
		return nil, err
	}
	return a, nil // a worker's (*fleet.RemoteTerm) says when it was lost (web.TermLoser)
}

func (w webTerminals) InUse() (int, int) { return w.place.InUse() }

func (w webTerminals) Waiting() int { return w.place.Waiting() }

func (w webTerminals) Holds(learner string) bool { return w.place.Holds(learner) }

func (w webTerminals) Reset(ctx context.Context, learner string) error {
	return w.place.Reset(ctx, learner)
}

// KeepsFor is how long a reclaimed machine waits (0: not kept). Machines
// on workers are not kept (docs/operations.md).
func (w webTerminals) KeepsFor() time.Duration {
	if w.local == nil || w.local.Keep == nil {
		return 0
	}
	return w.local.Keep.Expire
}

// VerifyTask runs a lesson task's verify script in learner's own guest,
// where it lives (here or on a worker).
func (w webTerminals) VerifyTask(ctx context.Context, learner string, script []byte, lang string) (web.TaskVerdict, error) {
	res, err := w.place.Verify(ctx, learner, script, lang)
	if errors.Is(err, fleet.ErrNoTerminal) {
		return web.TaskVerdict{}, web.ErrNoTerminal
	}
	if err != nil {
		return web.TaskVerdict{}, err
	}
	return web.TaskVerdict{Passed: res.Passed, Output: string(res.Output), Detail: res.Detail}, nil
}

// RunProgram runs a lesson's :::program in learner's own guest. A learner
// who has no guest yet gets one as the terminal would (the same queue and
// limits): their shell starts and stays, detached, for the terminal widget.
//
// Programs run in a guest on this machine, also for a learner whose
// terminal lives on a worker (a guest of their own here then).
func (w webTerminals) RunProgram(ctx context.Context, learner string, prog vmproto.Program, lang string, emit func(sandbox.Event)) (vmproto.ProgramEnd, error) {
	if w.local == nil {
		return vmproto.ProgramEnd{}, sandbox.Because("no-local-guests", "programs need the vm backend on the lab server; terminals here are on workers only",
			"程序要在实验服务器自己的虚拟机里运行，而这里的终端都在其他机器（worker）上")
	}
	end, err := w.local.RunProgram(ctx, learner, prog, lang, emit)
	if !errors.Is(err, terminal.ErrNoTerminal) {
		return end, err
	}
	a, err := w.local.Attach(ctx, learner, 24, 80)
	if err != nil {
		return end, err
	}
	a.Detach()
	return w.local.RunProgram(ctx, learner, prog, lang, emit)
}
