package syncbuf

import (
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentWrites: writers and a reader at once (run with -race);
// every byte written is there at the end.
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(&b, "%d", i)
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			_ = b.Len() + int64(len(b.String()))
		}
	})
	wg.Wait()
	if b.Len() != 800 || len(b.String()) != 800 {
		t.Fatalf("%d bytes, want 800", b.Len())
	}
	b.Reset()
	if b.Len() != 0 {
		t.Fatalf("%d bytes after Reset, want 0", b.Len())
	}
}
