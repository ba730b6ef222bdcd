// Package syncbuf is a bytes.Buffer that a logger may write from any
// goroutine while a test reads it: the tests' one such buffer (the web
// tier's, the hub's, the terminals', the worker's and labserver's logs).
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer guarded by a mutex. The zero value is empty
// and ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written since the last Reset.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Len is the bytes written since the last Reset, as int64: what
// attackcost meters a log by.
func (s *Buffer) Len() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(s.b.Len())
}

// Reset empties the buffer.
func (s *Buffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}
