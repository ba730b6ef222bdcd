// Package testwait is the one poll-until-deadline loop of the tests: a test
// that waits for something it cannot be told about (a stored status, a
// process appearing or gone) polls it here instead of writing its own loop.
// The caller keeps its own failure message, so what a test asserts stays in
// the test.
package testwait

import "time"

// For calls cond every interval until it returns true (For returns true) or
// timeout has passed since the call (For returns false). cond runs at least
// once, and once more at the deadline, so a condition that holds by then is
// never reported as missed.
func For(timeout, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(min(every, max(time.Until(deadline), time.Millisecond)))
	}
}
