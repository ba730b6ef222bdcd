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
		"why-rdma/cpu-arithmetic", "why-rdma/send-path-order", "why-rdma/mr-keys",
		"why-rdma/lossless-transport", "why-rdma/dpdk-bypass", "why-rdma/tcpdump", "why-rdma/not-a-reason",
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
		{"why-rdma/overheads", Answer{Choices: []string{"copies", "stack", "irqs", "switches"}}, true},
		{"why-rdma/overheads", Answer{Choices: []string{"copies", "stack", "switches"}}, false},
		{"why-rdma/overheads", Answer{Choices: []string{"copies", "stack", "irqs", "switches", "acks"}}, false},
		{"why-rdma/regmr-container", Answer{Choice: "memlock"}, true},
		{"why-rdma/write-semantics", Answer{Choice: "one-sided"}, true},
		{"why-rdma/cpu-arithmetic", Answer{Number: 40}, true},
		{"why-rdma/cpu-arithmetic", Answer{Number: 100}, false},
		// B's RECV is in the prompt, not a step: it only has to precede the
		// SEND's arrival, so no single position of it is the right one.
		{"why-rdma/send-path-order", Answer{Choices: []string{"post-send", "doorbell", "dma-read", "dma-write", "cqe"}}, true},
		{"why-rdma/send-path-order", Answer{Choices: []string{"post-send", "doorbell", "dma-read", "cqe", "dma-write"}}, false},
		{"why-rdma/send-path-order", Answer{Choices: []string{"doorbell", "post-send", "dma-read", "dma-write", "cqe"}}, false},
		{"why-rdma/mr-keys", Answer{Choice: "rkey-for-peer"}, true},
		{"why-rdma/lossless-transport", Answer{Choice: "ib"}, true},
		{"why-rdma/dpdk-bypass", Answer{Choice: "no-transport-offload"}, true},
		{"why-rdma/tcpdump", Answer{Choice: "no-use-ibdump"}, true},
		{"why-rdma/dpdk-bypass", Answer{Choice: "same-as-rdma"}, false},
		{"why-rdma/not-a-reason", Answer{Choice: "link-full"}, true},
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
