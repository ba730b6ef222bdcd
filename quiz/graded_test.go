package quiz

import (
	"errors"
	"testing"
	"time"
)

var (
	opens  = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	closes = opens.Add(48 * time.Hour)
)

func at(h int) time.Time { return opens.Add(time.Duration(h) * time.Hour) }

func TestGradedAdmit(t *testing.T) {
	g := Graded{Opens: opens, Closes: closes, Limit: 2, Counts: CountBest}
	for _, c := range []struct {
		now  time.Time
		made int
		want Refusal
	}{
		{at(-1), 0, RefusedNotOpen},
		{at(0), 0, ""},
		{at(1), 1, ""},
		{at(1), 2, RefusedUsedUp},
		{closes, 0, RefusedClosed}, // Closes itself is closed
		{at(100), 0, RefusedClosed},
	} {
		err := g.Admit(c.now, c.made)
		var ae *AdmitError
		got := Refusal("")
		if errors.As(err, &ae) {
			got = ae.Refusal
		}
		if got != c.want {
			t.Errorf("Admit(%v, %d) = %v, want %q", c.now, c.made, err, c.want)
		}
	}
	if g.AdmitReveal(at(-1)) == nil || g.AdmitReveal(closes) == nil || g.AdmitReveal(at(1)) != nil {
		t.Error("show answer is taken only while open")
	}
	for _, bad := range []Graded{
		{Opens: closes, Closes: opens, Limit: 1, Counts: CountBest},
		{Opens: opens, Closes: closes, Limit: 0, Counts: CountBest},
		{Opens: opens, Closes: closes, Limit: MaxLimit + 1, Counts: CountBest},
		{Opens: opens, Closes: closes, Limit: 1, Counts: "average"},
	} {
		if bad.Check() == nil {
			t.Errorf("Check(%+v) = nil", bad)
		}
	}
	if g.Check() != nil {
		t.Error(g.Check())
	}
}

// TestGradedQuestion: first, last and best count different answers of the
// same history; answers outside the window or past the limit never count;
// a reveal in the window zeroes the question; a right answer made with
// the answer shown is not right.
func TestGradedQuestion(t *testing.T) {
	tries := []Try{
		{At: at(-2), Correct: true}, // practice before the window: not counted
		{At: at(1), Correct: false},
		{At: at(2), Correct: true},
		{At: at(3), Correct: false},
		{At: at(4), Correct: true}, // past a limit of 3
	}
	for _, c := range []struct {
		counts Counts
		limit  int
		point  int
	}{
		{CountFirst, 3, 0},
		{CountLast, 3, 0}, // the third counted (at 3) is wrong; the one at 4 is past the limit
		{CountBest, 3, 1},
		{CountLast, 4, 1},
		{CountFirst, 1, 0},
		{CountBest, 1, 0},
	} {
		g := Graded{Opens: opens, Closes: closes, Limit: c.limit, Counts: c.counts}
		qg := g.Question(tries, nil)
		if qg.Point != c.point || !qg.Answered || qg.Tries != min(c.limit, 4) {
			t.Errorf("%s limit %d: %+v, want point %d", c.counts, c.limit, qg, c.point)
		}
	}
	g := Graded{Opens: opens, Closes: closes, Limit: 3, Counts: CountBest}
	if qg := g.Question(tries, []time.Time{at(5)}); qg.Point != 0 || !qg.Revealed {
		t.Errorf("revealed in the window: %+v", qg)
	}
	if qg := g.Question(tries, []time.Time{at(-5)}); qg.Point != 1 || qg.Revealed {
		t.Errorf("revealed in practice before the window: %+v", qg)
	}
	if qg := g.Question([]Try{{At: at(1), Correct: true, Seen: true}}, nil); qg.Point != 0 {
		t.Errorf("a right answer with the answer shown: %+v", qg)
	}
	if qg := g.Question([]Try{{At: at(-1), Correct: true}, {At: closes, Correct: true}}, nil); qg.Answered || qg.Point != 0 {
		t.Errorf("only answers outside the window: %+v", qg)
	}
	lg := g.Lesson([]string{"a", "b", "c"}, map[string][]Try{"a": tries, "b": {{At: at(1)}}}, map[string][]time.Time{"b": {at(2)}})
	if lg.Score != 1 || lg.Answered != 2 || lg.QuizDone() || len(lg.Revealed) != 1 || lg.Revealed[0] != "b" {
		t.Errorf("lesson: %+v", lg)
	}
}

// TestGradedView: before Closes the learner learns right or wrong and
// nothing else, even for a right answer; "show answer" and Closes show it.
func TestGradedView(t *testing.T) {
	q, wrong, right := multiAB()
	g := &Graded{Opens: opens, Closes: closes, Limit: 3, Counts: CountBest}
	open := Policy{RevealAfter: 1, Graded: g, Now: at(1)}
	for _, res := range []Result{wrong, right} {
		got, withheld := open.View(q.Type, res, Record{Attempts: 5, Correct: res.Correct})
		if !withheld || got.Explanation != "" || got.Tally != nil || got.Correct != res.Correct {
			t.Errorf("open, correct=%v: %+v withheld %v", res.Correct, got, withheld)
		}
		for _, o := range got.Options {
			if o.Correct || o.Feedback != "" || !o.Chosen {
				t.Errorf("open: option %+v tells more than the choice", o)
			}
		}
	}
	if open.Shown(Record{Attempts: 5}) {
		t.Error("RevealAfter applies in graded mode")
	}
	if got, withheld := open.View(q.Type, wrong, Record{Attempts: 1, Revealed: true}); withheld || got.Explanation == "" {
		t.Error("show answer in graded mode shows the answer")
	}
	if !open.Seen(Record{Attempts: 1, Revealed: true}) {
		t.Error("an answer after show answer is not seen")
	}
	closed := Policy{Graded: g, Now: closes}
	if got, withheld := closed.View(q.Type, wrong, Record{Attempts: 1}); withheld || got.Explanation != "A and B" || len(got.Options) != 3 {
		t.Errorf("closed: %+v withheld %v", got, withheld)
	}
	if !closed.Shown(Record{}) {
		t.Error("closed: the answer is not shown")
	}
}

// TestProgramPoint: a pass earns the point; a pass after the solution was
// shown, after a graded lesson closed, or none, does not.
func TestProgramPoint(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var zero time.Time
	for _, c := range []struct {
		name                 string
		passed, shown, close time.Time
		want                 bool
	}{
		{"not passed", zero, zero, zero, false},
		{"passed", t0, zero, zero, true},
		{"passed, then shown the solution", t0, t0.Add(time.Minute), zero, true},
		{"shown the solution, then passed", t0.Add(time.Minute), t0, zero, false},
		{"passed before the close", t0, zero, t0.Add(time.Hour), true},
		{"passed after the close", t0.Add(2 * time.Hour), zero, t0.Add(time.Hour), false},
		{"passed at the close", t0, zero, t0, false},
	} {
		if got := ProgramPoint(c.passed, c.shown, c.close); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
