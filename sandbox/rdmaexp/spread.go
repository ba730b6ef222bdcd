package rdmaexp

import (
	"fmt"
	"slices"
	"time"
)

// spread is how a set of timed samples is spread out, so a table can show
// it beside the median and a verdict can ask whether two sets differ by
// more than their own scatter (DESIGN.md: a verdict must survive a rerun).
type spread struct {
	N                  int
	Min, P25, Med, P75 time.Duration
	Max, Mean          time.Duration
}

// spreadOf is d's spread (all zero when d is empty). Percentiles are the
// nearest-rank ones, so every figure is a sample that was measured.
func spreadOf(d []time.Duration) spread {
	if len(d) == 0 {
		return spread{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	var sum time.Duration
	for _, x := range s {
		sum += x
	}
	at := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return spread{N: len(s), Min: s[0], P25: at(0.25), Med: s[len(s)/2], P75: at(0.75), Max: s[len(s)-1], Mean: sum / time.Duration(len(s))}
}

// midText is the middle half "p25–p75" in µs, as tables print it.
func (s spread) midText() string { return fmt.Sprintf("%s–%s", f1(us(s.P25)), f1(us(s.P75))) }

// below says whether every sample of a's middle half is below b's: the
// two differ by more than their scatter. Compared as printed (one decimal
// in µs), so a verdict never calls apart two ranges the table shows
// touching.
func (a spread) below(b spread) bool { return f1(us(a.P75)) != f1(us(b.P25)) && a.P75 < b.P25 }

// floatSpread is the spread of plain figures (goodput percentages, MB/s).
type floatSpread struct {
	N             int
	Min, Med, Max float64
}

// floatSpreadOf is v's spread (zero when v is empty).
func floatSpreadOf(v []float64) floatSpread {
	if len(v) == 0 {
		return floatSpread{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return floatSpread{N: len(s), Min: s[0], Med: med, Max: s[len(s)-1]}
}
