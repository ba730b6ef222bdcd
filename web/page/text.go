package page

import (
	"html/template"
	"strings"
)

// Question texts arrive rendered: lessons.RenderQuiz turns their Markdown
// into HTML once per content load (quiz.QuestionHTML, quiz.OptionHTML), as
// lesson bodies are; no page view runs Markdown.

// InlineHTML is a rendered one-paragraph text without its <p> wrapper, for
// labels, legends and feedback lines. Several paragraphs stay blocks.
func InlineHTML(h string) template.HTML {
	if inner, ok := strings.CutPrefix(h, "<p>"); ok {
		if inner, ok := strings.CutSuffix(inner, "</p>"); ok && !strings.Contains(inner, "<p>") {
			return template.HTML(inner)
		}
	}
	return template.HTML(h)
}

// PlainText is a Markdown text for places that cannot hold markup (select
// options): code spans and emphasis markers are dropped.
func PlainText(src string) string {
	return strings.Join(strings.Fields(plainTextMarkers.Replace(src)), " ")
}

// plainTextMarkers is built once: a Replacer is costly to build and safe to share.
var plainTextMarkers = strings.NewReplacer("`", "", "**", "")
