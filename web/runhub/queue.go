package runhub

import (
	"fmt"
	"math"
	"sync"
	"time"

	rdmalab "github.com/rdmalab/rdmalab"
)

// queueWatch follows the status events the hub stores to know how many
// runs are running, and words a queued run's place in both languages: runs
// ahead (the running ones count) and the runner's own estimate of the wait
// (the event's Wait, the one estimator: each experiment's run times —
// seeded from the store after a restart — played forward by the
// scheduling rules).
type queueWatch struct {
	mu      sync.Mutex
	running map[string]struct{}
}

func newQueueWatch() *queueWatch {
	return &queueWatch{running: map[string]struct{}{}}
}

// note observes ev and, for a queued status, fills its Messages.
func (q *queueWatch) note(runID string, ev rdmalab.Event) rdmalab.Event {
	if ev.Type != rdmalab.EvStatus {
		return ev
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case ev.Status == rdmalab.StatusRunning:
		q.running[runID] = struct{}{}
	case ev.Status.Final():
		delete(q.running, runID)
	case ev.Status == rdmalab.StatusQueued && ev.Position > 0:
		ev.Messages = queueText(ev.Position, len(q.running), time.Duration(ev.Wait*float64(time.Second)))
		ev.Message = ev.Messages["en"]
	}
	return ev
}

// queueText words the wait of a run at position pos with nRunning runs
// going; planned is the runner's estimate, told when it has one (0: no run
// of any experiment has finished yet, here or before a restart).
func queueText(pos, nRunning int, planned time.Duration) rdmalab.Text {
	ahead := pos - 1 + nRunning
	en := fmt.Sprintf("%d ahead of you (%d running, %d waiting)", ahead, nRunning, pos-1)
	zh := fmt.Sprintf("你前面还有 %d 个（%d 个正在运行，%d 个在等）", ahead, nRunning, pos-1)
	if ahead == 1 && nRunning == 1 {
		en, zh = "1 ahead of you, running now", "你前面还有 1 个，正在运行"
	}
	if planned > 0 {
		en += "; estimated wait about " + roughDuration(planned, "en")
		zh += "；预计约等 " + roughDuration(planned, "zh")
	}
	return rdmalab.Text{"en": en, "zh": zh}
}

// roughDuration is d rounded for a person: "40 s", "3 min".
func roughDuration(d time.Duration, lang string) string {
	if d < time.Minute {
		s := max(5, int(math.Ceil(d.Seconds()/5))*5)
		if lang == "zh" {
			return fmt.Sprintf("%d 秒", s)
		}
		return fmt.Sprintf("%d s", s)
	}
	m := int(math.Round(d.Minutes()))
	if lang == "zh" {
		return fmt.Sprintf("%d 分钟", m)
	}
	return fmt.Sprintf("%d min", m)
}
