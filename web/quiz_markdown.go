package web

import (
	"bytes"
	"html/template"
	"strings"

	"github.com/yuin/goldmark"
)

// quizMarkdown renders question texts (prompt, options, feedback,
// explanation). goldmark's defaults escape raw HTML, so an author's stray
// tag shows as text instead of becoming markup in the learner's page.
var quizMarkdown = goldmark.New()

// markdownHTML renders a Markdown block.
func markdownHTML(src string) template.HTML {
	if src == "" {
		return ""
	}
	var b bytes.Buffer
	if err := quizMarkdown.Convert([]byte(src), &b); err != nil {
		// goldmark only fails on writer errors, which a bytes.Buffer has none of.
		return template.HTML(template.HTMLEscapeString(src))
	}
	return template.HTML(strings.TrimSpace(b.String()))
}

// markdownInline renders a one-paragraph text without its <p> wrapper, for
// labels, legends and feedback lines. Several paragraphs stay blocks.
func markdownInline(src string) template.HTML {
	h := string(markdownHTML(src))
	if inner, ok := strings.CutPrefix(h, "<p>"); ok {
		if inner, ok := strings.CutSuffix(inner, "</p>"); ok && !strings.Contains(inner, "<p>") {
			return template.HTML(inner)
		}
	}
	return template.HTML(h)
}

// plainText is a Markdown text for places that cannot hold markup (select
// options): code spans and emphasis markers are dropped.
func plainText(src string) string {
	r := strings.NewReplacer("`", "", "**", "")
	return strings.Join(strings.Fields(r.Replace(src)), " ")
}
