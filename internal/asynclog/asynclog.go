// Package asynclog is an io.Writer for a logger that hands each line to
// one goroutine which writes it, so that the many goroutines logging
// (every HTTP request logs a line) never queue on a slow reader of the
// output: slog's handler holds its mutex across the Write, and under make
// load 75 % of the server's mutex waiting was there, behind writes to a
// stderr pipe whose reader (journald, a test) was not scheduled. Lines
// are never dropped: a full buffer blocks the writer, as before.
package asynclog

import (
	"io"
	"sync"
)

// Writer writes lines in order on a goroutine of its own.
type Writer struct {
	w    io.Writer
	ch   chan []byte
	done chan struct{}

	mu     sync.RWMutex
	closed bool
}

// New starts a Writer to w holding at most lines lines not yet written.
func New(w io.Writer, lines int) *Writer {
	a := &Writer{w: w, ch: make(chan []byte, lines), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for b := range a.ch {
			_, _ = a.w.Write(b) // a log line that cannot be written has nowhere to go
		}
	}()
	return a
}

// Write queues a copy of p; after Close it writes p directly.
func (a *Writer) Write(p []byte) (int, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		return a.w.Write(p)
	}
	a.ch <- append([]byte(nil), p...)
	return len(p), nil
}

// Close writes what is queued and returns; later writes go straight
// through.
func (a *Writer) Close() error {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.ch)
	}
	a.mu.Unlock()
	<-a.done
	return nil
}
