package terminal

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/internal/textclip"
	"github.com/rdmalab/rdmalab/machines/vm"
	"github.com/rdmalab/rdmalab/machines/vmproto"
	"github.com/rdmalab/rdmalab/sandbox"

	"github.com/rdmalab/rdmalab"
)

// ErrProgramNoResult: the guest ended a program run without saying how.
var ErrProgramNoResult = errors.New("the guest ended the program run without a result")

// programBytesMax bounds what one program run may send back in its
// events, whatever the guest claims: the guest's own caps (compiler,
// program, peer output) plus room for the phase lines. Beyond it events are
// dropped and the run's end says so.
const programBytesMax = vmproto.ProgramCompileMax + vmproto.ProgramOutputMax + vmproto.ProgramPeerMax + 16<<10

// runProgramIn compiles and runs a learner's program in g
// (vmproto.OpProgram), passing its events to emit as they come (bounded
// here, on the host: a guest is the learner's and may send anything).
// The run's end is the guest's ProgramEnd; an error when the guest could
// not do it (busy, gone, cancelled with ctx).
func runProgramIn(ctx context.Context, g *vm.Guest, prog vmproto.Program, lang string, emit func(sandbox.Event), log *slog.Logger) (vmproto.ProgramEnd, error) {
	var mu sync.Mutex
	var end *vmproto.ProgramEnd
	events, bytes, dropped := 0, 0, false
	ch, err := g.Open(vmproto.HostMsg{Op: vmproto.OpProgram, Program: &prog, Lang: lang}, vm.ChannelOpts{
		Event: func(ev sandbox.Event) {
			mu.Lock()
			defer mu.Unlock()
			if end != nil {
				return
			}
			n := len(ev.Message) + len(ev.Name) + len(ev.Level)
			if events >= vmproto.ProgramEvents || bytes+n > programBytesMax || ev.Type != sandbox.EvLog && ev.Type != sandbox.EvPhase {
				if !dropped {
					dropped = true
					log.Warn("learner program: guest sent more than its bounds; the rest is dropped", "events", events, "bytes", bytes)
				}
				return
			}
			events++
			bytes += n
			ev.Time = time.Now()
			emit(ev)
		},
		Final: func(m vmproto.GuestMsg) {
			mu.Lock()
			defer mu.Unlock()
			if m.Program != nil {
				e := *m.Program
				e.Compiler = e.Compiler[:min(len(e.Compiler), vmproto.ProgramCompileMax)]
				e.Check = e.Check[:min(len(e.Check), vmproto.VerifyOutputMax)]
				e.Detail = textclip.Bytes(e.Detail, 512)
				e.Signal = textclip.Bytes(e.Signal, 64)
				end = &e
			}
		},
	})
	if err != nil {
		return vmproto.ProgramEnd{}, err
	}
	select {
	case err := <-ch.End():
		mu.Lock()
		defer mu.Unlock()
		if end == nil {
			if err == nil {
				err = ErrProgramNoResult
			}
			return vmproto.ProgramEnd{}, err
		}
		if _, failed := errors.AsType[*sandbox.AgentFailure](err); err != nil && !failed {
			return *end, err // cancelled, busy
		}
		return *end, nil
	case <-ctx.Done():
		ch.Forget()
		ch.Cancel()
		return vmproto.ProgramEnd{}, ctx.Err()
	}
}

// RunProgram runs a learner's program in their own guest, beside their
// shell (runProgramIn). Like Verify it needs the learner's session:
// rdmalab.ErrNoTerminal when they have none (the web layer opens one first).
func (t *Terminals) RunProgram(ctx context.Context, learner string, prog vmproto.Program, lang string, emit func(sandbox.Event)) (vmproto.ProgramEnd, error) {
	t.init()
	t.mu.Lock()
	s := t.sessions[learner]
	t.mu.Unlock()
	if s == nil {
		return vmproto.ProgramEnd{}, rdmalab.ErrNoTerminal
	}
	s.mu.Lock()
	s.lastUse = time.Now()
	s.mu.Unlock()
	s.hold() // a paused guest runs the program
	defer s.release()
	g, err := s.backend.WaitReady(ctx)
	if err != nil {
		return vmproto.ProgramEnd{}, err
	}
	timeout := 5 * time.Minute // peer, compiler (1 min each at most), program, check, on a loaded host
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return runProgramIn(ctx, g, prog, lang, emit, s.log)
}
