package lessons

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestUnshownQuestionWarning: a question that no ::quiz places, in a
// lesson without ::checkpoint, is reported at its quiz.yaml line; a
// lesson with ::checkpoint shows all of its questions.
func TestUnshownQuestionWarning(t *testing.T) {
	quizYAML := `questions:
  - id: a/shown
    type: single
    prompt: {zh: 甲, en: A}
    options:
      - {id: x, correct: true, text: {zh: 叉, en: X}}
      - {id: y, text: {zh: 歪, en: Y}}
    explanation: {zh: 因为。, en: Because.}
  - id: a/hidden
    type: single
    prompt: {zh: 乙, en: B}
    options:
      - {id: x, correct: true, text: {zh: 叉, en: X}}
      - {id: y, text: {zh: 歪, en: Y}}
    explanation: {zh: 因为。, en: Because.}
`
	page := func(body string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("---\ntitle: T\nsummary: S.\norder: 1\n---\n\nText.\n\n" + body + "\n")}
	}
	fsys := fstest.MapFS{
		"01-a/index.zh.md": page("::quiz a/shown"),
		"01-a/index.en.md": page("::quiz a/shown"),
		"01-a/quiz.yaml":   {Data: []byte(quizYAML)},
	}
	var found []Diagnostic
	for _, d := range Check(fsys, Options{}) {
		if strings.Contains(d.Message, "no page shows") {
			found = append(found, d)
		}
	}
	if len(found) != 1 || !strings.HasPrefix(found[0].Message, "a/hidden:") || found[0].File != "01-a/quiz.yaml" ||
		found[0].Line != 9 || found[0].Severity != Warning {
		t.Fatalf("findings = %+v", found)
	}
	fsys["01-a/index.en.md"] = page("::checkpoint")
	for _, d := range Check(fsys, Options{}) {
		if strings.Contains(d.Message, "no page shows") {
			t.Errorf("with ::checkpoint: %s", d)
		}
	}
}
