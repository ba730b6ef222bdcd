package quiz

import (
	"cmp"
	"slices"
)

// QuestionStats is what the class did with one question.
type QuestionStats struct {
	QuestionID      string
	Type            Type
	Learners        int // learners with at least one attempt
	Attempts        int
	FirstCorrect    int // learners whose first attempt was correct
	EverCorrect     int // learners correct at least once
	Facility        float64
	Options         []OptionStats // single/multi/order, in authored order
	Values          []ValueCount  // numeric: distinct answers, most frequent first
	MostPickedWrong *OptionStats  // single/multi: the wrong option chosen in most attempts; nil if none was
}

// OptionStats counts one option across attempts. For single and multi,
// Chosen counts answers that picked the option; for order, answers that put
// the step at a wrong position (or left it out).
type OptionStats struct {
	ID          string
	Correct     bool // single/multi: the option belongs to the answer
	Chosen      int  // over all attempts
	FirstChosen int  // over learners' first attempts only
}

// ValueCount is how often one numeric answer was given.
type ValueCount struct {
	Value      float64
	Correct    bool
	Count      int
	FirstCount int
}

// ComputeStats summarises attempts (in time order, any learners, any
// questions) for each of questions, in the given order. Facility is the share
// of learners who answered correctly on their first attempt, the classic
// item-difficulty index (0 when nobody tried: check Learners). Correctness is
// taken from the stored attempt, as graded when it was submitted; a Seen
// attempt (made with the answer shown) never counts as correct. Attempts
// for questions not in the list are ignored.
func ComputeStats(questions []*Question, attempts []Attempt) []QuestionStats {
	type acc struct {
		q       *Question
		st      *QuestionStats
		seen    map[string]bool // learner has a first attempt
		correct map[string]bool // learner was correct at least once
		values  map[float64]*ValueCount
	}
	out := make([]QuestionStats, len(questions))
	byID := make(map[string]*acc, len(questions))
	for i, q := range questions {
		out[i] = QuestionStats{QuestionID: q.ID, Type: q.Type}
		a := &acc{q: q, st: &out[i], seen: map[string]bool{}, correct: map[string]bool{}, values: map[float64]*ValueCount{}}
		for _, o := range q.Options {
			out[i].Options = append(out[i].Options, OptionStats{ID: o.ID, Correct: o.Correct && q.Type != Order})
		}
		byID[q.ID] = a
	}
	for _, at := range attempts {
		a := byID[at.QuestionID]
		if a == nil {
			continue
		}
		st := a.st
		first := !a.seen[at.Learner]
		if first {
			a.seen[at.Learner] = true
			st.Learners++
			if at.Correct && !at.Seen {
				st.FirstCorrect++
			}
		}
		st.Attempts++
		if at.Correct && !at.Seen && !a.correct[at.Learner] {
			a.correct[at.Learner] = true
			st.EverCorrect++
		}
		count := func(id string) {
			for i := range st.Options {
				if st.Options[i].ID == id {
					st.Options[i].Chosen++
					if first {
						st.Options[i].FirstChosen++
					}
				}
			}
		}
		switch a.q.Type {
		case Single:
			count(at.Answer.Choice)
		case Multi:
			for _, id := range uniq(at.Answer.Choices) {
				count(id)
			}
		case Order:
			for pos, o := range a.q.Options {
				if pos >= len(at.Answer.Choices) || at.Answer.Choices[pos] != o.ID {
					count(o.ID)
				}
			}
		case Numeric:
			v := a.values[at.Answer.Number]
			if v == nil {
				v = &ValueCount{Value: at.Answer.Number, Correct: withinTolerance(at.Answer.Number, a.q.Value, a.q.Tolerance)}
				a.values[at.Answer.Number] = v
			}
			v.Count++
			if first {
				v.FirstCount++
			}
		}
	}
	for _, a := range byID {
		st := a.st
		if st.Learners > 0 {
			st.Facility = float64(st.FirstCorrect) / float64(st.Learners)
		}
		for _, v := range a.values {
			st.Values = append(st.Values, *v)
		}
		slices.SortFunc(st.Values, func(x, y ValueCount) int {
			return cmp.Or(cmp.Compare(y.Count, x.Count), cmp.Compare(x.Value, y.Value))
		})
		if a.q.Type == Single || a.q.Type == Multi {
			for i := range st.Options {
				o := &st.Options[i]
				// Ties go to the option authored first, so the result is stable.
				if !o.Correct && o.Chosen > 0 && (st.MostPickedWrong == nil || o.Chosen > st.MostPickedWrong.Chosen) {
					st.MostPickedWrong = o
				}
			}
			if st.MostPickedWrong != nil {
				w := *st.MostPickedWrong // a copy: the slice is the caller's to keep
				st.MostPickedWrong = &w
			}
		}
	}
	return out
}

func uniq(ids []string) []string {
	var out []string
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
