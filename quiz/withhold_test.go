package quiz

import (
	"fmt"
	"slices"
	"testing"
)

func TestWithheldKeepsOnlyWhatWasChosen(t *testing.T) {
	q := &Question{ID: "x/q", Type: Single, Options: []Option{
		{ID: "a", Correct: true, Text: Text{"en": "A"}, Feedback: Text{"en": "A is why"}},
		{ID: "b", Text: Text{"en": "B"}, Feedback: Text{"en": "B is a myth"}},
		{ID: "c", Text: Text{"en": "C"}, Feedback: Text{"en": "C no"}},
	}, Explanation: Text{"en": "the answer is A"}}
	r := Grade(q, Answer{Choice: "b"}, "en").Withheld(q.Type)
	if r.Explanation != "" {
		t.Errorf("explanation leaked: %q", r.Explanation)
	}
	if len(r.Options) != 1 || r.Options[0].ID != "b" || r.Options[0].Feedback != "B is a myth" || r.Options[0].Correct {
		t.Errorf("options %+v", r.Options)
	}
	right := Grade(q, Answer{Choice: "a"}, "en").Withheld(q.Type)
	if !right.Correct || right.Explanation == "" || len(right.Options) != 3 {
		t.Errorf("a right answer is withheld: %+v", right)
	}
}

func TestOptionsForIsStablePerLearnerAndVaries(t *testing.T) {
	q := &Question{ID: "why-rdma/overheads", Type: Single}
	for _, id := range []string{"a", "b", "c", "d"} {
		q.Options = append(q.Options, Option{ID: id})
	}
	ids := func(l string) string {
		s := ""
		for _, o := range q.OptionsFor(l) {
			s += o.ID
		}
		return s
	}
	if ids("learner-1") != ids("learner-1") {
		t.Error("the order changes between visits")
	}
	firsts := map[string]bool{}
	orders := map[string]bool{}
	for i := range 40 {
		l := "learner-" + string(rune('A'+i))
		firsts[ids(l)[:1]] = true
		orders[ids(l)] = true
	}
	if len(firsts) < 3 || len(orders) < 8 {
		t.Errorf("40 learners saw %d first options and %d orders", len(firsts), len(orders))
	}
	if got := q.OptionsFor("learner-1"); !slices.ContainsFunc(got, func(o Option) bool { return o.ID == "a" }) || len(got) != 4 {
		t.Errorf("options lost: %v", got)
	}
}

// TestOptionOrderIsOptionsFor: the lesson page orders pre-rendered items
// by OptionOrder; it must be the order OptionsFor shows, for every type.
func TestOptionOrderIsOptionsFor(t *testing.T) {
	for _, typ := range []Type{Single, Multi, Order} {
		q := &Question{ID: "why-rdma/" + string(typ), Type: typ}
		for _, id := range []string{"a", "b", "c", "d", "e"} {
			q.Options = append(q.Options, Option{ID: id})
		}
		for _, l := range []string{"", "learner-1", "learner-2", "learner-3"} {
			var want, got []string
			for _, o := range q.OptionsFor(l) {
				want = append(want, o.ID)
			}
			for _, k := range q.OptionOrder(l) {
				got = append(got, q.Options[k].ID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s, learner %q: OptionOrder %v, OptionsFor %v", typ, l, got, want)
			}
		}
	}
}

// TestWithheldTellsHowManyNotWhich (issue 30 item 9): a wrong multi or
// order answer says how many picks (steps) are right, never which.
func TestWithheldTellsHowManyNotWhich(t *testing.T) {
	multi := &Question{ID: "x/m", Type: Multi, Options: []Option{
		{ID: "a", Correct: true, Feedback: Text{"en": "A yes"}},
		{ID: "b", Correct: true, Feedback: Text{"en": "B yes"}},
		{ID: "c", Feedback: Text{"en": "C no"}},
		{ID: "d", Feedback: Text{"en": "D no"}},
	}, Explanation: Text{"en": "A and B"}}
	// Over-selecting: every option chosen.
	r := Grade(multi, Answer{Choices: []string{"a", "b", "c", "d"}}, "en").Withheld(multi.Type)
	if len(r.Options) != 0 || r.Explanation != "" || r.Tally == nil || *r.Tally != (Tally{Right: 2, Of: 4}) {
		t.Errorf("over-selected multi withheld as %+v (tally %+v)", r, r.Tally)
	}
	r = Grade(multi, Answer{Choices: []string{"a"}}, "en").Withheld(multi.Type)
	if len(r.Options) != 0 || r.Tally == nil || *r.Tally != (Tally{Right: 1, Of: 1}) {
		t.Errorf("under-selected multi withheld as %+v", r)
	}

	order := &Question{ID: "x/o", Type: Order, Options: []Option{{ID: "s1"}, {ID: "s2"}, {ID: "s3"}, {ID: "s4"}}}
	// Two steps swapped: the learner learns that two are out of place, not which two.
	r = Grade(order, Answer{Choices: []string{"s1", "s3", "s2", "s4"}}, "en").Withheld(order.Type)
	if len(r.Options) != 0 || r.Tally == nil || *r.Tally != (Tally{Right: 2, Of: 4}) {
		t.Errorf("swapped order withheld as %+v", r)
	}
	if right := Grade(order, Answer{Choices: []string{"s1", "s2", "s3", "s4"}}, "en").Withheld(order.Type); right.Tally != nil || len(right.Options) != 4 {
		t.Errorf("a right order answer lost its marks: %+v", right)
	}
}

// TestChoiceOrderKept pins choiceOrder's shuffles: a learner's options
// must not move between versions of the lab (a change of hash or
// generator would reorder every learner's options mid-course).
func TestChoiceOrderKept(t *testing.T) {
	for _, c := range []struct {
		n       int
		learner string
		want    []int
	}{
		{2, "a", []int{1, 0}},
		{2, "learner-1234", []int{0, 1}},
		{2, "0f3c9a", []int{0, 1}},
		{3, "a", []int{1, 2, 0}},
		{3, "learner-1234", []int{1, 2, 0}},
		{3, "0f3c9a", []int{0, 1, 2}},
		{4, "a", []int{3, 0, 2, 1}},
		{4, "learner-1234", []int{0, 2, 3, 1}},
		{4, "0f3c9a", []int{3, 1, 2, 0}},
		{5, "a", []int{1, 0, 2, 4, 3}},
		{5, "learner-1234", []int{2, 3, 0, 4, 1}},
		{5, "0f3c9a", []int{0, 2, 3, 4, 1}},
		{7, "a", []int{0, 1, 6, 3, 2, 5, 4}},
		{7, "learner-1234", []int{2, 4, 6, 1, 0, 3, 5}},
		{7, "0f3c9a", []int{5, 0, 1, 4, 6, 3, 2}},
	} {
		q := &Question{ID: fmt.Sprintf("q-%d", c.n), Type: Single}
		for i := range c.n {
			q.Options = append(q.Options, Option{ID: fmt.Sprint(i)})
		}
		if got := q.choiceOrder(c.learner); !slices.Equal(got, c.want) {
			t.Errorf("%d options, learner %q: order %v, want %v", c.n, c.learner, got, c.want)
		}
	}
}
