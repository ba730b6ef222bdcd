package quiz

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	data, err := os.ReadFile("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set, err := Parse("valid.yaml", data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(set.Questions) != 4 {
		t.Fatalf("got %d questions, want 4", len(set.Questions))
	}
	single, multi, num, order := set.Questions[0], set.Questions[1], set.Questions[2], set.Questions[3]

	if single.ID != "demo/pick-one" || single.Type != Single || single.Line != 3 || single.File != "valid.yaml" {
		t.Errorf("single = %q %q line %d file %q", single.ID, single.Type, single.Line, single.File)
	}
	if single.Prompt["en"] != "Pick one" || single.Prompt["zh"] != "选一个" {
		t.Errorf("single prompt = %v", single.Prompt)
	}
	if len(single.Options) != 3 || !single.Options[0].Correct || single.Options[1].Correct {
		t.Errorf("single options = %+v", single.Options)
	}
	if single.Options[0].Feedback.Get("en") != "Right" || single.Options[2].Feedback != nil {
		t.Errorf("single feedback = %v / %v", single.Options[0].Feedback, single.Options[2].Feedback)
	}
	if single.Hint.Get("zh") != "提示" {
		t.Errorf("hint = %v", single.Hint)
	}
	var correct []string
	for _, o := range multi.Options {
		if o.Correct {
			correct = append(correct, o.ID)
		}
	}
	if strings.Join(correct, ",") != "a,b" {
		t.Errorf("multi correct = %v", correct)
	}
	if num.Type != Numeric || num.Value != 12.5 || num.Tolerance != 0.1 || num.Unit != "GB/s" {
		t.Errorf("numeric = %+v", num)
	}
	if num.Explanation["en"] != "100 / 8 = 12.5" {
		t.Errorf("literal block explanation = %q", num.Explanation["en"])
	}
	if order.Type != Order || len(order.Options) != 3 || order.Options[0].ID != "first" || order.Line != 56 {
		t.Errorf("order = %+v line %d", order.Options, order.Line)
	}
}

// question wraps one question body (indented by the caller) in a file.
const header = "questions:\n"

