package quiz

import (
	"math"
	"slices"
)

// Grade scores answer a against q and returns the result in lang. It is pure
// and accepts any Answer (also ones DecodeAnswer would reject): unknown ids
// never count as correct.
//
//   - single, multi: all-or-nothing; Options lists every option in authored
//     order, Correct tells whether the option belongs to the answer, and
//     Feedback is set on every chosen option and every missed correct one.
//   - numeric: correct when |Number-Value| <= Tolerance (bounds inclusive);
//     Options is empty.
//   - order: correct when Choices is exactly the authored order; Options
//     lists the steps as the learner placed them (then any step not placed,
//     with Chosen false), Correct means "at its right position", and
//     Feedback is set on every misplaced or missing step.
func Grade(q *Question, a Answer, lang string) Result {
	r := Result{Options: []OptionResult{}, Explanation: q.Explanation.Get(lang)}
	switch q.Type {
	case Single:
		r.Correct = gradeChoices(q, []string{a.Choice}, lang, &r)
	case Multi:
		r.Correct = gradeChoices(q, a.Choices, lang, &r)
	case Numeric:
		r.Correct = withinTolerance(a.Number, q.Value, q.Tolerance)
	case Order:
		r.Correct = gradeOrder(q, a.Choices, lang, &r)
	}
	return r
}

func gradeChoices(q *Question, chosen []string, lang string, r *Result) bool {
	allRight := true
	for _, o := range q.Options {
		picked := slices.Contains(chosen, o.ID)
		or := OptionResult{ID: o.ID, Chosen: picked, Correct: o.Correct}
		if picked || o.Correct {
			or.Feedback = o.Feedback.Get(lang)
		}
		if picked != o.Correct {
			allRight = false
		}
		r.Options = append(r.Options, or)
	}
	// An id that is no option can only make the answer wrong.
	for _, id := range chosen {
		if q.option(id) == nil {
			allRight = false
		}
	}
	return allRight && len(chosen) > 0
}

func gradeOrder(q *Question, placed []string, lang string, r *Result) bool {
	allRight := len(placed) == len(q.Options)
	seen := map[string]bool{}
	for pos, id := range placed {
		o := q.option(id)
		if o == nil || seen[id] {
			allRight = false
			continue
		}
		seen[id] = true
		atPlace := pos < len(q.Options) && q.Options[pos].ID == id
		or := OptionResult{ID: id, Chosen: true, Correct: atPlace}
		if !atPlace {
			or.Feedback = o.Feedback.Get(lang)
			allRight = false
		}
		r.Options = append(r.Options, or)
	}
	for _, o := range q.Options {
		if !seen[o.ID] {
			allRight = false
			r.Options = append(r.Options, OptionResult{ID: o.ID, Feedback: o.Feedback.Get(lang)})
		}
	}
	return allRight
}

// withinTolerance compares with a little slack so that the bounds an author
// writes in decimal stay inclusive: 12.4 is "12.5 ± 0.1" although in binary
// floating point 12.5-12.4 can come out a hair above 0.1.
func withinTolerance(got, want, tol float64) bool {
	if math.IsNaN(got) || math.IsInf(got, 0) {
		return false
	}
	slack := 1e-9 * math.Max(1, math.Max(math.Abs(want), tol))
	return math.Abs(got-want) <= tol+slack
}

func (q *Question) option(id string) *Option {
	for i := range q.Options {
		if q.Options[i].ID == id {
			return &q.Options[i]
		}
	}
	return nil
}
