package quiz

import (
	"errors"
	"strings"
	"testing"
)

// TestFlowCommaHint: an unquoted comma inside {zh: …, en: …} breaks the
// YAML with a message that does not say why; the finding says to quote.
func TestFlowCommaHint(t *testing.T) {
	for name, src := range map[string]string{
		"comma": "questions:\n  - id: bad/one\n    type: single\n    prompt: {zh: 选一个, 或者两个, en: Pick one, or two}\n",
	} {
		_, err := Parse("quiz.yaml", []byte(src))
		var fe FileErrors
		if !errors.As(err, &fe) || len(fe) == 0 {
			t.Fatalf("%s: %v, want a YAML finding", name, err)
		}
		if !strings.Contains(err.Error(), "quote") {
			t.Errorf("%s: %q does not tell to quote", name, err)
		}
	}
}
