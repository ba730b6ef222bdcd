package quiz

import (
	"fmt"
	"strings"
	"testing"
)

// TestImportAiken: questions convert into quiz.yaml that Parse reads back;
// a question without ANSWER is reported with its line. Aiken has no
// explanations, so Parse asks for them (the author must write them).
func TestImportAiken(t *testing.T) {
	src := `Which removes the kernel from the data path?
A. TCP
B) RDMA
ANSWER: B

What does ibv_reg_mr pin?
A. Memory, "pages": locked
B. Nothing
ANSWER: A

A question that never ends
A. one
B. two
`
	out, findings := ImportAiken(src, "l01/aiken-", "en")
	if len(findings) != 1 || findings[0].Line != 11 || !strings.Contains(findings[0].Message, "without an ANSWER") {
		t.Errorf("findings = %+v", findings)
	}
	set, err := Parse("quiz.yaml", []byte(out))
	if set == nil {
		t.Fatalf("output does not parse: %v\n%s", err, out)
	}
	if len(set.Questions) != 2 {
		t.Fatalf("%d questions\n%s", len(set.Questions), out)
	}
	q := set.Questions[0]
	if q.ID != "l01/aiken-1" || q.Type != Single || q.Prompt["en"] != "Which removes the kernel from the data path?" ||
		len(q.Options) != 2 || q.Options[0].Correct || !q.Options[1].Correct || q.Options[1].Text["en"] != "RDMA" {
		t.Errorf("q1 = %+v", q)
	}
	if got := set.Questions[1].Options[0].Text["en"]; got != `Memory, "pages": locked` {
		t.Errorf("quoting lost text: %q", got)
	}
	if err == nil || !strings.Contains(err.Error(), "missing `explanation`") {
		t.Errorf("Parse should ask for explanations, got %v", err)
	}
}

// TestImportGIFT: single, multi (weights), numeric with tolerance,
// feedback and general feedback convert; true/false and matching are
// reported.
func TestImportGIFT(t *testing.T) {
	src := `// a comment
::q1:: Which transport needs a lossless network? {
=RoCEv2 #PFC or ECN must be set up
~iWARP #it runs over TCP
####RoCE runs over UDP/IP.
}

::q2:: Which are RDMA objects? {~%50%QP ~%50%CQ ~%-100%socket####QP and CQ.}

::q3:: 100 Gbps in GB/s? {#12.5:0.1####Divide by 8.}

::q4:: RDMA needs a special NIC. {T}

::q5:: Match. {=QP -> queue pair =CQ -> completions}
`
	out, findings := ImportGIFT(src, "l01/gift-", "zh")
	if len(findings) != 2 || findings[0].Line != 12 || findings[1].Line != 14 {
		t.Errorf("findings = %+v", findings)
	}
	set, err := Parse("quiz.yaml", []byte(out))
	// Only warnings (no "en" text): the import is in one language.
	if set == nil || len(set.Questions) != 3 || (err != nil && !strings.Contains(err.Error(), "no \"en\" text")) ||
		strings.Contains(fmt.Sprint(err), "missing") {
		t.Fatalf("parse: %v\n%s", err, out)
	}
	q1, q2, q3 := set.Questions[0], set.Questions[1], set.Questions[2]
	if q1.Type != Single || !q1.Options[0].Correct || q1.Options[0].Feedback["zh"] != "PFC or ECN must be set up" || q1.Explanation["zh"] != "RoCE runs over UDP/IP." {
		t.Errorf("q1 = %+v", q1)
	}
	if q2.Type != Multi || !q2.Options[0].Correct || !q2.Options[1].Correct || q2.Options[2].Correct || q2.Options[2].Text["zh"] != "socket" {
		t.Errorf("q2 = %+v", q2)
	}
	if q3.Type != Numeric || q3.Value != 12.5 || q3.Tolerance != 0.1 || q3.Explanation["zh"] != "Divide by 8." {
		t.Errorf("q3 = %+v", q3)
	}
}
