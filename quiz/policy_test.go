package quiz

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

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

// View is the one reveal/withhold decision: a right answer and a shown
// answer are given whole, a wrong one before that is withheld.
func TestPolicyView(t *testing.T) {
	q, wrong, right := multiAB()
	p := Policy{RevealAfter: 3}
	for _, c := range []struct {
		res      Result
		r        Record
		withheld bool
	}{
		{wrong, Record{Attempts: 1}, true},
		{wrong, Record{Attempts: 2}, true},
		{wrong, Record{Attempts: 3}, false}, // shown by itself now
		{wrong, Record{Attempts: 1, Revealed: true}, false},
		{wrong, Record{Attempts: 2, Correct: true}, false}, // practice after a right answer
		{right, Record{Attempts: 1}, false},
	} {
		got, withheld := p.View(q.Type, c.res, c.r)
		if withheld != c.withheld {
			t.Errorf("%+v correct=%v: withheld %v, want %v", c.r, c.res.Correct, withheld, c.withheld)
		}
		if withheld && (got.Explanation != "" || got.Tally == nil || len(got.Options) != 0) {
			t.Errorf("%+v: withheld result tells more than a tally: %+v", c.r, got)
		}
		if !withheld && got.Explanation != c.res.Explanation {
			t.Errorf("%+v: a shown result lost its explanation: %+v", c.r, got)
		}
	}
}

// BenchmarkGradeAndView is what a submission's grading costs: issue 23
// counted three gradings per POST (save, view, the JSON's withhold
// decision); the handler now grades once (web's saveAttempt) and applies
// View twice (page and JSON) to that one result.
func BenchmarkGradeAndView(b *testing.B) {
	q := &Question{ID: "q", Type: Multi, Options: []Option{
		{ID: "a", Correct: true, Text: Text{"en": "A"}, Feedback: Text{"en": "yes"}},
		{ID: "b", Correct: true, Text: Text{"en": "B"}},
		{ID: "c", Text: Text{"en": "C"}, Feedback: Text{"en": "no"}},
		{ID: "d", Text: Text{"en": "D"}},
	}, Explanation: Text{"en": "A and B"}}
	a := Answer{Choices: []string{"a", "c"}}
	p := Policy{RevealAfter: 3}
	for b.Loop() {
		res := Grade(q, a, "en")
		_, _ = p.View(q.Type, res, Record{Attempts: 1})
	}
}

// An unknown option id a learner sent is kept short in the error, for
// every message that echoes it (web quotes AnswerError.Option as it is).
func TestAnswerErrorOptionShort(t *testing.T) {
	q := &Question{ID: "q", Type: Single, Options: []Option{{ID: "a", Correct: true}, {ID: "b"}}}
	long := strings.Repeat("选", 100)
	_, err := FormAnswer(q, []string{long})
	var ae *AnswerError
	if !errors.As(err, &ae) || ae.Kind != AnswerUnknownOption {
		t.Fatalf("error %v", err)
	}
	if n := utf8.RuneCountInString(ae.Option); n != 41 || !strings.HasSuffix(ae.Option, "…") {
		t.Errorf("option echoed as %d characters: %q", n, ae.Option)
	}
}

// multiAB is a multi-choice question whose answer is a and b, graded
// wrong (a, c) and right (a, b).
func multiAB() (q *Question, wrong, right Result) {
	q = &Question{ID: "q", Type: Multi, Options: []Option{
		{ID: "a", Correct: true, Text: Text{"en": "A"}, Feedback: Text{"en": "yes"}},
		{ID: "b", Correct: true, Text: Text{"en": "B"}},
		{ID: "c", Text: Text{"en": "C"}, Feedback: Text{"en": "no"}},
	}, Explanation: Text{"en": "A and B"}}
	return q, Grade(q, Answer{Choices: []string{"a", "c"}}, "en"), Grade(q, Answer{Choices: []string{"a", "b"}}, "en")
}
