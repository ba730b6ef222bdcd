package quiz

import (
	"math"
	"strconv"
	"strings"
)

// ParseNumber reads a learner's numeric answer. Besides what
// strconv.ParseFloat reads it accepts what a Chinese input method or a
// European keyboard types: full-width digits, signs, point and comma
// (６４, －１２．５), the minus sign U+2212, spaces around the number
// (full-width too), and one decimal comma (12,5 = 12.5). A comma followed
// by exactly three digits (1,000) is refused: it may be a thousands
// separator or a decimal comma, and grading a guess would be wrong either
// way. NaN and infinities are refused too.
func ParseNumber(s string) (float64, bool) {
	var b strings.Builder
	for _, r := range strings.TrimSpace(strings.Trim(s, "\u3000 \t")) {
		switch {
		case r >= '０' && r <= '９':
			b.WriteRune('0' + (r - '０'))
		case r == '．' || r == '。':
			b.WriteByte('.')
		case r == '，':
			b.WriteByte(',')
		case r == '－' || r == '\u2212':
			b.WriteByte('-')
		case r == '＋':
			b.WriteByte('+')
		case r == 'ｅ' || r == 'Ｅ':
			b.WriteByte('e')
		default:
			b.WriteRune(r)
		}
	}
	t := b.String()
	if i := strings.IndexByte(t, ','); i >= 0 {
		frac := t[i+1:]
		if strings.ContainsAny(t, ".") || strings.Contains(frac, ",") || len(frac) == 3 && allDigits(frac) {
			return 0, false
		}
		t = t[:i] + "." + frac
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
