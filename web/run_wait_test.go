package web

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

func TestWaitEstimate(t *testing.T) {
	s := time.Second
	cases := []struct {
		name    string
		pos     int
		running []time.Duration
		slots   int
		recent  []time.Duration
		want    time.Duration
		ok      bool
	}{
		{"nothing learnt yet", 1, []time.Duration{0}, 1, nil, 0, false},
		{"behind a fresh run", 1, []time.Duration{0}, 1, []time.Duration{20 * s}, 20 * s, true},
		{"behind a half-done run", 1, []time.Duration{10 * s}, 1, []time.Duration{10 * s, 20 * s, 30 * s}, 10 * s, true},
		{"a long run still counts a little", 1, []time.Duration{60 * s}, 1, []time.Duration{20 * s}, 2 * s, true},
		{"one queued ahead too", 2, []time.Duration{0}, 1, []time.Duration{20 * s}, 40 * s, true},
		{"two slots share the work", 2, []time.Duration{0, 0}, 2, []time.Duration{20 * s}, 30 * s, true},
		{"even count: mean of the middle two", 1, []time.Duration{0}, 1, []time.Duration{10 * s, 20 * s}, 15 * s, true},
	}
	for _, c := range cases {
		got, ok := waitEstimate(c.pos, c.running, c.slots, c.recent)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %v %v, want %v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// A learner queued behind another learner's running run is told that one
// run is ahead (the running one counts) and how long it will likely take.
func TestQueuedRunCountsTheRunningOne(t *testing.T) {
	q := newQueueWatch(1)
	now := time.Unix(1000, 0)
	q.now = func() time.Time { return now }
	q.note("a", sandbox.Event{Type: sandbox.EvStatus, Status: sandbox.StatusRunning})
	now = now.Add(19 * time.Second)
	q.note("a", sandbox.Event{Type: sandbox.EvStatus, Status: sandbox.StatusDone})
	q.note("b", sandbox.Event{Type: sandbox.EvStatus, Status: sandbox.StatusRunning})
	ev := q.note("c", sandbox.Event{Type: sandbox.EvStatus, Status: sandbox.StatusQueued, Position: 1})
	if en := ev.Messages["en"]; !strings.Contains(en, "1 ahead of you") || !strings.Contains(en, "20 s") {
		t.Errorf("en %q", en)
	}
	if zh := ev.Messages["zh"]; !strings.Contains(zh, "前面还有 1 个") || !strings.Contains(zh, "20 秒") {
		t.Errorf("zh %q", zh)
	}
	ev = q.note("d", sandbox.Event{Type: sandbox.EvStatus, Status: sandbox.StatusQueued, Position: 2})
	if en := ev.Messages["en"]; !strings.Contains(en, "2 ahead of you (1 running, 1 waiting)") || !strings.Contains(en, "40 s") {
		t.Errorf("second in line: %q", en)
	}
}
