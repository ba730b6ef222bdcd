// Package quiz owns checkpoint questions: their file format (quiz.yaml),
// validation, grading, learner-facing feedback and class statistics.
// It imports nothing else from rdmalab but the leaf internal/i18n.
package quiz

import "github.com/rdmalab/rdmalab/internal/i18n"

// Type is the kind of a question; it decides how answers are decoded and graded.
type Type string

// Question types an author may use in quiz.yaml.
const (
	Single  Type = "single"  // exactly one option id
	Multi   Type = "multi"   // a set of option ids, all-or-nothing
	Numeric Type = "numeric" // a number within Tolerance of Value
	Order   Type = "order"   // all option ids, in the correct order
)

// Text is the shared localized text (internal/i18n): Get picks the
// requested language, then English, then any.
type Text = i18n.Text

// Option is one choice of a single/multi question or one step of an order question.
type Option struct {
	ID       string
	Text     Text
	Correct  bool // single/multi only
	Feedback Text // shown after a submission, for chosen and for missed-correct options
	HTML     OptionHTML
}

// OptionHTML is an option's Text and Feedback rendered from Markdown.
type OptionHTML struct {
	Text, Feedback Text
}

// QuestionHTML is a question's Markdown texts rendered to HTML, per
// language (block HTML, the same keys as the source texts). quiz renders
// nothing: whoever loads the content fills it once per load, as lesson
// bodies are rendered (lessons.RenderQuiz, called by lessons.Load).
type QuestionHTML struct {
	Prompt, Hint, Explanation Text
}

// Question is one checkpoint question as authored. Answers (Correct, Value,
// Feedback, Explanation) must never be sent to a browser before a submission.
type Question struct {
	ID          string // unique across the course, e.g. "why-rdma/overheads"
	Type        Type
	Prompt      Text // Markdown
	Options     []Option
	Value       float64      // numeric: correct value
	Tolerance   float64      // numeric: accepted absolute distance
	Unit        string       // numeric: unit shown beside the input
	Explanation Text         // Markdown
	Hint        Text         // optional
	File        string       // source file (for diagnostics)
	Line        int          // line of the question in File
	HTML        QuestionHTML // Prompt, Hint and Explanation (and each Option's texts) as HTML
}

// Set is the questions of one quiz.yaml file, in file order.
type Set struct {
	File      string
	Questions []*Question
}

// Answer is a learner's decoded answer; which field is used depends on the question type.
type Answer struct {
	Choice  string   // single
	Choices []string // multi (a set) and order (a sequence)
	Number  float64  // numeric
}

// OptionResult is the graded state of one option, in the learner's language.
type OptionResult struct {
	ID       string `json:"id"`
	Chosen   bool   `json:"chosen"`
	Correct  bool   `json:"correct"` // for order: the option is at its correct position
	Feedback string `json:"feedback,omitempty"`
}

// Result is the outcome of grading one answer, in the learner's language.
// Its JSON form is the body of POST /api/quiz/{id}/attempts.
type Result struct {
	Correct     bool           `json:"correct"`
	Options     []OptionResult `json:"options"`
	Explanation string         `json:"explanation"`
	// Tally is set on a withheld wrong answer to a multi or order
	// question (Withheld): how much of it is right, never which part.
	Tally *Tally `json:"tally,omitempty"`
}

// Tally counts the right part of a wrong answer without naming it.
//   - multi: Right of the Of options chosen belong to the answer;
//   - order: Right of the Of steps are at their right position.
type Tally struct {
	Right int `json:"right"`
	Of    int `json:"of"`
}

// Attempt is one stored submission, the input of statistics.
type Attempt struct {
	Learner    string
	QuestionID string
	Answer     Answer
	Correct    bool
	Seen       bool // made with the answer shown (Policy.Seen): never a success
}
