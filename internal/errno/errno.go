// Package errno words system-call errors the way C tools print them, so a
// learner can search for what the lab shows.
package errno

import (
	"fmt"
	"syscall"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Strerror is e's message as C's strerror(3) writes it ("Cannot allocate
// memory"): Go's table has the same text with a lower-case first letter.
func Strerror(e syscall.Errno) string {
	s := e.Error()
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// Name is e's symbolic name ("ENOMEM"), or "errno N" when it has none.
func Name(e syscall.Errno) string {
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}
