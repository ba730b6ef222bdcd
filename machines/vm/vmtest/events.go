package vmtest

import (
	"strings"
	"sync"

	"github.com/rdmalab/rdmalab/sandbox"
)

// Events gathers the events of a run (its Emit is the run's emit
// function) for a test to read, from any goroutine.
type Events struct {
	mu  sync.Mutex
	evs []sandbox.Event
}

// Emit records ev.
func (c *Events) Emit(ev sandbox.Event) { c.mu.Lock(); c.evs = append(c.evs, ev); c.mu.Unlock() }

// Text is the run's log lines of stream name ("stdout", "peer" …),
// joined as they came.
func (c *Events) Text(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, ev := range c.evs {
		if ev.Type == sandbox.EvLog && ev.Name == name {
			b.WriteString(ev.Message)
		}
	}
	return b.String()
}
