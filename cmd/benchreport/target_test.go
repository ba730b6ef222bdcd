package main

import (
	"strings"
	"testing"
)

// TestTargetsParse: every target the table prints is a goal this program
// checks or a report that says why (no row prints a goal nothing enforces).
func TestTargetsParse(t *testing.T) {
	rows := table(map[string]result{}, nil)
	reports := 0
	for _, r := range rows {
		r.Missing, r.measured, r.oursV, r.ratioV = "", true, 1, 1
		_, enforced, err := r.check()
		if err != nil {
			t.Errorf("%s: %v", r.What, err)
		}
		if !enforced {
			reports++
			if !strings.HasPrefix(r.Target, "report") {
				t.Errorf("%s: target %q is neither checked nor a report", r.What, r.Target)
			}
		}
		if strings.Contains(r.What, "burst of 60") && (enforced || !strings.Contains(r.Target, "cores")) {
			t.Errorf("the burst row: target %q; a report saying why (cores)", r.Target)
		}
	}
	if reports == 0 || reports == len(rows) {
		t.Errorf("%d of %d rows are reports: the check is not reached", reports, len(rows))
	}
}

// TestTargetsEnforced: a figure on the wrong side of its target is named
// and fails the run; on the right side, or in a report, it does not.
func TestTargetsEnforced(t *testing.T) {
	cases := []struct {
		target        string
		ours, ratio   float64
		unit          string
		met, enforced bool
	}{
		{"≥ 0.7", 0, 0.7, "µs", true, true},
		{"≥ 0.7", 0, 0.69, "µs", false, true},
		{"≤ 0.5", 0, 0.51, "ms", false, true},
		{"0.8–1.25", 0, 1.24, "µs", true, true},
		{"0.8–1.25", 0, 1.26, "µs", false, true},
		{"0.8–1.25", 0, 0.79, "µs", false, true},
		{"vm < 300 ms", 299, 9, "ms", true, true},
		{"vm < 300 ms", 301, 0.1, "ms", false, true},
		{"boot < 6 s (TCG)", 6.5, 1, "s", false, true},
		{"report (why)", 1e9, 1e9, "s", true, false},
	}
	for _, c := range cases {
		r := row{What: "w", Target: c.target, measured: true, oursV: c.ours, ratioV: c.ratio, unit: c.unit}
		met, enforced, err := r.check()
		if err != nil || met != c.met || enforced != c.enforced {
			t.Errorf("%q with ours %v ratio %v: met %v enforced %v (%v); want %v %v", c.target, c.ours, c.ratio, met, enforced, err, c.met, c.enforced)
		}
	}
	if _, _, err := (row{Target: "vm < 300 s", measured: true, unit: "ms"}).check(); err == nil {
		t.Errorf("a target in another unit than its row's was accepted")
	}
	rows := []row{{What: "fast", Target: "≥ 2", measured: true, ratioV: 1.5, Ratio: "1.5"}, {What: "ok", Target: "≥ 2", measured: true, ratioV: 3}}
	if m := missed(rows); len(m) != 1 || !strings.HasPrefix(m[0], "fast:") {
		t.Errorf("missed %q, want the one row under its target", m)
	}
}
