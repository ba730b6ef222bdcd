package web

import (
	"regexp"
	"sort"
	"testing"
)

// englishPlurals finds the forms issue 44 quotes: "(s)" ("attempt(s)")
// and "%d times" (which reads "1 times").
var englishPlurals = regexp.MustCompile(`\(s\)|%d times\b`)

// TestNoEnglishPluralForms (issue 44 item 8): no English UI string says
// "attempt(s)" or "1 times": a count stands after a colon, or the singular
// has a key of its own (task.checks and task.checks1).
func TestNoEnglishPluralForms(t *testing.T) {
	var bad []string
	for key, s := range ui.Table["en"] {
		if _, one := ui.Table["en"][key+"1"]; !one && englishPlurals.MatchString(s) {
			bad = append(bad, key+": "+s)
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("plural form a count of 1 reads wrong: %s", b)
	}
}
