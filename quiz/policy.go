package quiz

import "time"

// Policy is when a question shows its answer to a learner and what an
// attempt earns. It is applied once per attempt, when the attempt is graded
// and stored (Seen), and again for each rendering of the question (Shown),
// so the page, the JSON answer and every score agree.
type Policy struct {
	// RevealAfter is the number of wrong attempts after which the answer
	// shows by itself (0: only a right answer or "show answer" shows it).
	RevealAfter int
	// Graded, when set, is the learner's class's graded setting of the
	// lesson (graded.go), judged at Now: RevealAfter does not apply, and
	// before Closes only the learner's own "show answer" shows the answer.
	Graded *Graded
	Now    time.Time
}

// sealed reports whether the policy is graded and not yet closed.
func (p Policy) sealed() bool {
	return p.Graded != nil && p.Graded.PhaseAt(p.Now) != Closed
}

// Record is a learner's history on one question before an attempt.
type Record struct {
	Attempts int  // attempts so far
	Correct  bool // one of them was right and clean (not Seen)
	Revealed bool // the learner chose "show answer"
}

// Shown reports whether the answer and explanation are on the learner's
// screen: after a clean right answer, a reveal, or RevealAfter attempts.
func (p Policy) Shown(r Record) bool {
	if p.Graded != nil {
		// Graded: shown once closed, or after the learner's own reveal.
		return !p.sealed() || r.Revealed
	}
	return r.Correct || r.Revealed || p.RevealAfter > 0 && r.Attempts >= p.RevealAfter
}

// Seen reports whether an attempt made now is made with the answer shown
// for any reason but an earlier right answer: such an attempt is recorded,
// graded for the learner's feedback, and never counts as a clean success
// (trying every option after "show answer" proves nothing).
func (p Policy) Seen(r Record) bool {
	return !r.Correct && p.Shown(r)
}

// View is what the learner is shown of res, the graded attempt, given their
// record with this attempt counted: res as it is when the answer is shown
// (a right answer, a reveal, RevealAfter attempts), else res.Withheld,
// and whether it was withheld. In graded mode before Closes it is
// res.Sealed (right or not, nothing more), even for a right answer, unless
// the learner chose "show answer". The page and the JSON answer both take
// it from here, so neither tells more than the other.
func (p Policy) View(t Type, res Result, r Record) (Result, bool) {
	if p.Graded != nil {
		if p.Shown(r) {
			return res, false
		}
		return res.Sealed(), true
	}
	if res.Correct || p.Shown(r) {
		return res, false
	}
	return res.Withheld(t), true
}
