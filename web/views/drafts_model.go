package views

// Drafts is /instructor/drafts: the lessons of the course's _drafts/
// folder with their check findings (web/instructor/drafts.go, web/draft_preview.go).
type Drafts struct {
	Chrome
	Present  bool         // the course folder has a _drafts/ folder
	Drafts   []DraftEntry // in course order
	Findings []string     // findings of no listed draft (e.g. a misnamed folder)
	Errors   int          // error findings of all drafts
}

// DraftEntry is one draft lesson in the list.
type DraftEntry struct {
	Slug     string
	Title    string
	Href     string
	Langs    string   // the languages it is written in, e.g. "zh, en"
	Findings []string // "file:line: message" lines
	Errors   int
}
