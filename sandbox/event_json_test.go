package sandbox

import (
	"encoding/json"
	"strings"
	"testing"
)

// A metric point at zero reaches the client: x and y are always written for
// metrics, and only for metrics.
func TestMetricZeroSurvivesJSON(t *testing.T) {
	cases := []struct {
		ev   Event
		want []string
		not  []string
	}{
		{Event{Type: EvMetric, Series: "receiver_cpu_ms", X: 0, Y: 0, Unit: "ms"}, []string{`"x":0`, `"y":0`}, nil},
		{Event{Type: EvMetric, Series: "s", X: 2, Y: 3.5}, []string{`"x":2`, `"y":3.5`}, nil},
		{Event{Type: EvLog, Message: "hi"}, []string{`"message":"hi"`}, []string{`"x"`, `"y"`}},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.ev)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, w := range c.want {
			if !strings.Contains(s, w) {
				t.Errorf("%s lacks %s", s, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(s, w) {
				t.Errorf("%s has %s", s, w)
			}
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil || back.Type != c.ev.Type || back.Y != c.ev.Y || back.X != c.ev.X {
			t.Errorf("round trip of %s: %+v %v", s, back, err)
		}
	}
	// Through a pointer too (the store and SSE marshal values and pointers).
	b, _ := json.Marshal(&Event{Type: EvMetric, Y: 0})
	if !strings.Contains(string(b), `"y":0`) {
		t.Errorf("pointer: %s", b)
	}
}