func TestParseFindings(t *testing.T) {
	const okSingle = `  - id: q/one
    type: single
    prompt: {zh: 问, en: Q}
    options:
      - id: a
        correct: true
        text: {zh: 甲, en: A}
      - id: b
        text: {zh: 乙, en: B}
    explanation: {zh: 解, en: E}
`
	tests := []struct {
		name    string
		yaml    string
		line    int
		msg     string
		warning bool
	}{
		{"empty file", "", 1, "the file is empty", false},
		{"syntax", "questions:\n  - id: [unclosed\n", 2, "YAML:", false},
		{"top level list", "- id: x\n", 1, "the top level must be a mapping", false},
		{"unknown top key", "questionz: []\n", 1, `unknown key "questionz"`, false},
		{"no questions", "questions: []\n", 1, "`questions` is empty", false},
		{"duplicate id", header + okSingle + okSingle, 12, `duplicate question id "q/one" (first defined on line 2)`, false},
		{"unknown type", header + strings.Replace(okSingle, "type: single", "type: essay", 1), 3, `unknown type "essay"`, false},
		{"missing type", header + strings.Replace(okSingle, "    type: single\n", "", 1), 2, "missing `type`", false},
		{"bad id", header + strings.Replace(okSingle, "q/one", "Q One", 1), 2, `question id "Q One"`, false},
		{"missing id", header + strings.Replace(okSingle, "  - id: q/one\n    type", "  - type", 1), 2, "question without `id`", false},
		{"unknown question key", header + okSingle + "    answer: a\n", 12, `unknown key "answer" in a question`, false},
		{"single two correct", header + strings.Replace(okSingle, "      - id: b\n", "      - id: b\n        correct: true\n", 1), 6, "exactly one option with `correct: true`, found 2", false},
		{"single none correct", header + strings.Replace(okSingle, "        correct: true\n", "", 1), 6, "found 0", false},
		{"one option", header + strings.Replace(okSingle, "      - id: b\n        text: {zh: 乙, en: B}\n", "", 1), 6, "at least 2 options, found 1", false},
		{"duplicate option", header + strings.Replace(okSingle, "id: b", "id: a", 1), 9, `duplicate option id "a"`, false},
		{"option without text", header + strings.Replace(okSingle, "        text: {zh: 乙, en: B}\n", "", 1), 9, `option "b" without`, false},
		{"unknown option key", header + strings.Replace(okSingle, "      - id: b\n", "      - id: b\n        weight: 2\n", 1), 10, `unknown key "weight" in an option`, false},
		{"correct not bool", header + strings.Replace(okSingle, "correct: true", "correct: yes please", 1), 7, "must be true or false", false},
		{"missing en prompt", header + strings.Replace(okSingle, "prompt: {zh: 问, en: Q}", "prompt: {zh: 问}", 1), 4, `no "en" text`, true},
		{"missing zh explanation", header + strings.Replace(okSingle, "explanation: {zh: 解, en: E}", "explanation: {en: E}", 1), 11, `no "zh" text`, true},
		{"missing zh option text", header + strings.Replace(okSingle, "text: {zh: 乙, en: B}", "text: {en: B}", 1), 10, `no "zh" text`, true},
		{"feedback one language", header + strings.Replace(okSingle, "text: {zh: 乙, en: B}", "text: {zh: 乙, en: B}\n        feedback: {en: no}", 1), 11, "`feedback` has no \"zh\" text", true},
		{"unknown language", header + strings.Replace(okSingle, "prompt: {zh: 问, en: Q}", "prompt: {zh: 问, en: Q, fr: Qu}", 1), 4, `unknown language "fr"`, false},
		{"empty text", header + strings.Replace(okSingle, "explanation: {zh: 解, en: E}", "explanation: {zh: 解, en: \"\"}", 1), 11, "`explanation.en` is empty", false},
		{"prompt as string", header + strings.Replace(okSingle, "prompt: {zh: 问, en: Q}", "prompt: just text", 1), 4, "`prompt` must be a mapping", false},
		{"missing explanation", header + strings.Replace(okSingle, "    explanation: {zh: 解, en: E}\n", "", 1), 2, "missing `explanation`", false},
		{"options not list", header + strings.Replace(okSingle, "    options:\n      - id: a", "    options: a\n    x:\n      - id: a", 1), 5, "`options` must be a list (- item), found a string", false},
		{"multi none correct", header + strings.Replace(strings.Replace(okSingle, "type: single", "type: multi", 1), "        correct: true\n", "", 1), 6, "at least one option with `correct: true`", false},
		{"order with correct", header + strings.Replace(okSingle, "type: single", "type: order", 1), 7, "`correct` does not apply", false},
		{"numeric without value", header + "  - id: n\n    type: numeric\n    prompt: {zh: 问, en: Q}\n    tolerance: 0\n    explanation: {zh: 解, en: E}\n", 2, "without `value`", false},
		{"numeric without tolerance", header + "  - id: n\n    type: numeric\n    prompt: {zh: 问, en: Q}\n    value: 1\n    explanation: {zh: 解, en: E}\n", 2, "without `tolerance`", false},
		{"negative tolerance", header + "  - id: n\n    type: numeric\n    prompt: {zh: 问, en: Q}\n    value: 1\n    tolerance: -0.5\n    explanation: {zh: 解, en: E}\n", 6, "`tolerance` must be >= 0", false},
		{"value not number", header + "  - id: n\n    type: numeric\n    prompt: {zh: 问, en: Q}\n    value: twelve\n    tolerance: 0\n    explanation: {zh: 解, en: E}\n", 5, "`value` must be a number", false},
		{"value infinite", header + "  - id: n\n    type: numeric\n    prompt: {zh: 问, en: Q}\n    value: .inf\n    tolerance: 0\n    explanation: {zh: 解, en: E}\n", 5, "`value` must be a number", false},
		{"numeric with options", header + "  - id: n\n    type: numeric\n    prompt: {zh: 问, en: Q}\n    value: 1\n    tolerance: 0\n    options: []\n    explanation: {zh: 解, en: E}\n", 7, "not `options`", false},
		{"single with unit", header + okSingle + "    unit: GB\n", 12, "`unit` applies only to numeric", false},
		{"alias", header + "  - &q\n    id: n\n  - *q\n", 4, "aliases are not supported", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("quiz.yaml", []byte(tt.yaml))
			var fe FileErrors
			if !errors.As(err, &fe) {
				t.Fatalf("Parse error = %v (%T), want FileErrors", err, err)
			}
			for _, e := range fe {
				if strings.Contains(e.Message, tt.msg) {
					if e.Line != tt.line || e.Warning != tt.warning || e.File != "quiz.yaml" {
						t.Errorf("finding %q at line %d warning=%v, want line %d warning=%v", e.Message, e.Line, e.Warning, tt.line, tt.warning)
					}
					if tt.warning && fe.HasErrors() {
						t.Errorf("a warning-only case also reported errors:\n%v", fe)
					}
					return
				}
			}
			t.Errorf("no finding containing %q in:\n%v", tt.msg, fe)
		})
	}
}

func TestParseWarningsKeepSet(t *testing.T) {
	src := header + `  - id: q/one
    type: single
    prompt: {zh: 问}
    options:
      - id: a
        correct: true
        text: {zh: 甲, en: A}
      - id: b
        text: {zh: 乙, en: B}
    explanation: {zh: 解, en: E}
`
	set, err := Parse("quiz.yaml", []byte(src))
	var fe FileErrors
	if !errors.As(err, &fe) || fe.HasErrors() || len(fe) != 1 {
		t.Fatalf("err = %v, want one warning", err)
	}
	if got := fe.Error(); got != `quiz.yaml:4: warning: `+"`prompt`"+` has no "en" text (the page falls back to another language)` {
		t.Errorf("Error() = %q", got)
	}
	if set == nil || len(set.Questions) != 1 || set.Questions[0].Prompt.Get("en") != "问" {
		t.Fatalf("set = %+v", set)
	}
}

func TestParseErrorsKeepIDs(t *testing.T) {
	// A broken question still has its id in the Set, so a lesson referring to
	// it does not get a second, misleading "unknown id" report.
	src := header + "  - id: q/broken\n    type: essay\n"
	set, err := Parse("quiz.yaml", []byte(src))
	if err == nil || !err.(FileErrors).HasErrors() {
		t.Fatalf("err = %v, want errors", err)
	}
	if set == nil || len(set.Questions) != 1 || set.Questions[0].ID != "q/broken" {
		t.Fatalf("set = %+v", set)
	}
}
