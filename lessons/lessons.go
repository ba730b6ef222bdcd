// Package lessons owns the course: loading lesson folders from an fs.FS,
// front matter, Markdown with rdmalab's directives rendered to HTML once per
// load, and validation with file:line diagnostics.
package lessons

import (
	"html/template"
	"io/fs"

	"github.com/rdmalab/rdmalab/quiz"
)

// Langs are the languages a lesson may be written in, the default first.
var Langs = []string{"zh", "en"}

// Course is every lesson of one content load. It is immutable once loaded;
// a reload builds a new Course.
type Course struct {
	Lessons   []*Lesson                 // sorted by Order, then Slug
	Questions map[string]*quiz.Question // every question of every lesson, by id
	Warnings  []Diagnostic              // non-fatal findings (e.g. a missing translation)

	// Drafts are the lesson folders of _drafts/ (drafts.go), loaded beside
	// the course on every load: instructors preview them, learners never
	// see them. Nil when there is no _drafts/ folder. DraftFindings are
	// their errors and warnings, paths under _drafts/; a draft's errors
	// never stop the course from loading.
	Drafts        *Course
	DraftFindings []Diagnostic

	fsys fs.FS // the source the course was loaded from, for OpenAsset
}

// Lesson is one lesson folder (slug = folder name, e.g. "01-why-rdma").
type Lesson struct {
	Slug  string
	Order int
	Pages map[string]*Page // by language; a missing language holds the fallback page
	Quiz  *quiz.Set        // nil when the folder has no quiz.yaml
	// Tasks are the lesson's :::task steps in page order (the same ids in
	// every language), each with its verify script read at load.
	Tasks []*Task
	// Programs are the lesson's :::program exercises in page order
	// (program.go), their files read at load.
	Programs []*Program
}

// Task is one :::task of a lesson: a step the learner performs in their
// terminal, checked by Script run inside the learner's own guest.
type Task struct {
	ID     string // unique in the lesson
	Path   string // the script's path in the lesson folder (tasks/memlock.sh)
	Script []byte // its text, read at load: a reload picks up edits
	Line   int    // the directive's line in the first language's page
	// SetupPath and Setup, from `setup=tasks/S.sh`, are a script the lab
	// runs as root in the learner's guest each time a terminal is opened
	// on the lesson's page, before it takes keystrokes: it prepares what
	// the task needs and the learner's shell may not do (load modules,
	// export a target) and grants the learner exactly the right the task
	// needs. Lesson code, never learner input; it must be idempotent.
	SetupPath string
	Setup     []byte
}

// Setups are the lesson's task setup scripts, in task order.
func (l *Lesson) Setups() [][]byte {
	var out [][]byte
	for _, t := range l.Tasks {
		if t.Setup != nil {
			out = append(out, t.Setup)
		}
	}
	return out
}

// Task returns the lesson's task with this id, or nil.
func (l *Lesson) Task(id string) *Task {
	for _, t := range l.Tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// Reference is a further-reading entry from front matter.
type Reference struct {
	Title string `yaml:"title"`
	URL   string `yaml:"url"`
}

// Heading is a table-of-contents entry (h2 and h3 of the body).
type Heading struct {
	Level int
	ID    string
	Text  string
}

// SegmentKind tells how the web layer renders a Segment.
type SegmentKind string

// Segment kinds.
const (
	SegHTML       SegmentKind = "html"       // pre-rendered trusted HTML
	SegExperiment SegmentKind = "experiment" // ::experiment ID key=value...
	SegQuiz       SegmentKind = "quiz"       // ::quiz QUESTION-ID
	SegCheckpoint SegmentKind = "checkpoint" // ::checkpoint (the lesson's questions: see Segment.Questions)
	SegDiagram    SegmentKind = "diagram"    // ::diagram ID  (HTML holds the rendered SVG)
	SegTerminal   SegmentKind = "terminal"   // ::terminal (a shell in the learner's own guest)
	SegTask       SegmentKind = "task"       // :::task ID SCRIPT … ::: (a step verified in the learner's guest)
	SegProgram    SegmentKind = "program"    // :::program ID DIR … ::: (C the learner writes, run in their guest)
)

// Segment is a piece of a rendered page body: either HTML or a directive that
// needs per-request rendering (experiment widgets, quiz forms).
type Segment struct {
	Kind   SegmentKind
	HTML   template.HTML     // SegHTML, SegDiagram
	ID     string            // experiment id, question id, diagram id
	Params map[string]string // experiment preset params
	Line   int               // source line of the directive

	// Script, for SegTask, is the verify script's path in the lesson
	// folder (HTML holds the task's rendered text); for SegProgram, the
	// program's folder.
	Script string
	// Setup, for SegTask, is the setup script's path (setup=…), or "".
	Setup string

	// Questions, for SegCheckpoint, are the ids of the lesson's questions
	// (quiz.yaml order) it asks: those no ::quiz directive places on the
	// page, or all of them with front matter `checkpoint: all`.
	Questions []string
	// AllInBody, for SegCheckpoint: the text places every question, so
	// the checkpoint asks none again and shows only the lesson's score
	// (check warns: a checkpoint should ask what the text did not).
	AllInBody bool
	// AfterHeading, for SegCheckpoint: it sits in a section the author
	// titled "Checkpoint" (heading id "checkpoint", or that text), so it
	// renders no heading of its own; ID is then that heading's id.
	AfterHeading bool
}

// Page is one language version of a lesson, rendered.
type Page struct {
	Lang          string
	Fallback      bool // true when the lesson has no file in Lang and this is another language's page
	SourceLang    string
	File          string
	Title         string
	Summary       string
	Order         int
	Duration      string
	Objectives    []string
	Prerequisites []string // lesson slugs
	Aliases       []string // old slugs (front matter aliases:)
	References    []Reference
	TOC           []Heading
	Body          []Segment
	QuestionIDs   []string // questions placed in the body, in order of appearance
	// CheckpointAll: the ::checkpoint asks every question of quiz.yaml
	// (front matter `checkpoint: all`); by default it asks only those the
	// text did not place with ::quiz.
	CheckpointAll bool
	// RevealAfter is how many wrong attempts a question takes before it
	// shows the right answer and the full explanation (front matter
	// `reveal_after`, DefaultRevealAfter when unset; 0: never by count —
	// a right answer or "show answer" still reveal it).
	RevealAfter int

	headingIDs map[string]int // every heading id of the page → line, for link checks
}

// DefaultRevealAfter is RevealAfter when the front matter does not set it.
const DefaultRevealAfter = 3

// Severity of a Diagnostic.
type Severity string

// Severities.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Diagnostic is one finding of Load/Check, printed as "file:line: message".
type Diagnostic struct {
	File     string
	Line     int
	Severity Severity
	Message  string
}
