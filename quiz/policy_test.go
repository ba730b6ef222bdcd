package quiz

import "testing"

func TestPolicySeen(t *testing.T) {
	p := Policy{RevealAfter: 3}
	for _, c := range []struct {
		r           Record
		shown, seen bool
	}{
		{Record{}, false, false},
		{Record{Attempts: 2}, false, false},
		{Record{Attempts: 3}, true, true},                 // shown by itself after three wrong tries
		{Record{Revealed: true}, true, true},              // "show answer" before any attempt
		{Record{Attempts: 1, Correct: true}, true, false}, // answered right: later tries are practice
		{Record{Attempts: 5, Correct: true, Revealed: true}, true, false},
	} {
		if got := p.Shown(c.r); got != c.shown {
			t.Errorf("Shown(%+v) = %v", c.r, got)
		}
		if got := p.Seen(c.r); got != c.seen {
			t.Errorf("Seen(%+v) = %v", c.r, got)
		}
	}
	if (Policy{}).Seen(Record{Attempts: 100}) {
		t.Error("RevealAfter 0 never shows the answer by itself")
	}
}
