package tsc

import (
	"testing"
	"time"
)

func TestClockCalibrates(t *testing.T) {
	var c Clock
	c.Start()
	a := Now()
	time.Sleep(20 * time.Millisecond)
	b := Now()
	c.Stop()
	if b <= a {
		t.Fatalf("counter did not advance: %d → %d", a, b)
	}
	if d := c.Duration(b - a); d < 15*time.Millisecond || d > 2*time.Second {
		t.Fatalf("20 ms measured as %v", d)
	}
}
