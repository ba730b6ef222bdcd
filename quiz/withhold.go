package quiz

// Withheld is r as a learner sees it before the answer is revealed: a
// wrong attempt tells about what the learner chose, never what they
// missed. Options keeps only the chosen ones, each with its verdict and
// feedback (a chosen option's feedback explains that choice); missed
// correct options, their feedback and the explanation (which states the
// answer) are dropped. For order questions the steps placed keep their
// position verdict but lose the feedback, which names the right place.
// A correct result is returned as it is.
func (r Result) Withheld(t Type) Result {
	if r.Correct {
		return r
	}
	out := Result{Correct: false, Options: []OptionResult{}}
	for _, o := range r.Options {
		if !o.Chosen {
			continue
		}
		if t == Order {
			o.Feedback = ""
		}
		out.Options = append(out.Options, o)
	}
	return out
}
