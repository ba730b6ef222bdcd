// Package tsc is a round-trip timer: the CPU's time-stamp counter read
// without a system call (perftest's get_cycles), and a Clock that converts
// readings to durations calibrated against the wall clock. It is apart from
// package verbs because cgo packages cannot hold Go assembly.
package tsc

import "time"

// Clock converts Now readings to durations, calibrated against the wall
// clock between Start and Stop (two time.Now calls per measurement).
type Clock struct {
	c0 uint64
	t0 time.Time
	// nsPerCycle is set by Stop.
	nsPerCycle float64
}

// Start begins a calibrated measurement.
func (c *Clock) Start() {
	c.t0 = time.Now()
	c.c0 = Now()
}

// Stop ends the calibration window.
func (c *Clock) Stop() {
	c1 := Now()
	d := time.Since(c.t0)
	if c1 > c.c0 {
		c.nsPerCycle = float64(d) / float64(c1-c.c0)
	}
}

// Duration converts a number of cycles measured inside the window.
func (c *Clock) Duration(cycles uint64) time.Duration {
	return time.Duration(float64(cycles) * c.nsPerCycle)
}
