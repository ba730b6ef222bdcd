package instructor

import (
	"testing"

	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// TestDashboardOptionTextAndPlurals: option texts lose their Markdown
// markers on the dashboard; counts say "1 learner" in English and have
// one form in Chinese.
func TestDashboardOptionTextAndPlurals(t *testing.T) {
	q := &quiz.Question{ID: "q", Type: quiz.Single, Prompt: quiz.Text{"en": "Pick"},
		Options: []quiz.Option{{ID: "a", Correct: true, Text: quiz.Text{"en": "`ulimit -l` is **too small**"}}, {ID: "b", Text: quiz.Text{"en": "b"}}}}
	atts := []quiz.Attempt{{Learner: "L", QuestionID: "q", Answer: quiz.Answer{Choice: "a"}, Correct: true}}
	st := quiz.ComputeStats([]*quiz.Question{q}, atts)
	dq := dashQuestion(q, st[0], atts, "en")
	if dq.Options[0].Text != "ulimit -l is too small" {
		t.Errorf("option text %q", dq.Options[0].Text)
	}
	for _, c := range []struct {
		lang string
		n    int
		want string
	}{
		{"en", 1, "1 learner"}, {"en", 2, "2 learners"}, {"en", 0, "0 learners"},
		{"zh", 1, "1 名学员"}, {"zh", 3, "3 名学员"},
	} {
		if got := views.Count(testStrings.Tr(c.lang), c.n, "count.learners"); got != c.want {
			t.Errorf("%s %d: %q, want %q", c.lang, c.n, got, c.want)
		}
	}
	if got := views.Count(testStrings.Tr("en"), 1, "count.attempts"); got != "1 attempt" {
		t.Errorf("%q", got)
	}
}

// testStrings are the area's strings merged with the page base's, as the
// server merges them (without the learner pages' tables).
var testStrings = page.NewStrings(Tables...)
