package quiz

import (
	"fmt"
	"runtime"
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

// TestImportGIFTChinese is issue 28, fall 9: every non-ASCII option came
// out garbled (the options were built a byte at a time, each byte taken for
// a character). A zh question bank round-trips exactly: prompt, options,
// feedback and explanation.
func TestImportGIFTChinese(t *testing.T) {
	src := "::q1:: 哪种传输需要无损网络？ {\n=RoCEv2（基于 UDP/IP）#需要配置 PFC 或 ECN。\n~iWARP #它跑在 TCP 之上。\n~InfiniBand「原生」\n####RoCE 运行在 UDP/IP 之上。\n}\n"
	out, findings := ImportGIFT(src, "l01/zh-", "zh")
	if len(findings) != 0 {
		t.Fatalf("findings %+v", findings)
	}
	set, _ := Parse("quiz.yaml", []byte(out))
	if set == nil || len(set.Questions) != 1 {
		t.Fatalf("output does not parse:\n%s", out)
	}
	q := set.Questions[0]
	want := []string{"RoCEv2（基于 UDP/IP）", "iWARP", "InfiniBand「原生」"}
	for i, w := range want {
		if got := q.Options[i].Text["zh"]; got != w {
			t.Errorf("option %d = %q, want %q", i, got, w)
		}
	}
	if q.Prompt["zh"] != "哪种传输需要无损网络？" || q.Options[0].Feedback["zh"] != "需要配置 PFC 或 ECN。" ||
		q.Options[1].Feedback["zh"] != "它跑在 TCP 之上。" || q.Explanation["zh"] != "RoCE 运行在 UDP/IP 之上。" {
		t.Errorf("texts %q / %q / %q / %q", q.Prompt["zh"], q.Options[0].Feedback["zh"], q.Options[1].Feedback["zh"], q.Explanation["zh"])
	}
}

// TestImportGIFTManyOptions: options past the 26th get ids quiz.yaml
// accepts (aa, ab, …; they were '{', '|', … and broke the YAML).
func TestImportGIFTManyOptions(t *testing.T) {
	var b strings.Builder
	b.WriteString("::q:: Pick the first. {=option 0")
	for i := 1; i < 30; i++ {
		fmt.Fprintf(&b, " ~option %d", i)
	}
	b.WriteString("####The first.}\n")
	out, findings := ImportGIFT(b.String(), "l01/many-", "en")
	set, err := Parse("quiz.yaml", []byte(out))
	if len(findings) != 0 || set == nil || len(set.Questions) != 1 || len(set.Questions[0].Options) != 30 {
		t.Fatalf("findings %+v, parse %v\n%s", findings, err, out)
	}
	opts := set.Questions[0].Options
	if opts[0].ID != "a" || opts[25].ID != "z" || opts[26].ID != "aa" || opts[29].ID != "ad" || opts[29].Text["en"] != "option 29" {
		t.Errorf("ids %s %s %s %s", opts[0].ID, opts[25].ID, opts[26].ID, opts[29].ID)
	}
	if got := optionID(26*27 + 1); got != "aab" {
		t.Errorf("optionID(%d) = %q", 26*27+1, got)
	}
}

// TestImportGIFTLinear: converting an option 4× as long costs about 4× the
// memory, not 16× (it grew quadratically: 50/100/200 KB took 0.3/1.5/7.4 s).
// Bytes allocated, not time, so the test does not depend on the machine.
func TestImportGIFTLinear(t *testing.T) {
	alloc := func(n int) uint64 {
		src := "::q:: Long. {=" + strings.Repeat("长x", n/4) + " ~short}\n"
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ImportGIFT(src, "q", "zh")
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, big := alloc(50<<10), alloc(200<<10)
	t.Logf("allocated %d KiB for a 50 KB option, %d KiB for 200 KB", small>>10, big>>10)
	if big > 8*small {
		t.Fatalf("a 4× longer option allocated %.1f× as much", float64(big)/float64(small))
	}
}
