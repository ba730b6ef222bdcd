package lessons

import (
	"testing"

	"github.com/rdmalab/rdmalab/quiz"
)

func TestRenderQuiz(t *testing.T) {
	set := &quiz.Set{Questions: []*quiz.Question{{ID: "q", Type: quiz.Single,
		Prompt:      quiz.Text{"zh": "选 `a` <b>", "en": "Pick **a**"},
		Explanation: quiz.Text{"en": "One.\n\nTwo."},
		Options:     []quiz.Option{{ID: "a", Correct: true, Text: quiz.Text{"en": "`a`"}, Feedback: quiz.Text{"en": "", "zh": "对"}}}}}}
	RenderQuiz(set)
	q := set.Questions[0]
	for _, c := range []struct{ got, want string }{
		{q.HTML.Prompt["zh"], "<p>选 <code>a</code> <!-- raw HTML omitted --></p>"}, // raw HTML is not rendered
		{q.HTML.Prompt["en"], "<p>Pick <strong>a</strong></p>"},
		{q.HTML.Explanation["en"], "<p>One.</p>\n<p>Two.</p>"},
		{q.Options[0].HTML.Text["en"], "<p><code>a</code></p>"},
		{q.Options[0].HTML.Feedback["en"], ""},
		{q.Options[0].HTML.Feedback["zh"], "<p>对</p>"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if q.HTML.Hint != nil {
		t.Errorf("no hint rendered as %v", q.HTML.Hint)
	}
}

// Load renders every quiz.yaml it reads.
func TestLoadRendersQuiz(t *testing.T) {
	c, err := Load(Builtin, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Questions) == 0 {
		t.Fatal("the built-in course has no questions")
	}
	for id, q := range c.Questions {
		for _, lang := range Langs {
			if q.Prompt[lang] != "" && q.HTML.Prompt[lang] == "" {
				t.Errorf("%s: prompt.%s not rendered", id, lang)
			}
			for _, o := range q.Options {
				if o.Text[lang] != "" && o.HTML.Text[lang] == "" {
					t.Errorf("%s: option %s.%s not rendered", id, o.ID, lang)
				}
			}
		}
	}
}
