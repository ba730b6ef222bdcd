package web

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// The runner's own estimate (Event.Wait, played forward by its rules) is
// the one told when it has one; else the hub's rough one from recent runs.
func TestQueueTextPrefersRunnerEstimate(t *testing.T) {
	q := newQueueWatch(1)
	q.seed([]time.Duration{10 * time.Second})
	ev := q.note("r1", sandbox.Event{Type: sandbox.EvStatus, Status: sandbox.StatusQueued, Position: 3, Wait: 240})
	if !strings.Contains(ev.Messages["en"], "4 min") || !strings.Contains(ev.Messages["zh"], "4 分钟") {
		t.Errorf("with the runner's 240 s: %q / %q", ev.Messages["en"], ev.Messages["zh"])
	}
	ev = q.note("r1", sandbox.Event{Type: sandbox.EvStatus, Status: sandbox.StatusQueued, Position: 3})
	if !strings.Contains(ev.Messages["en"], "20 s") {
		t.Errorf("without it (two typical 10 s runs ahead): %q", ev.Messages["en"])
	}
}
