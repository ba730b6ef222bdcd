// Package views holds rdmalab's templ components: the page layout and one
// file per page. Components get plain view models built by web handlers and
// never touch the database or the request.
package views

import (
	"github.com/a-h/templ"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/static"
)

// Tr returns the UI string for key in the page's language.
type Tr func(key string) string

// LangLink is one entry of the header's language switch.
type LangLink struct {
	Code    string // "zh", "en"
	Label   string // the language's own name
	Href    string
	Current bool
}

// Chrome is what the layout needs on every page.
type Chrome struct {
	Lang    string // "zh" or "en"
	T       Tr
	Title   string // page title; the layout appends the course name
	Langs   []LangLink
	Scripts []string // asset paths under static/ (e.g. "js/run.js") loaded with defer
	Styles  []string // stylesheets under static/ linked after lab.css (see Use)
}

// HTMLLang is the value of <html lang>, specific enough for browsers to pick
// Simplified Chinese glyphs.
func (c Chrome) HTMLLang() string {
	if c.Lang == "zh" {
		return "zh-CN"
	}
	return c.Lang
}

// Asset is the versioned URL of a static asset.
func Asset(path string) string { return static.URL(path) }

// Link is a titled internal link.
type Link struct {
	Href  string
	Title string
}

// HomeLesson is one row of the course home page.
type HomeLesson struct {
	Slug      string
	Href      string
	Order     int
	Title     string
	Summary   string
	Duration  string
	Fallback  bool // shown in another language than requested
	Opened    bool
	Completed bool
	// Score is a short checkpoint summary (e.g. "2/3") filled in by the quiz
	// feature; empty hides it.
	Score string
}

// Home is the course home page.
type Home struct {
	Chrome
	Lessons []HomeLesson
}

// Lesson is a lesson page. Body holds one component per body segment,
// already chosen by the web layer (HTML, diagrams, widgets, quiz forms);
// Complete is the learner's completion box (CompleteBox).
type Lesson struct {
	Chrome
	Slug       string
	Page       *lessons.Page
	Prereqs    []Link
	Prev, Next *Link
	Body       []templ.Component
	Complete   templ.Component
	// References are the front-matter references the text does not link
	// already (a "Further reading" section): each is listed once.
	References []lessons.Reference
	// Banner, when set, is shown above the lesson's title (the draft
	// preview's "Draft preview" banner, drafts.go).
	Banner templ.Component
}

// ErrorPage is the 404 and 500 page.
type ErrorPage struct {
	Chrome
	Status  int
	Heading string
	Message string
}
