package asynclog

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// slowWriter records writes, each one only after the test lets it.
type slowWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	gate chan struct{}
}

func (s *slowWriter) Write(p []byte) (int, error) {
	<-s.gate
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

// Lines written while the output is stuck are held (up to the buffer)
// without blocking the writers, come out in order, none lost, once it
// moves; Close flushes them; a write after Close goes straight through.
func TestWriter(t *testing.T) {
	out := &slowWriter{gate: make(chan struct{})}
	a := New(out, 100)
	for i := range 50 {
		fmt.Fprintf(a, "line %d\n", i) // would block here if the write were synchronous
	}
	close(out.gate) // the reader wakes up
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(a, "after close\n")
	lines := strings.Split(strings.TrimSpace(out.buf.String()), "\n")
	if len(lines) != 51 || lines[0] != "line 0" || lines[49] != "line 49" || lines[50] != "after close" {
		t.Fatalf("got %d lines: %q", len(lines), lines)
	}
	// A writer's buffer reused after Write does not change the line.
	buf := []byte("first\n")
	b := New(&bytes.Buffer{}, 1)
	b.Write(buf)
	copy(buf, "XXXXX\n")
	b.Close()
	if got := b.w.(*bytes.Buffer).String(); got != "first\n" {
		t.Errorf("the queued line changed with its caller's buffer: %q", got)
	}
}
