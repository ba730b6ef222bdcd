package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// TestWorkerTerminalIdle: a worker's learner machines are reclaimed and
// paused as its --terminal-idle and --idle-pause say (they once always
// took the defaults, while the learner's page said the lab's
// --terminal-idle), and a reclaim time under a minute is refused with
// the reason, as serve refuses it.
func TestWorkerTerminalIdle(t *testing.T) {
	var stderr bytes.Buffer
	if rc := runWorker(context.Background(), []string{"--terminal-idle", "10s"}, &stderr, &stderr); rc != 2 {
		t.Errorf("--terminal-idle 10s: exit %d, want 2", rc)
	}
	if !strings.Contains(stderr.String(), "at least 1m") {
		t.Errorf("--terminal-idle 10s: %q does not say the minimum", stderr.String())
	}
	log := slog.New(slog.DiscardHandler)
	tm := workerTerminals(2, sandboxConfig{}, sandbox.NoBackend{}, 0, 30*time.Minute, log)
	if tm.Idle != 30*time.Minute || tm.IdlePause != -1 {
		t.Errorf("--terminal-idle 30m --idle-pause 0: Idle %s, IdlePause %s; want 30m and never (-1)", tm.Idle, tm.IdlePause)
	}
	tm = workerTerminals(2, sandboxConfig{}, sandbox.NoBackend{}, 45*time.Second, 12*time.Minute, log)
	if tm.Idle != 12*time.Minute || tm.IdlePause != 45*time.Second {
		t.Errorf("--terminal-idle 12m --idle-pause 45s: Idle %s, IdlePause %s", tm.Idle, tm.IdlePause)
	}
}
