package e2e

import (
	"strings"
	"testing"
)

// TestConsoleCopyWithoutPrompt: what a learner copies from a console block
// of lesson 01 (to paste into their terminal) has no "# " prompts: pasted
// into bash, "# ulimit -l 65536" is a comment and does nothing, silently.
func TestConsoleCopyWithoutPrompt(t *testing.T) {
	flow(t)
	b := newBrowser(t, shared)
	for _, lang := range []string{"en", "zh"} {
		b.open("/lessons/" + lesson01 + "?lang=" + lang)
		got := eval[string](b, `(function(){ var pre = document.querySelector('[data-task=memlock] pre'); if (!pre) return '<no block>';
			var r = document.createRange(); r.selectNodeContents(pre); var s = getSelection(); s.removeAllRanges(); s.addRange(r);
			var text = s.toString(); s.removeAllRanges(); return text; })()`)
		if !strings.Contains(got, "ulimit -l 65536") {
			t.Fatalf("%s: the memlock block copies as %q", lang, got)
		}
		for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "#") {
				t.Errorf("%s: a copied line keeps its prompt: %q (all: %q)", lang, l, got)
			}
		}
	}
}
