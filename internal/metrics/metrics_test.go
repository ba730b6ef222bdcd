package metrics

import (
	"testing"
	"time"
)

// TestRequestLabelsBounded: a client inventing methods cannot mint a
// series per request; the routes are chi's patterns (or "unmatched").
func TestRequestLabelsBounded(t *testing.T) {
	l := New()
	for _, m := range []string{"GET", "FOO1", "FOO2", "BREW", "get"} {
		l.Request("", m, 405, time.Millisecond)
	}
	fams, err := l.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "lab_http_requests_total" {
			continue
		}
		for _, m := range f.Metric {
			for _, lp := range m.Label {
				if lp.GetName() == "method" {
					methods[lp.GetValue()] += m.Counter.GetValue()
				}
			}
		}
	}
	if len(methods) != 2 || methods["GET"] != 1 || methods["other"] != 4 {
		t.Errorf("series by method %v, want GET 1 and other 4", methods)
	}
}

// TestNilLabRecordsNothing: the hooks work on a nil *Lab (metrics off).
func TestNilLabRecordsNothing(t *testing.T) {
	var l *Lab
	l.Request("/", "GET", 200, time.Millisecond)
	l.Stream("sse", 1)
	l.RunFinished("echo", "done", time.Second)
	l.ProgramRun("compile", false, time.Second)
	l.Committed(3, time.Millisecond)
	if h := l.Handler(Access{}); h == nil {
		t.Fatal("no handler")
	}
}
