package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/terminals/terminal"
	"github.com/rdmalab/rdmalab/web"
)

// TestWebTerminalsAdapter (quick tier): what cmd/labserver hands web
// (Terminals, Programs, TermInfo in serve.go) says what this machine has,
// with no guest booted: terminals only on workers refuse programs with a
// reason in both languages and a full placement; local terminals that
// keep machines say for how long and how much disk the kept ones take.
func TestWebTerminalsAdapter(t *testing.T) {
	sizing := web.TermSizing{Auto: true, AvailableMiB: 4096, CPUs: 2, ByMemory: 9, ByCPU: 50}
	none := newWebTerminals(nil, nil, sizing)
	var (
		host rdmalab.TermHost      = none.Placement
		prog rdmalab.ProgramRunner = none
		info web.TerminalInfo      = none
	)
	if info.Sizing() != sizing || info.KeepsFor() != 0 || info.Spares() != (web.TermSpares{}) {
		t.Errorf("no local terminals: sizing %+v, keeps %v, spares %+v", info.Sizing(), info.KeepsFor(), info.Spares())
	}
	if _, kept := info.Kept(); kept {
		t.Error("no local terminals, yet machines are kept")
	}
	_, err := prog.RunProgram(context.Background(), "ann", rdmalab.Program{}, "zh", func(sandbox.Event) {})
	var why *sandbox.Reason
	if !errors.As(err, &why) || why.Kind != "no-local-guests" || why.Text.Get("zh") == why.Text.Get("en") {
		t.Errorf("a program with no local guests: %v, want the no-local-guests reason in zh and en", err)
	}
	if _, err := host.Attach(context.Background(), "ann", 24, 80, nil); !errors.Is(err, rdmalab.ErrTerminalsFull) {
		t.Errorf("attach with no machine anywhere: %v, want ErrTerminalsFull", err)
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ann.zst"), make([]byte, 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	local := &terminal.Terminals{Max: 2, Keep: &terminal.Keep{Dir: dir, Expire: 48 * time.Hour, TotalMax: 1 << 30}}
	kept := newWebTerminals(local, nil, web.TermSizing{})
	if d := kept.KeepsFor(); d != 48*time.Hour {
		t.Errorf("KeepsFor %v, want 48h", d)
	}
	if d := kept.ReclaimsAfter(); d != terminal.DefaultIdle {
		t.Errorf("ReclaimsAfter %v, want the default %v", d, terminal.DefaultIdle)
	}
	if d := newWebTerminals(&terminal.Terminals{Max: 1, Idle: 25 * time.Minute}, nil, web.TermSizing{}).ReclaimsAfter(); d != 25*time.Minute {
		t.Errorf("ReclaimsAfter %v, want 25m as --terminal-idle set it", d)
	}
	if d := none.ReclaimsAfter(); d != 0 {
		t.Errorf("no local terminals: ReclaimsAfter %v, want 0", d)
	}
	k, ok := kept.Kept()
	if !ok || k.Machines != 1 || k.Bytes != 1000 || k.TotalBytes != 1<<30 {
		t.Errorf("Kept %+v %v, want one machine of 1000 bytes of a 1 GiB budget", k, ok)
	}
	if n, max := kept.InUse(); n != 0 || max != 2 {
		t.Errorf("InUse %d of %d, want 0 of 2", n, max)
	}
}
