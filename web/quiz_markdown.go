package web

import (
	"bytes"
	"html/template"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/yuin/goldmark"
)

// quizMarkdown renders question texts (prompt, options, feedback,
// explanation). goldmark's defaults escape raw HTML, so an author's stray
// tag shows as text instead of becoming markup in the learner's page.
var quizMarkdown = goldmark.New()

// markdownHTML renders a Markdown block. Results are memoized: question
// texts come from the loaded content, and rendering them with goldmark on
// every lesson page view cost ~4 ms a page (lessons are rendered once per
// content load; this keeps quiz texts to the same rule).
func markdownHTML(src string) template.HTML {
	if src == "" {
		return ""
	}
	if h, ok := markdownMemo.Load(src); ok {
		return h.(template.HTML)
	}
	var b bytes.Buffer
	if err := quizMarkdown.Convert([]byte(src), &b); err != nil {
		// goldmark only fails on writer errors, which a bytes.Buffer has none of.
		return template.HTML(template.HTMLEscapeString(src))
	}
	h := template.HTML(strings.TrimSpace(b.String()))
	if markdownMemoSize.Add(1) > markdownMemoMax {
		// Reloads add new texts; start over rather than grow without bound.
		markdownMemo.Clear()
		markdownMemoSize.Store(1)
	}
	markdownMemo.Store(src, h)
	return h
}

var (
	markdownMemo     sync.Map // Markdown source → template.HTML
	markdownMemoSize atomic.Int64
)

const markdownMemoMax = 10000

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
	return strings.Join(strings.Fields(plainTextMarkers.Replace(src)), " ")
}

// plainTextMarkers is built once: a Replacer is costly to build and safe to share.
var plainTextMarkers = strings.NewReplacer("`", "", "**", "")
