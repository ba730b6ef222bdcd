package rdmaexp

import (
	"strings"
	"testing"
)

// TestPostListVerdict: the post-list verdict calls lists faster only when
// every list round beat every single round, says so when the rounds
// overlap, quotes only figures its tables print, and is not ok when the
// doorbells were not one per call.
func TestPostListVerdict(t *testing.T) {
	ones := [2]doorbells{{WRs: 128, Calls: 128, Writes: 128}, {WRs: 128, Calls: 8, Writes: 8}}
	for _, c := range []struct {
		name   string
		counts [2]doorbells
		rates  [2][]float64
		want   string
		ok     bool
	}{
		{"apart", ones, [2][]float64{{3000, 3100, 3200, 3300}, {5000, 5200, 5400, 5600}}, "every list round beat every single round", true},
		{"overlap", ones, [2][]float64{{3000, 4100, 3200, 3300}, {3900, 5200, 5400, 5600}}, "cannot tell the two rates apart", true},
		{"slower", ones, [2][]float64{{5000, 5200, 5400, 5600}, {3000, 3100, 3200, 3300}}, "were slower here", true},
		{"not one per call", [2]doorbells{{WRs: 128, Calls: 128, Writes: 128}, {WRs: 128, Calls: 8, Writes: 128}}, [2][]float64{{1, 2, 3, 4}, {5, 6, 7, 8}}, "not one per call", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{}
			if err := reportPostList(rec, 16, 64, c.counts, c.rates); err != nil {
				t.Fatal(err)
			}
			r := rec.result(t)
			if !strings.Contains(r.Messages["en"], c.want) || r.Messages["zh"] == "" {
				t.Errorf("verdict lacks %q: %s", c.want, r.Messages["en"])
			}
			if r.OK == nil || *r.OK != c.ok {
				t.Errorf("ok = %v, want %v", r.OK, c.ok)
			}
			checkVerdictFigures(t, rec, f2(r.Figures["speedup"]), "6.1")
		})
	}
}
