//go:build !amd64

package tsc

import "time"

var clockBase = time.Now()

// Now is the monotonic clock in nanoseconds on this architecture.
func Now() uint64 { return uint64(time.Since(clockBase)) }
