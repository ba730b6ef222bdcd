package quiz

import (
	"os"
	"slices"
	"testing"
)

// TestLesson01Quiz holds the built-in lesson's quiz to a higher bar than
// Parse does: no warnings at all, and feedback in both languages on every
// option, because learners see it after each submission.
func TestLesson01Quiz(t *testing.T) {
	const file = "../lessons/course/01-why-rdma/quiz.yaml"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	set, err := Parse(file, data)
	if err != nil {
		t.Fatalf("findings:\n%v", err)
	}
	want := []string{
		"why-rdma/overheads", "why-rdma/regmr-container", "why-rdma/write-semantics",
		"why-rdma/gbps-to-gbytes", "why-rdma/tcp-path-order", "why-rdma/which-object-pins",
		"why-rdma/lossless-transport", "why-rdma/dpdk-bypass", "why-rdma/tcpdump", "why-rdma/worth-it",
	}
	var got []string
	for _, q := range set.Questions {
		got = append(got, q.ID)
		for _, o := range q.Options {
			for _, l := range Langs {
				if o.Feedback[l] == "" {
					t.Errorf("%s option %s: no %s feedback", q.ID, o.ID, l)
				}
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("question ids = %v\nwant %v", got, want)
	}
	byID := map[string]*Question{}
	for _, q := range set.Questions {
		byID[q.ID] = q
	}
	// The facts the lesson teaches, checked through the grader.
	checks := []struct {
		id      string
		answer  Answer
		correct bool
	}{
		{"why-rdma/overheads", Answer{Choices: []string{"copies", "stack", "switches"}}, true},
		{"why-rdma/overheads", Answer{Choices: []string{"copies", "stack", "switches", "dma"}}, false},
		{"why-rdma/regmr-container", Answer{Choice: "memlock"}, true},
		{"why-rdma/write-semantics", Answer{Choice: "one-sided"}, true},
		{"why-rdma/gbps-to-gbytes", Answer{Number: 12.5}, true},
		{"why-rdma/gbps-to-gbytes", Answer{Number: 100}, false},
		{"why-rdma/tcp-path-order", Answer{Choices: []string{"copy-in", "stack-tx", "nic-tx", "irq-rx", "wakeup", "copy-out"}}, true},
		{"why-rdma/which-object-pins", Answer{Choice: "mr"}, true},
		{"why-rdma/lossless-transport", Answer{Choice: "ib"}, true},
		{"why-rdma/dpdk-bypass", Answer{Choice: "bypass-only"}, true},
		{"why-rdma/tcpdump", Answer{Choice: "no-use-ibdump"}, true},
		{"why-rdma/worth-it", Answer{Choice: "ai-training"}, true},
	}
	for _, c := range checks {
		q := byID[c.id]
		if q == nil {
			t.Errorf("missing %s", c.id)
			continue
		}
		if r := Grade(q, c.answer, "en"); r.Correct != c.correct {
			t.Errorf("%s %+v: correct = %v, want %v", c.id, c.answer, r.Correct, c.correct)
		}
	}
}
