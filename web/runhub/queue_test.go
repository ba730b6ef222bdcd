package runhub

import (
	"testing"

	rdmalab "github.com/rdmalab/rdmalab"
)

// A learner queued behind another learner's running run is told that one
// run is ahead (the running one counts) and the runner's estimate of the
// wait; without an estimate (nothing has finished yet, here or before a
// restart) only the places are told, never a guess of the hub's own.
func TestQueuedRunCountsTheRunningOne(t *testing.T) {
	q := newQueueWatch()
	q.note("a", rdmalab.Event{Type: rdmalab.EvStatus, Status: rdmalab.StatusRunning})
	q.note("a", rdmalab.Event{Type: rdmalab.EvStatus, Status: rdmalab.StatusDone})
	q.note("b", rdmalab.Event{Type: rdmalab.EvStatus, Status: rdmalab.StatusRunning})
	ev := q.note("c", rdmalab.Event{Type: rdmalab.EvStatus, Status: rdmalab.StatusQueued, Position: 1, Wait: 19})
	if en := ev.Messages["en"]; en != "1 ahead of you, running now; estimated wait about 20 s" {
		t.Errorf("en %q", en)
	}
	if zh := ev.Messages["zh"]; zh != "你前面还有 1 个，正在运行；预计约等 20 秒" {
		t.Errorf("zh %q", zh)
	}
	ev = q.note("d", rdmalab.Event{Type: rdmalab.EvStatus, Status: rdmalab.StatusQueued, Position: 3, Wait: 240})
	if en, zh := ev.Messages["en"], ev.Messages["zh"]; en != "3 ahead of you (1 running, 2 waiting); estimated wait about 4 min" ||
		zh != "你前面还有 3 个（1 个正在运行，2 个在等）；预计约等 4 分钟" {
		t.Errorf("third in line: %q / %q", en, zh)
	}
	ev = q.note("e", rdmalab.Event{Type: rdmalab.EvStatus, Status: rdmalab.StatusQueued, Position: 2})
	if en := ev.Messages["en"]; en != "2 ahead of you (1 running, 1 waiting)" {
		t.Errorf("no estimate from the runner: %q", en)
	}
}
