package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"strconv"
	"time"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/runs/fleet"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/terminals/placement"
	"github.com/rdmalab/rdmalab/terminals/terminal"
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
		sz := terminal.AutoTerminals(pool.Guests(), c.VMSharedRAM)
		n = sz.Max
		sizing = web.TermSizing{Auto: true, AvailableMiB: sz.AvailableMiB, CPUs: sz.CPUs, PoolGuests: sz.PoolGuests,
			ByMemory: sz.ByMemory, ByCPU: sz.ByCPU, PerGuestMiB: sz.PerGuestMiB, SharedMiB: sz.SharedMiB}
		log.Info("learner terminals sized to this machine (--terminals auto)", "max", n, "sizing", sz.String())
	} else {
		log.Info("learner terminals", "max", n)
	}
	cfg := vm.Config{Accel: c.VMAccel, MemoryMiB: c.VMMemory, Logger: log, NoSnapshot: !c.VMSnapshot, PrivateRAM: !c.VMSharedRAM}
	return &terminal.Terminals{Cfg: cfg, Max: n, Room: terminal.AutoRoom(pool.Guests(), c.VMSharedRAM)}, sizing
}

// webTerminals are the lab's terminals — this machine's and the
// workers', placed by placement.Placement, all speaking the domain's types —
// with what only the lab server knows (web.TerminalInfo) and programs
// run in learners' guests here (rdmalab.ProgramRunner).
type webTerminals struct {
	*placement.Placement
	local  *terminal.Terminals // nil: terminals only on workers
	sizing web.TermSizing      // how --terminals auto chose the local cap
}

// newWebTerminals places terminals on local (nil: none here) and fl's
// workers (nil: none).
func newWebTerminals(local *terminal.Terminals, fl *fleet.Server, sizing web.TermSizing) webTerminals {
	p := &placement.Placement{}
	if local != nil {
		p.Local = local.Host()
	}
	if fl != nil {
		p.Fleet = fl
	}
	return webTerminals{Placement: p, local: local, sizing: sizing}
}

// The compiler checks the seams web is wired with (serve.go): renaming a
// method here fails the build instead of turning a feature off.
var (
	_ rdmalab.TermHost      = (*placement.Placement)(nil)
	_ placement.Workers     = (*fleet.Server)(nil)
	_ rdmalab.TermHost      = webTerminals{}
	_ rdmalab.ProgramRunner = webTerminals{}
	_ web.TerminalInfo      = webTerminals{}
)

// Sizing is how the cap was chosen (web.TerminalInfo).
func (w webTerminals) Sizing() web.TermSizing { return w.sizing }

// KeepsFor is how long a reclaimed machine here waits (0: not kept). A
// worker keeps its learners' machines by its own flags (docs/operations.md).
func (w webTerminals) KeepsFor() time.Duration {
	if w.local == nil || w.local.Keep == nil {
		return 0
	}
	return w.local.Keep.Expire
}

// ReclaimsAfter is how long a local learner machine may go without a
// keystroke before it is reclaimed (web.TerminalInfo; 0 with none here).
func (w webTerminals) ReclaimsAfter() time.Duration {
	if w.local == nil {
		return 0
	}
	if w.local.Idle > 0 {
		return w.local.Idle
	}
	return terminal.DefaultIdle
}

// RunProgram runs a lesson's :::program in learner's own guest. A learner
// who has no guest yet gets one as the terminal would (the same queue and
// limits): their shell starts and stays, detached, for the terminal widget.
//
// Programs run in a guest on this machine, also for a learner whose
// terminal lives on a worker (a guest of their own here then).
func (w webTerminals) RunProgram(ctx context.Context, learner string, prog rdmalab.Program, lang string, emit func(sandbox.Event)) (rdmalab.ProgramEnd, error) {
	if w.local == nil {
		return rdmalab.ProgramEnd{}, sandbox.Because("no-local-guests", "programs need the vm backend on the lab server; terminals here are on workers only",
			"程序要在实验服务器自己的虚拟机里运行，而这里的终端都在其他机器（worker）上")
	}
	end, err := w.local.RunProgram(ctx, learner, prog, lang, emit)
	if !errors.Is(err, rdmalab.ErrNoTerminal) {
		return end, err
	}
	a, err := w.local.Attach(ctx, learner, 24, 80)
	if err != nil {
		return end, err
	}
	a.Detach()
	return w.local.RunProgram(ctx, learner, prog, lang, emit)
}
