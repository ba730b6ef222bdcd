package quiz

import (
	"fmt"
	"testing"
)

func TestComputeStats(t *testing.T) {
	qs := fixture(t)
	one, many, num, steps := qs["pick-one"], qs["pick-many"], qs["number"], qs["steps"]
	var attempts []Attempt
	add := func(learner string, q *Question, a Answer) {
		attempts = append(attempts, Attempt{Learner: learner, QuestionID: q.ID, Answer: a, Correct: Grade(q, a, "en").Correct})
	}
	// Time order matters: a learner's first attempt is the first one listed.
	add("ann", one, Answer{Choice: "a"})                       // first, right
	add("bob", one, Answer{Choice: "b"})                       // first, wrong
	add("bob", one, Answer{Choice: "a"})                       // retry, right
	add("cat", one, Answer{Choice: "b"})                       // first, wrong
	add("dan", one, Answer{Choice: "c"})                       // first, wrong
	add("ann", many, Answer{Choices: []string{"a", "c"}})      // wrong, picks c
	add("ann", many, Answer{Choices: []string{"a", "b", "d"}}) // wrong, picks d
	add("ann", many, Answer{Choices: []string{"a", "b"}})      // right
	add("bob", many, Answer{Choices: []string{"a", "b", "d"}}) // wrong, picks d
	add("cat", many, Answer{Choices: []string{"a", "b"}})      // right
	add("ann", num, Answer{Number: 100})                       // wrong
	add("ann", num, Answer{Number: 12.5})                      // right
	add("bob", num, Answer{Number: 12.5})                      // right
	add("cat", num, Answer{Number: 12.4})                      // right (bound)
	add("dan", num, Answer{Number: 100})                       // wrong
	add("ann", steps, Answer{Choices: []string{"second", "first", "third"}})
	add("ann", steps, Answer{Choices: []string{"first", "second", "third"}})
	attempts = append(attempts, Attempt{Learner: "ann", QuestionID: "removed/question", Correct: true})

	stats := ComputeStats([]*Question{one, many, num, steps, {ID: "demo/untried", Type: Single, Options: []Option{{ID: "x", Correct: true}, {ID: "y"}}}}, attempts)
	if len(stats) != 5 {
		t.Fatalf("got %d stats", len(stats))
	}
	s1, s2, s3, s4, s5 := stats[0], stats[1], stats[2], stats[3], stats[4]

	check := func(name string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("single id", s1.QuestionID, "demo/pick-one")
	check("single learners/attempts/first/ever", []int{s1.Learners, s1.Attempts, s1.FirstCorrect, s1.EverCorrect}, []int{4, 5, 1, 2})
	check("single facility", s1.Facility, 0.25)
	check("single options", s1.Options, []OptionStats{{"a", true, 2, 1}, {"b", false, 2, 2}, {"c", false, 1, 1}})
	check("single most wrong", *s1.MostPickedWrong, OptionStats{"b", false, 2, 2})

	check("multi learners/attempts/first/ever", []int{s2.Learners, s2.Attempts, s2.FirstCorrect, s2.EverCorrect}, []int{3, 5, 1, 2})
	check("multi facility", fmt.Sprintf("%.4f", s2.Facility), "0.3333")
	check("multi options", s2.Options, []OptionStats{{"a", true, 5, 3}, {"b", true, 4, 2}, {"c", false, 1, 1}, {"d", false, 2, 1}})
	check("multi most wrong", s2.MostPickedWrong.ID, "d")

	check("numeric facility", s3.Facility, 0.5)
	check("numeric values", s3.Values, []ValueCount{{12.5, true, 2, 1}, {100, false, 2, 2}, {12.4, true, 1, 1}})
	check("numeric has no wrong option", s3.MostPickedWrong == nil, true)

	check("order facility", s4.Facility, 0.0)
	check("order misplaced", s4.Options, []OptionStats{{"first", false, 1, 1}, {"second", false, 1, 1}, {"third", false, 0, 0}})
	check("order ever", s4.EverCorrect, 1)

	check("untried", []any{s5.Learners, s5.Attempts, s5.Facility, s5.MostPickedWrong == nil}, []any{0, 0, 0.0, true})
}

func TestMostPickedWrongTie(t *testing.T) {
	q := fixture(t)["pick-many"]
	attempts := []Attempt{
		{Learner: "x", QuestionID: q.ID, Answer: Answer{Choices: []string{"d"}}},
		{Learner: "y", QuestionID: q.ID, Answer: Answer{Choices: []string{"c", "c"}}}, // a duplicate counts once
	}
	st := ComputeStats([]*Question{q}, attempts)[0]
	if st.MostPickedWrong == nil || st.MostPickedWrong.ID != "c" || st.MostPickedWrong.Chosen != 1 {
		t.Errorf("most picked wrong = %+v, want c (authored first) with 1", st.MostPickedWrong)
	}
}
