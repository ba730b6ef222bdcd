package quiz

import (
	"fmt"
	"strings"
)

// FileError is one finding about a quiz file, printed as "file:line: message".
// Warning findings (e.g. a missing translation) do not make a file unusable.
type FileError struct {
	File    string
	Line    int
	Message string
	Warning bool
}

// Error implements error.
func (e FileError) Error() string {
	prefix := ""
	if e.Warning {
		prefix = "warning: "
	}
	return fmt.Sprintf("%s:%d: %s%s", e.File, e.Line, prefix, e.Message)
}

// FileErrors is every finding of one Parse, in file order.
type FileErrors []FileError

// Error implements error: one finding per line.
func (es FileErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// HasErrors reports whether any finding is an error rather than a warning.
func (es FileErrors) HasErrors() bool {
	for _, e := range es {
		if !e.Warning {
			return true
		}
	}
	return false
}

// AnswerErrorKind says what is wrong with a submitted answer, so callers can
// pick a message in the learner's language without parsing strings.
type AnswerErrorKind string

// Kinds of AnswerError.
const (
	AnswerMissing       AnswerErrorKind = "missing"        // no answer given
	AnswerWrongType     AnswerErrorKind = "wrong_type"     // e.g. a list for a single-choice question
	AnswerUnknownOption AnswerErrorKind = "unknown_option" // an id the question does not have
	AnswerDuplicate     AnswerErrorKind = "duplicate"      // the same id given twice
	AnswerIncomplete    AnswerErrorKind = "incomplete"     // order: not every step placed
	AnswerNotANumber    AnswerErrorKind = "not_a_number"   // numeric: not a finite number
)

// AnswerError is a rejected answer (HTTP 400): nothing about it is graded or stored.
type AnswerError struct {
	QuestionID string
	Kind       AnswerErrorKind
	Option     string // the offending option id (40 characters at most, as learners typed it), for unknown_option and duplicate
	Message    string // English detail for logs and API clients
}

// Error implements error.
func (e *AnswerError) Error() string {
	return fmt.Sprintf("question %s: %s", e.QuestionID, e.Message)
}
