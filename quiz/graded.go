package quiz

import (
	"errors"
	"time"
)

// Graded mode (issue 29). A class may make a lesson's questions graded
// work; practice mode (Policy without Graded) stays what it was. The rules,
// in one place, for the page, the JSON answer, the gradebook, the exports
// and the LMS passback alike:
//
//   - The questions take answers from Opens until Closes. An answer before
//     Opens or from Closes on is refused (AdmitError), stored nowhere and
//     counted nowhere.
//   - Each question takes at most Limit answers; the next is refused.
//   - One answer per question counts (Counts): the first, the last, or the
//     best (right if any is right). Only answers made between Opens and
//     Closes count, at most the first Limit of them; a right answer made
//     with the answer shown (Seen) is never right here either.
//   - "Show answer" between Opens and Closes scores the question zero,
//     whatever is answered before or after; it is flagged in the exports.
//   - Until Closes the learner sees whether an answer is right and nothing
//     else: no marks on options, no feedback, no tally, no explanation
//     (Result.Sealed), unless they chose "show answer". From Closes on every
//     question shows its answer and explanation.
//   - A lesson is complete when every question has a counted answer (the
//     caller adds the lesson's other work: tasks, programs).

// Counts says which of a learner's answers to a question counts.
type Counts string

// The answers that may count.
const (
	CountFirst Counts = "first"
	CountLast  Counts = "last"
	CountBest  Counts = "best"
)

// Valid reports whether c is one of the three.
func (c Counts) Valid() bool { return c == CountFirst || c == CountLast || c == CountBest }

// MaxLimit bounds a graded question's attempt limit.
const MaxLimit = 20

// Graded is a class's graded setting of one lesson.
type Graded struct {
	Opens, Closes time.Time
	Limit         int // answers per question, 1..MaxLimit
	Counts        Counts
}

// ErrGradedSetting is returned by Check for a setting that cannot work.
var ErrGradedSetting = errors.New("quiz: graded setting")

// Check reports whether g can be used: Opens before Closes, a limit in
// 1..MaxLimit, a known Counts.
func (g Graded) Check() error {
	switch {
	case g.Opens.IsZero() || g.Closes.IsZero() || !g.Opens.Before(g.Closes):
		return ErrGradedSetting
	case g.Limit < 1 || g.Limit > MaxLimit:
		return ErrGradedSetting
	case !g.Counts.Valid():
		return ErrGradedSetting
	}
	return nil
}

// Phase is where a moment falls in a graded lesson's window.
type Phase int

// The phases of a graded lesson.
const (
	BeforeOpen Phase = iota // answers refused, answers hidden
	Open                    // answers taken up to Limit, answers hidden
	Closed                  // answers refused, answers shown
)

// PhaseAt is the phase at t.
func (g Graded) PhaseAt(t time.Time) Phase {
	switch {
	case t.Before(g.Opens):
		return BeforeOpen
	case t.Before(g.Closes):
		return Open
	}
	return Closed
}

// Refusal names why a graded answer is refused.
type Refusal string

// The refusals of Admit.
const (
	RefusedNotOpen Refusal = "notopen" // before Opens
	RefusedClosed  Refusal = "closed"  // from Closes on
	RefusedUsedUp  Refusal = "usedup"  // Limit answers made already
)

// AdmitError is an answer (or a "show answer") graded mode refuses.
type AdmitError struct{ Refusal Refusal }

func (e *AdmitError) Error() string { return "quiz: graded answer refused: " + string(e.Refusal) }

// Admit says whether an answer made at now, after made answers in the
// window, is taken (nil) or refused (*AdmitError).
func (g Graded) Admit(now time.Time, made int) error {
	switch g.PhaseAt(now) {
	case BeforeOpen:
		return &AdmitError{RefusedNotOpen}
	case Closed:
		return &AdmitError{RefusedClosed}
	}
	if made >= g.Limit {
		return &AdmitError{RefusedUsedUp}
	}
	return nil
}

// AdmitReveal says whether "show answer" at now is taken: only while the
// lesson is open (before, it would hand out the answers; after, they are
// shown anyway).
func (g Graded) AdmitReveal(now time.Time) error {
	switch g.PhaseAt(now) {
	case BeforeOpen:
		return &AdmitError{RefusedNotOpen}
	case Closed:
		return &AdmitError{RefusedClosed}
	}
	return nil
}

