package quiz

// Withheld is r as a learner sees it before the answer is revealed: a
// wrong attempt teaches without solving. A single-choice answer keeps the
// chosen option with its verdict and feedback (there is one pick, so its
// verdict says no more than "wrong"). A multi-choice or order answer keeps
// only a Tally, how many picks (steps) are right, never which: marking
// each pick would let trying two or three combinations, or swapping two
// steps at a time, solve the question by elimination. Missed options,
// their feedback and the explanation (which states the answer) are
// dropped. A correct result is returned as it is.
func (r Result) Withheld(t Type) Result {
	if r.Correct {
		return r
	}
	out := Result{Correct: false, Options: []OptionResult{}}
	switch t {
	case Multi:
		tally := Tally{}
		for _, o := range r.Options {
			if o.Chosen {
				tally.Of++
				if o.Correct {
					tally.Right++
				}
			}
		}
		out.Tally = &tally
	case Order:
		tally := Tally{Of: len(r.Options)}
		for _, o := range r.Options {
			if o.Chosen && o.Correct {
				tally.Right++
			}
		}
		out.Tally = &tally
	default:
		for _, o := range r.Options {
			if o.Chosen {
				out.Options = append(out.Options, o)
			}
		}
	}
	return out
}
