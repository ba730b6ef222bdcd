package main

import (
	"fmt"
	"strconv"
	"strings"
)

// A row's target is enforced: make bench fails when a figure misses it.
// The forms, on the row's ratio unless a name is given:
//
//	≥ X, ≤ X        the ratio at least, at most X
//	A–B             the ratio within [A, B]
//	NAME < X UNIT   the measured figure ("ours", in the row's unit) below X
//
// anything after " (" is a note. A target starting with "report" is a
// figure shown for reading, not a goal: it says why after the word.

// check says whether r met its target; enforced is false for a report or
// a row without figures.
func (r row) check() (met, enforced bool, err error) {
	t := strings.TrimSpace(r.Target)
	if strings.HasPrefix(t, "report") || r.Missing != "" || !r.measured {
		return true, false, nil
	}
	if i := strings.Index(t, " ("); i >= 0 {
		t = t[:i]
	}
	num := func(s string) (float64, error) { return strconv.ParseFloat(strings.TrimSpace(s), 64) }
	switch {
	case strings.HasPrefix(t, "≥"):
		x, err := num(strings.TrimPrefix(t, "≥"))
		return r.ratioV >= x, true, err
	case strings.HasPrefix(t, "≤"):
		x, err := num(strings.TrimPrefix(t, "≤"))
		return r.ratioV <= x, true, err
	case strings.Contains(t, "–"):
		lo, hi, _ := strings.Cut(t, "–")
		a, err1 := num(lo)
		b, err2 := num(hi)
		if err1 != nil || err2 != nil {
			return false, true, fmt.Errorf("target %q: a band is A–B", r.Target)
		}
		return a <= r.ratioV && r.ratioV <= b, true, nil
	case strings.Contains(t, " < "):
		_, rest, _ := strings.Cut(t, " < ")
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != r.unit {
			return false, true, fmt.Errorf("target %q: NAME < X %s (the row's unit)", r.Target, r.unit)
		}
		x, err := num(f[0])
		return r.oursV < x, true, err
	}
	return false, true, fmt.Errorf("target %q: not ≥ X, ≤ X, A–B, NAME < X UNIT or report", r.Target)
}

// missed lists the rows whose figures miss their targets, one line each.
func missed(rows []row) []string {
	var out []string
	for _, r := range rows {
		met, enforced, err := r.check()
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s: %v", r.What, err))
		case enforced && !met:
			out = append(out, fmt.Sprintf("%s: ours %s, baseline %s, ratio %s; target %s", r.What, r.Ours, r.Base, r.Ratio, r.Target))
		}
	}
	return out
}