// Try is one answer to a question as graded mode sees it, in time order.
type Try struct {
	At      time.Time
	Correct bool
	Seen    bool // made with the answer shown (Policy.Seen): never right here
}

// Counted is the tries that can count: made in the window, at most the
// first Limit of them (a race past Admit does not add one).
func (g Graded) Counted(tries []Try) []Try {
	var out []Try
	for _, t := range tries {
		if g.PhaseAt(t.At) == Open && len(out) < g.Limit {
			out = append(out, t)
		}
	}
	return out
}

// Revealed reports whether any of the "show answer" times falls in the window.
func (g Graded) Revealed(reveals []time.Time) bool {
	for _, at := range reveals {
		if g.PhaseAt(at) == Open {
			return true
		}
	}
	return false
}

// QuestionGrade is a learner's graded result on one question.
type QuestionGrade struct {
	Point    int  // 1 or 0
	Answered bool // a counted answer exists
	Revealed bool // "show answer" in the window: Point is 0
	Tries    int  // counted answers
}

// Question grades one question from the learner's tries and "show
// answer" times (all of them: Question keeps those in the window).
func (g Graded) Question(tries []Try, reveals []time.Time) QuestionGrade {
	c := g.Counted(tries)
	qg := QuestionGrade{Answered: len(c) > 0, Tries: len(c), Revealed: g.Revealed(reveals)}
	if qg.Revealed || len(c) == 0 {
		return qg
	}
	right := func(t Try) bool { return t.Correct && !t.Seen }
	switch g.Counts {
	case CountFirst:
		if right(c[0]) {
			qg.Point = 1
		}
	case CountLast:
		if right(c[len(c)-1]) {
			qg.Point = 1
		}
	default:
		for _, t := range c {
			if right(t) {
				qg.Point = 1
			}
		}
	}
	return qg
}

// LessonGrade is a learner's graded result on a lesson's questions.
type LessonGrade struct {
	Score, Questions int
	Answered         int      // questions with a counted answer
	Revealed         []string // ids of questions revealed in the window (scored 0)
}

// QuizDone reports whether every question has a counted answer.
func (l LessonGrade) QuizDone() bool { return l.Answered == l.Questions }

// Lesson grades the questions ids from each question's tries and "show
// answer" times.
func (g Graded) Lesson(ids []string, tries map[string][]Try, reveals map[string][]time.Time) LessonGrade {
	out := LessonGrade{Questions: len(ids)}
	for _, id := range ids {
		qg := g.Question(tries[id], reveals[id])
		out.Score += qg.Point
		if qg.Answered {
			out.Answered++
		}
		if qg.Revealed {
			out.Revealed = append(out.Revealed, id)
		}
	}
	return out
}

// Sealed is r as graded mode shows it before Closes: whether it is right,
// which options were chosen, nothing that tells the answer (no option
// marks, feedback, tally or explanation).
func (r Result) Sealed() Result {
	out := Result{Correct: r.Correct, Options: []OptionResult{}}
	for _, o := range r.Options {
		if o.Chosen {
			out.Options = append(out.Options, OptionResult{ID: o.ID, Chosen: true})
		}
	}
	return out
}

// Work is a learner's work on a graded lesson besides its questions.
type Work struct {
	TasksDone, Tasks         int
	ProgramsPassed, Programs int
}

// Complete is "complete" where a lesson is graded: computed from the
// work, never self-declared — every question has a counted answer, every
// task passed its check, every program exercise passed. The gradebook and
// the learner's page both decide it here.
func (l LessonGrade) Complete(w Work) bool {
	return l.QuizDone() && w.TasksDone >= w.Tasks && w.ProgramsPassed >= w.Programs
}

// ProgramPoint reports whether a program exercise earns its point in a
// lesson's score (the gradebook's points and the LMS score): it passed
// its check before any solution was shown to the learner (a pass after
// is the solution's, as an answer after "show answer" scores nothing),
// and, where the lesson is graded, before the close (closes; zero: not
// graded). A pass before the window opened counts: a program's check
// cannot be guessed, and the work is the learner's.
func ProgramPoint(passedAt, solutionAt, closes time.Time) bool {
	switch {
	case passedAt.IsZero():
		return false
	case !solutionAt.IsZero() && !passedAt.Before(solutionAt):
		return false
	}
	return closes.IsZero() || passedAt.Before(closes)
}
