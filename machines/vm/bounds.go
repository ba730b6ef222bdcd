package vm

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/sandbox"
)

// What a guest may send the host. Every guest is untrusted: a learner's
// is theirs to break (and whatever answers on its agent port may not be
// our agent), and the experiment guests run code that handles learner
// input. So every byte that comes back over the agent port is bounded here,
// on the host, whatever the guest's own limits say: the length of a line,
// the size of one terminal output or check output message, a channel's
// whole output (ChannelOpts.DataMax: a check's), a shell's output rate
// (ChannelOpts.Rated), a run's events, the port's byte rate, and how many
// malformed lines it may send.
// A guest that breaks a bound has its channel closed (every call in flight
// fails with a *sandbox.ProtocolError) and is discarded: its backend's
// supervisor stops it and starts a fresh one. Malformed input is logged at
// most once per logEvery, with a count of what was held back.
type guestBounds struct {
	MaxLine     int        // one line (sandbox.DefaultMaxLine); longer lines are malformed
	MaxData     int        // one Data message, decoded (the guest sends 4 KiB)
	TermRate    rate.Limit // a terminal's output, decoded bytes per second
	TermBurst   int        // … and how far ahead of that rate it may get
	RunEvents   int        // events of one run
	RunBytes    int        // bytes of one run's event lines
	PortRate    rate.Limit // every line together, bytes per second
	PortBurst   int        // … and how far ahead of that rate
	BadLines    int        // malformed lines tolerated at once (each fails the run in flight)
	BadLineRate rate.Limit // … and the rate at which that allowance comes back
	LogEvery    time.Duration
}

// defaultBounds are the bounds of every guest. The guest holds a terminal
// at 256 KiB/s (guestterm termRate) in 4 KiB chunks; the largest legitimate
// line is a capture event near sandbox.DefaultMaxLine; the busiest run
// (a perftest sweep) emits a few thousand events.
var defaultBounds = guestBounds{
	MaxLine:     sandbox.DefaultMaxLine,
	MaxData:     16 << 10,
	TermRate:    512 << 10,
	TermBurst:   1 << 20,
	RunEvents:   rdmalab.RunEventsMax,
	RunBytes:    rdmalab.RunBytesMax,
	PortRate:    8 << 20,
	PortBurst:   32 << 20,
	BadLines:    8,
	BadLineRate: rate.Every(10 * time.Second),
	LogEvery:    10 * time.Second,
}

// breachError is why a guest's channel was closed: it broke a bound.
func breachError(what string) error {
	return &sandbox.ProtocolError{Reason: "the guest broke a bound and was discarded: " + what}
}

// limitedLog logs a kind of event at most once per every; the next line
// logged says how many were held back in between, and flush says it for
// the last interval.
type limitedLog struct {
	log   *slog.Logger
	every time.Duration

	mu   sync.Mutex
	last time.Time
	held int
}

func (l *limitedLog) warn(msg string, args ...any) {
	l.mu.Lock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.held++
		l.mu.Unlock()
		return
	}
	held := l.held
	l.last, l.held = now, 0
	l.mu.Unlock()
	if held > 0 {
		args = append(args, "held_back", held)
	}
	l.log.Warn(msg, args...)
}

// flush logs the count held back since the last line, if any.
func (l *limitedLog) flush(msg string) {
	l.mu.Lock()
	held := l.held
	l.held = 0
	l.mu.Unlock()
	if held > 0 {
		l.log.Warn(msg, "held_back", held)
	}
}

// checkData bounds one Data message of call p: its size, a check's whole
// output, a terminal's rate. It returns the broken bound, or "".
func (b *guestBounds) checkData(p *pending, n int) string {
	if n > b.MaxData {
		return fmt.Sprintf("a %d-byte output message (at most %d)", n, b.MaxData)
	}
	p.dataBytes += n
	if p.dataMax > 0 && p.dataBytes > p.dataMax {
		return fmt.Sprintf("%d bytes of check output (at most %d)", p.dataBytes, p.dataMax)
	}
	if p.rate != nil && !p.rate.AllowN(time.Now(), n) {
		return fmt.Sprintf("terminal output faster than %d bytes/s", int(b.TermRate))
	}
	return ""
}

// checkEvent bounds the events of run p (line bytes).
func (b *guestBounds) checkEvent(p *pending, n int) string {
	p.events++
	p.eventBytes += n
	if p.events > b.RunEvents {
		return fmt.Sprintf("more than %d events in one run", b.RunEvents)
	}
	if p.eventBytes > b.RunBytes {
		return fmt.Sprintf("more than %d bytes of events in one run", b.RunBytes)
	}
	return ""
}
