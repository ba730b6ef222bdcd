package lessons

import (
	"strings"
	"testing"
	"unicode"
)

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// TestDiagramSteps: the step data matches the drawing (same ids, same
// removed marks) and every step RDMA removes says what it costs, in both
// languages.
func TestDiagramSteps(t *testing.T) {
	for _, lang := range Langs {
		svg := string(tcpVsRDMA(lang))
		steps := DiagramSteps("tcp-vs-rdma", lang)
		if len(steps) != len(tcpSteps)+len(rdmaSteps) {
			t.Fatalf("%s: %d steps, want %d", lang, len(steps), len(tcpSteps)+len(rdmaSteps))
		}
		removed := 0
		for _, s := range steps {
			if !strings.Contains(svg, `data-step="`+s.ID+`"`) {
				t.Errorf("%s: step %s is not in the drawing", lang, s.ID)
			}
			if s.Title == "" || s.Detail == "" || s.Zone == "" {
				t.Errorf("%s: step %s lacks text: %+v", lang, s.ID, s)
			}
			if s.Removed {
				removed++
				if s.Path != "tcp" {
					t.Errorf("%s: removed step %s on the %s path", lang, s.ID, s.Path)
				}
				if s.Cost == "" {
					t.Errorf("%s: removed step %s has no cost", lang, s.ID)
				}
			}
			if s.Cost != "" && hasHan(s.Cost) != (lang == "zh") {
				t.Errorf("%s: step %s cost not in the page language: %q", lang, s.ID, s.Cost)
			}
		}
		if removed < 3 {
			t.Errorf("%s: %d removed steps", lang, removed)
		}
		if DiagramSteps("cpu-budget", lang) != nil {
			t.Errorf("cpu-budget has steps")
		}
	}
	for id := range stepCosts {
		found := false
		for _, s := range tcpSteps {
			found = found || (s.id == id && s.removed)
		}
		if !found {
			t.Errorf("cost for %q, which is not a removed TCP step", id)
		}
	}
}

// TestWidgetDiagrams: the widget ids are known to ::diagram (so check
// accepts them) and render only an anchor the web layer replaces.
func TestWidgetDiagrams(t *testing.T) {
	for _, id := range WidgetIDs {
		d, ok := diagrams[id]
		if !ok {
			t.Fatalf("::diagram %s is not registered", id)
		}
		if got := string(d("en")); !strings.Contains(got, `data-widget="`+id+`"`) {
			t.Errorf("%s renders %q", id, got)
		}
	}
}
