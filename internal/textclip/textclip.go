// Package textclip shortens text for messages and lists: one rule for
// every place that echoes learner or worker input, or a long verdict,
// into a short line.
package textclip

import "unicode/utf8"

// Runes keeps at most n runes of s, on a rune boundary, and marks a cut
// with "…" (so the result may hold n+1 runes).
func Runes(s string, n int) string {
	if n < 0 {
		n = 0
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i] + "…"
		}
		count++
	}
	return s
}

// Bytes is s cut to at most n bytes on a character boundary, with "…"
// when it was longer: the clip of diagnostics (stderr lines, protocol
// garbage, a check's output) quoted in messages and logs, where the
// bound is in bytes.
func Bytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 0 {
		n = 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// BytesOf is Bytes for a byte slice, without copying more of b than it
// keeps.
func BytesOf(b []byte, n int) string {
	return Bytes(string(b[:min(len(b), max(n, 0)+1)]), n)
}
