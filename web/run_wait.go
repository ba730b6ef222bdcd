package web

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
)

// recentRuns is how many finished runs the wait estimate learns from.
const recentRuns = 20

// waitEstimate is how long a run at queue position pos (1 = next) waits
// before it starts: the runs queued ahead of it plus the ones running now
// (each counted for what is left of a typical run), shared among slots
// runs at once. typical is the median of recent run times; ok is false
// when there is nothing to learn from yet. Kept free of state so the
// runner's scheduler can reuse it.
func waitEstimate(pos int, runningFor []time.Duration, slots int, recent []time.Duration) (wait time.Duration, ok bool) {
	if len(recent) == 0 || pos < 1 {
		return 0, false
	}
	if slots < 1 {
		slots = 1
	}
	s := slices.Clone(recent)
	slices.Sort(s)
	typical := s[len(s)/2]
	if len(s)%2 == 0 {
		typical = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	var work time.Duration
	for _, el := range runningFor {
		work += max(typical-el, typical/10) // a run past the typical time still has a little left
	}
	work += time.Duration(pos-1) * typical
	return work / time.Duration(slots), true
}

// queueWatch follows the status events the hub stores to know which runs
// are running and how long runs take, and words a queued run's wait in
// both languages: runs ahead (the running ones count) and an estimate.
type queueWatch struct {
	mu      sync.Mutex
	slots   int
	running map[string]time.Time
	recent  []time.Duration
	now     func() time.Time
}

func newQueueWatch(slots int) *queueWatch {
	return &queueWatch{slots: slots, running: map[string]time.Time{}, now: time.Now}
}

// seed adds finished run times known from before this process started.
func (q *queueWatch) seed(d []time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.recent = append(q.recent, d...)
	if n := len(q.recent); n > recentRuns {
		q.recent = q.recent[n-recentRuns:]
	}
}

// note observes ev and, for a queued status, fills its Messages.
func (q *queueWatch) note(runID string, ev sandbox.Event) sandbox.Event {
	if ev.Type != sandbox.EvStatus {
		return ev
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	switch {
	case ev.Status == sandbox.StatusRunning:
		q.running[runID] = now
	case ev.Status.Final():
		if t0, ok := q.running[runID]; ok {
			delete(q.running, runID)
			if ev.Status == sandbox.StatusDone {
				q.recent = append(q.recent, now.Sub(t0))
				if len(q.recent) > recentRuns {
					q.recent = q.recent[1:]
				}
			}
		}
	case ev.Status == sandbox.StatusQueued && ev.Position > 0:
		var el []time.Duration
		for _, t0 := range q.running {
			el = append(el, now.Sub(t0))
		}
		ev.Messages = queueText(ev.Position, len(el), el, q.slots, q.recent, time.Duration(ev.Wait*float64(time.Second)))
		ev.Message = ev.Messages["en"]
	}
	return ev
}

// queueText words the wait of a run at position pos with nRunning runs going.
// planned is the runner's own estimate (sandbox.Event.Wait: each
// experiment's recent run times played forward by its scheduling rules,
// timing runs alone); when it has one, it is the one told.
func queueText(pos, nRunning int, runningFor []time.Duration, slots int, recent []time.Duration, planned time.Duration) sandbox.Text {
	ahead := pos - 1 + nRunning
	en := fmt.Sprintf("%d ahead of you (%d running, %d waiting)", ahead, nRunning, pos-1)
	zh := fmt.Sprintf("你前面还有 %d 个（%d 个正在运行，%d 个在等）", ahead, nRunning, pos-1)
	if ahead == 1 && nRunning == 1 {
		en, zh = "1 ahead of you, running now", "你前面还有 1 个，正在运行"
	}
	if planned > 0 {
		en += "; estimated wait about " + roughDuration(planned, "en")
		zh += "；预计约等 " + roughDuration(planned, "zh")
	} else if wait, ok := waitEstimate(pos, runningFor, slots, recent); ok {
		en += "; estimated wait about " + roughDuration(wait, "en")
		zh += "；预计约等 " + roughDuration(wait, "zh")
	}
	return sandbox.Text{"en": en, "zh": zh}
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
