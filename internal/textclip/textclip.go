// Package textclip shortens text for messages and lists: one rule for
// every place that echoes learner or worker input, or a long verdict,
// into a short line.
package textclip

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
