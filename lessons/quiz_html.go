package lessons

import (
	"bytes"
	"html"
	"strings"

	"github.com/yuin/goldmark"

	"github.com/rdmalab/rdmalab/quiz"
)

// quizMarkdown renders question texts (prompt, options, feedback, hint,
// explanation). goldmark's defaults leave raw HTML out (an HTML comment
// in its place), so an author's stray tag never becomes markup in the
// learner's page; Load warns about it (quizHTML in load.go).
var quizMarkdown = goldmark.New()

// RenderQuiz fills the HTML of every question of set (prompt, hint,
// explanation, each option's text and feedback), per language: once per
// content load, like lesson bodies, so no page view runs Markdown. Load
// calls it for every quiz.yaml; a caller that builds a course by hand (a
// test) calls it too.
func RenderQuiz(set *quiz.Set) {
	for _, q := range set.Questions {
		q.HTML = quiz.QuestionHTML{Prompt: quizHTML(q.Prompt), Hint: quizHTML(q.Hint), Explanation: quizHTML(q.Explanation)}
		for i := range q.Options {
			o := &q.Options[i]
			o.HTML = quiz.OptionHTML{Text: quizHTML(o.Text), Feedback: quizHTML(o.Feedback)}
		}
	}
}

// quizHTML renders each language of t; an empty text stays empty.
func quizHTML(t quiz.Text) quiz.Text {
	if t == nil {
		return nil
	}
	out := make(quiz.Text, len(t))
	for lang, src := range t {
		if src == "" {
			out[lang] = ""
			continue
		}
		var b bytes.Buffer
		if err := quizMarkdown.Convert([]byte(src), &b); err != nil {
			// goldmark only fails on writer errors, which a bytes.Buffer has none of.
			out[lang] = html.EscapeString(src)
			continue
		}
		out[lang] = strings.TrimSpace(b.String())
	}
	return out
}
