package testwait

import (
	"testing"
	"time"
)

func TestForHolds(t *testing.T) {
	n := 0
	if !For(time.Minute, time.Millisecond, func() bool { n++; return n == 3 }) {
		t.Fatal("For gave up on a condition that held on the third call")
	}
	if n != 3 {
		t.Fatalf("cond called %d times, want 3 (For stops once it holds)", n)
	}
}

func TestForGivesUp(t *testing.T) {
	n := 0
	if For(20*time.Millisecond, time.Millisecond, func() bool { n++; return false }) {
		t.Fatal("For reported a condition that never held")
	}
	if n < 2 {
		t.Fatalf("cond called %d times, want it polled until the deadline and once after", n)
	}
}
