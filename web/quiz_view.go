package web

import (
	"context"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// DOM ids of question sections. Question ids never contain ':' and option
// ids never contain '/' or ':', so the prefixes and suffixes below cannot
// collide: a question placed with ::quiz is "q-ID", the same question in the
// checkpoint is "cp-ID", a repeated ::quiz placement "q-ID~2".
const (
	inlinePrefix     = "q-"
	checkpointPrefix = "cp-"
)

// quizPage is the quiz part of one lesson page request.
type quizPage struct {
	// Shown is a graded attempt (?attempt=) or a rejected form submission
	// to display; nil on a plain page view.
	Shown *quizShown

	status   map[string]store.QuestionSummary // the learner's records, loaded once per page
	loaded   bool
	placedAt map[string]int                  // ::quiz placements so far, for unique DOM ids
	latest   map[string]store.QuestionStatus // the page's questions' latest attempts, loaded by shownAt on first use

	// hole, set while the static page skeleton is built (lesson_static.go),
	// places a hole where a learner's record goes instead of rendering one.
	hole func(skeletonHole) templ.Component
}

// quizShown is what one question shows instead of an empty form.
type quizShown struct {
	QuestionID string
	Anchor     string // the placement it was submitted from ("" = every placement)
	Answer     *quiz.Answer
	// Graded is Answer's result when the request already graded it (a
	// submission: graded once, when it was stored); nil grades it here.
	Graded *quiz.Result
	Values []string // rejected form values, to refill the form
	Error  string
	// Reveal: show the answer the learner asked for (no answer of theirs).
	Reveal bool
	// Revealed: the learner asked for this answer before, so a graded
	// answer shows everything.
	Revealed bool
	// Seen: the attempt shown was made with the answer shown: right or
	// not, it earns no credit, and the verdict says so.
	Seen bool
}

// quizCtx is what a question's rendering needs beyond the question.
type quizCtx struct {
	// Learner seeds the order of a choice question's options; "" keeps
	// the authored order (the static skeleton, which leaves a hole there).
	Learner string
	// RevealAfter is the lesson's number of wrong attempts after which a
	// question shows its answer (0: only a right answer or "show answer").
	RevealAfter int
	// Preview: the page is a draft's preview (draft_preview.go); its questions
	// cannot be answered.
	Preview bool
	// Graded: the lesson is graded work for the learner (graded.go); nil
	// in practice mode.
	Graded *gradedLesson
}

// policy is the quiz.Policy of the lesson the question is answered on.
func (qc quizCtx) policy() quiz.Policy {
	p := quiz.Policy{RevealAfter: qc.RevealAfter}
	if qc.Graded != nil {
		p.Graded, p.Now = &qc.Graded.Rules, qc.Graded.Now
	}
	return p
}

// record is the learner's record on question id as qc's policy judges it:
// in practice their status (st) and whether they asked for the answer; in
// graded mode only what they did in the window (practice before it
// neither shows the answer nor spoils an answer).
func (qc quizCtx) record(id string, st views.QuizStatus, revealed bool) quiz.Record {
	if g := qc.Graded; g != nil {
		return quiz.Record{Attempts: g.Used(id), Revealed: g.Revealed(id)}
	}
	return quiz.Record{Attempts: st.Attempts, Correct: st.EverCorrect, Revealed: revealed}
}

// shownRecord is the learner's record as a shown attempt is judged: their
// status now (with that attempt counted) and whether they asked for the
// answer.
func (qc quizCtx) shownRecord(id string, st views.QuizStatus, shown *quizShown) quiz.Record {
	return qc.record(id, st, shown.Revealed)
}

// attemptsPath is the endpoint a question's form posts to.
func attemptsPath(questionID string) string {
	return "/api/quiz/" + questionID + "/attempts"
}

// validAnchor reports whether anchor is a DOM id the page can give question id.
func validAnchor(id, anchor string) bool {
	if anchor == checkpointPrefix+id || anchor == inlinePrefix+id {
		return true
	}
	n, ok := strings.CutPrefix(anchor, inlinePrefix+id+"~")
	if !ok {
		return false
	}
	i, err := strconv.Atoi(n)
	return err == nil && i >= 2 && strconv.Itoa(i) == n
}

// quizFromQuery reads ?attempt=ID&at=ANCHOR, the target of the no-JS
// redirect after a submission. The attempt is loaded from the store for this
// learner and re-graded from what was stored: nothing in the URL is trusted
// beyond the id, and another learner's attempt id shows nothing.
func (s *Server) quizFromQuery(r *http.Request) *quizPage {
	id, err := strconv.ParseInt(r.URL.Query().Get("attempt"), 10, 64)
	if err != nil || id <= 0 {
		return nil
	}
	a, err := s.cfg.Store.Attempt(r.Context(), learnerID(r), id)
	if err != nil {
		return nil
	}
	ans := quiz.StoredAnswer(a.Answer)
	shown := &quizShown{QuestionID: a.QuestionID, Answer: &ans, Seen: a.Seen}
	shown.Revealed, _ = s.cfg.Store.Revealed(r.Context(), learnerID(r), a.QuestionID)
	if at := r.URL.Query().Get("at"); validAnchor(a.QuestionID, at) {
		shown.Anchor = at
	}
	return &quizPage{Shown: shown}
}

// quizQuery is what the lesson's query asks a question to show: a graded
// attempt (?attempt=) or a revealed answer (?reveal=).
func (s *Server) quizQuery(r *http.Request) *quizPage {
	if qp := s.quizFromQuery(r); qp != nil {
		return qp
	}
	return s.revealFromQuery(r)
}

// revealFromQuery reads ?reveal=QUESTION&at=ANCHOR, the target of the
// no-JS "show answer": shown only when the store has the learner's reveal.
func (s *Server) revealFromQuery(r *http.Request) *quizPage {
	id := r.URL.Query().Get("reveal")
	if id == "" {
		return nil
	}
	if ok, err := s.cfg.Store.Revealed(r.Context(), learnerID(r), id); err != nil || !ok {
		return nil
	}
	shown := &quizShown{QuestionID: id, Reveal: true, Revealed: true}
	if at := r.URL.Query().Get("at"); validAnchor(id, at) {
		shown.Anchor = at
	}
	return &quizPage{Shown: shown}
}

// quizState returns the request's quiz state, loading the learner's records
// (every question they attempted, one cached query) on first use.
func (s *Server) quizState(lr *lessonRequest) (*quizPage, error) {
	qp := lr.State.Quiz
	if qp == nil {
		qp = &quizPage{}
		lr.State.Quiz = qp
	}
	if !qp.loaded {
		st, err := s.cfg.Store.LearnerQuizSummary(lr.r.Context(), lr.Learner)
		if err != nil {
			return nil, err
		}
		qp.status, qp.loaded, qp.placedAt = st, true, map[string]int{}
	}
	return qp, nil
}

// quizSegment renders a question placed with ::quiz ID.
func (s *Server) quizSegment(lr *lessonRequest, seg lessons.Segment) templ.Component {
	q := lr.Course.Questions[seg.ID]
	if q == nil { // check rejects this; a live reload may still race
		return views.Placeholder(string(seg.Kind), seg.ID, trf(lr.Lang, "quiz.unknown", seg.ID))
	}
	qp, err := s.quizState(lr)
	if err != nil {
		return failing(err)
	}
	qp.placedAt[q.ID]++
	dom := inlinePrefix + q.ID
	if n := qp.placedAt[q.ID]; n > 1 {
		dom += "~" + strconv.Itoa(n)
	}
	v := questionView(lr.Lang, q, dom, lr.Lesson.Slug, 0, summaryStatus(qp.status[q.ID]), s.shownAt(lr, qp, q.ID), lr.quizCtx())
	if qp.hole != nil {
		v.StatusSlot = qp.hole(skeletonHole{kind: holeQuizStatus, id: q.ID})
		if choiceQuestion(q) {
			v.OptionsSlot = qp.hole(optionsHole(q, dom, v))
		}
	}
	return views.QuizQuestionView(v)
}

// checkpointSegment renders ::checkpoint: the questions the lesson's text
// did not ask (all of them with `checkpoint: all`), with the learner's
// score. Under the author's "Checkpoint" heading it adds none of its own.
func (s *Server) checkpointSegment(lr *lessonRequest, seg lessons.Segment) templ.Component {
	if lr.Lesson.Quiz == nil {
		return views.Placeholder(string(lessons.SegCheckpoint), lr.Lesson.Slug, trf(lr.Lang, "quiz.nocheckpoint"))
	}
	qp, err := s.quizState(lr)
	if err != nil {
		return failing(err)
	}
	v := views.Quiz{T: lr.T}
	if seg.AfterHeading {
		v.LabelledBy = seg.ID
	}
	qs := checkpointQuestions(lr.Course, lr.Lesson, seg)
	// The score counts every question of the lesson, asked here or in the
	// text, as the course home and the gradebook do: one count everywhere.
	all := lr.Lesson.Quiz.Questions
	v.Total, v.AllInBody = len(all), seg.AllInBody
	if qp.hole != nil {
		ids := make([]string, len(all))
		for i, q := range all {
			ids[i] = q.ID
		}
		v.ScoreSlot = qp.hole(skeletonHole{kind: holeQuizScore, ids: ids})
	}
	for _, q := range all {
		if qp.status[q.ID].EverCorrect {
			v.Correct++
		}
	}
	for i, q := range qs {
		st := summaryStatus(qp.status[q.ID])
		dom := checkpointPrefix + q.ID
		qv := questionView(lr.Lang, q, dom, lr.Lesson.Slug, i+1, st, s.shownAt(lr, qp, q.ID), lr.quizCtx())
		if qp.hole != nil {
			qv.StatusSlot = qp.hole(skeletonHole{kind: holeQuizStatus, id: q.ID})
			if choiceQuestion(q) {
				qv.OptionsSlot = qp.hole(optionsHole(q, dom, qv))
			}
		}
		v.Questions = append(v.Questions, qv)
	}
	return views.QuizCheckpoint(v)
}

// shownAt is what question id shows on a page view: the attempt or reveal
// the query asks for, else the learner's own latest answer (with its
// feedback and, where quiz.Policy shows it, the explanation) or the
// answer they asked for, so a reload keeps what the learner saw. The
// static skeleton (no learner) shows the empty form.
func (s *Server) shownAt(lr *lessonRequest, qp *quizPage, id string) *quizShown {
	if qp.Shown != nil && qp.Shown.QuestionID == id {
		return qp.Shown
	}
	if qp.hole != nil || lr.Learner == "" || lr.Draft {
		return nil
	}
	sum := qp.status[id]
	if sum.Attempts == 0 && !sum.Revealed {
		return nil
	}
	if qp.latest == nil {
		ids := append([]string(nil), lr.Page.QuestionIDs...)
		st, err := s.cfg.Store.LearnerQuestionStatus(lr.r.Context(), lr.Learner, ids)
		if err != nil {
			s.log.Warn("load the learner's latest answers", "err", err)
			st = map[string]store.QuestionStatus{}
		}
		qp.latest = st
	}
	st, ok := qp.latest[id]
	if !ok || st.Attempts == 0 {
		if sum.Revealed {
			return &quizShown{QuestionID: id, Reveal: true, Revealed: true}
		}
		return nil
	}
	ans := quiz.StoredAnswer(st.Latest.Answer)
	return &quizShown{QuestionID: id, Answer: &ans, Revealed: sum.Revealed, Seen: st.Latest.Seen}
}

// failing is a component whose rendering fails with err: the page handler
// turns it into a clean 500 instead of a page with a hole.
func failing(err error) templ.Component {
	return templ.ComponentFunc(func(context.Context, io.Writer) error { return err })
}

// checkpointQuestions are the questions a ::checkpoint asks, in quiz.yaml
// order (Segment.Questions; every question of the lesson for a segment
// built before the loader filled them).
func checkpointQuestions(c *lessons.Course, l *lessons.Lesson, seg lessons.Segment) []*quiz.Question {
	if seg.AllInBody {
		return nil
	}
	if len(seg.Questions) == 0 {
		return l.Quiz.Questions
	}
	out := make([]*quiz.Question, 0, len(seg.Questions))
	for _, id := range seg.Questions {
		if q := c.Questions[id]; q != nil {
			out = append(out, q)
		}
	}
	return out
}

// choiceQuestion reports whether q's options are shuffled per learner.
func choiceQuestion(q *quiz.Question) bool {
	return q.Type == quiz.Single || q.Type == quiz.Multi
}

// quizCtx is the request's question context: the learner and the lesson's
// reveal rule.
func (lr *lessonRequest) quizCtx() quizCtx {
	qc := quizCtx{Learner: lr.Learner, RevealAfter: lessons.DefaultRevealAfter, Preview: lr.Draft, Graded: lr.Graded}
	if lr.Page != nil {
		qc.RevealAfter = lr.Page.RevealAfter
	}
	if lr.State.Quiz != nil && lr.State.Quiz.hole != nil {
		qc.Learner = "" // the skeleton: the learner's order goes in a hole
	}
	return qc
}

// questionView builds the form of q at DOM id dom. Only the texts a learner
// needs to answer go in, unless shown carries a graded answer, a revealed
// answer or a rejected submission for this placement. A wrong answer keeps
// the answer hidden (feedback on what was chosen, the hint) until the
// learner answers right, asks for it, or has made qc.RevealAfter attempts.
func questionView(lang string, q *quiz.Question, dom, lesson string, number int, st views.QuizStatus, shown *quizShown, qc quizCtx) views.QuizQuestion {
	t := tr(lang)
	v := views.QuizQuestion{
		T:         t,
		DOMID:     dom,
		ID:        q.ID,
		Type:      string(q.Type),
		Action:    attemptsPath(q.ID),
		Lesson:    lesson,
		Number:    number,
		Prompt:    page.InlineHTML(q.HTML.Prompt.Get(lang)),
		Hint:      page.InlineHTML(q.HTML.Hint.Get(lang)),
		Unit:      q.Unit,
		Status:    st,
		CanReveal: true,
		Preview:   qc.Preview,
	}
	if g := qc.Graded; g != nil && !qc.Preview {
		gradedView(&v, lang, q.ID, g)
	}
	text := map[string]template.HTML{} // option id → its text, rendered
	for _, o := range q.OptionsFor(qc.Learner) {
		h := page.InlineHTML(o.HTML.Text.Get(lang))
		text[o.ID] = h
		v.Options = append(v.Options, views.QuizOption{
			ID: o.ID, InputID: dom + ":" + o.ID, Text: h, Plain: page.PlainText(o.Text.Get(lang)),
		})
	}
	if shown == nil || shown.QuestionID != q.ID || (shown.Anchor != "" && shown.Anchor != dom) {
		if g := qc.Graded; g != nil && !qc.Preview && qc.Learner != "" && g.Phase() == quiz.Closed {
			// Closed: every question shows its answer, answered or not.
			revealView(&v, q, lang, text)
			v.Result.Closed = true
		}
		return v
	}
	if shown.Error != "" {
		v.Error = shown.Error
		prefill(&v, q, quiz.Answer{Choices: shown.Values, Choice: firstValue(shown.Values)}, firstValue(shown.Values))
		return v
	}
	if shown.Reveal {
		revealView(&v, q, lang, text)
		v.Result.Closed = qc.Graded != nil && qc.Graded.Phase() == quiz.Closed
		return v
	}
	if shown.Answer == nil {
		return v
	}
	a := *shown.Answer
	var res quiz.Result
	if shown.Graded != nil {
		res = *shown.Graded
	} else {
		res = quiz.Grade(q, a, lang)
	}
	v.Result = &views.QuizResult{Correct: res.Correct, Seen: shown.Seen}
	res, withheld := qc.policy().View(q.Type, res, qc.shownRecord(q.ID, st, shown))
	if withheld && qc.Graded != nil {
		// Sealed until the close: right or not, the learner's own choice
		// kept in the form, no marks.
		v.Result.Withheld, v.Result.Sealed = true, true
		v.Result.RevealNote = trf(lang, "graded.sealed.note", page.ZoneTime(lang, qc.Graded.Rules.Closes, qc.Graded.Loc))
		if q.Type == quiz.Numeric {
			v.Result.Number = strconv.FormatFloat(a.Number, 'g', -1, 64)
		}
		prefill(&v, q, a, v.Result.Number)
		return v
	} else if withheld {
		v.Result.Withheld = true
		if res.Tally != nil {
			v.Result.Tally = tallyText(lang, q.Type, *res.Tally)
		}
		if qc.RevealAfter > 0 {
			v.Result.RevealNote = trf(lang, "quiz.reveal.after", max(qc.RevealAfter-st.Attempts, 1))
		} else {
			v.Result.RevealNote = t("quiz.reveal.only")
		}
	} else {
		v.Result.Explanation = template.HTML(q.HTML.Explanation.Get(lang)) // res.Explanation, rendered
		v.CanReveal = false
	}
	if q.Type == quiz.Numeric {
		v.Result.Number = strconv.FormatFloat(a.Number, 'g', -1, 64)
	}
	byID := map[string]*views.QuizResultOption{}
	for _, o := range res.Options {
		ro := views.QuizResultOption{ID: o.ID, Text: text[o.ID], Chosen: o.Chosen, Correct: o.Correct}
		if o.Feedback != "" { // Grade set it (and Withheld kept it): show it rendered
			if qo := q.Option(o.ID); qo != nil {
				ro.Feedback = page.InlineHTML(qo.HTML.Feedback.Get(lang))
			}
		}
		if q.Type == quiz.Order {
			v.Result.Placed = append(v.Result.Placed, ro)
		}
		byID[o.ID] = &ro
	}
	if q.Type != quiz.Order {
		for i := range v.Options {
			v.Options[i].Result = byID[v.Options[i].ID]
		}
	}
	prefill(&v, q, a, v.Result.Number)
	return v
}

// gradedView adds graded mode to a question's view: the status line with
// answers used, what counts and the dates in the class's zone; why it
// takes no answer now, if so; "show answer" only while it can be taken.
func gradedView(v *views.QuizQuestion, lang, id string, g *gradedLesson) {
	v.Graded = true
	used := g.Used(id)
	v.Status.GradedUsed, v.Status.GradedLimit = used, g.Rules.Limit
	v.Status.GradedCounts = tr(lang)("graded.counts." + string(g.Rules.Counts))
	v.Status.GradedCloses = page.ZoneTime(lang, g.Rules.Closes, g.Loc)
	v.Status.GradedRevealed = g.Revealed(id)
	switch g.Phase() {
	case quiz.BeforeOpen:
		v.Status.GradedOpens = page.ZoneTime(lang, g.Rules.Opens, g.Loc)
		v.Locked = trf(lang, "graded.locked.notopen", v.Status.GradedOpens)
	case quiz.Closed:
		v.Locked = trf(lang, "graded.locked.closed", v.Status.GradedCloses)
	default:
		if used >= g.Rules.Limit {
			v.Locked = tr(lang)("graded.locked.usedup")
		}
	}
	v.CanReveal = v.Locked == "" && !v.Status.GradedRevealed
}

// revealView shows q's answer because the learner asked for it: the right
// options (or order, or number), their feedback and the explanation.
func revealView(v *views.QuizQuestion, q *quiz.Question, lang string, text map[string]template.HTML) {
	v.CanReveal = false
	v.Result = &views.QuizResult{Revealed: true, Explanation: template.HTML(q.HTML.Explanation.Get(lang))}
	switch q.Type {
	case quiz.Numeric:
		v.Result.Number = strconv.FormatFloat(q.Value, 'g', -1, 64)
	case quiz.Order:
		for _, o := range q.Options {
			v.Result.Placed = append(v.Result.Placed, views.QuizResultOption{ID: o.ID, Text: text[o.ID], Answer: true})
		}
	default:
		for i := range v.Options {
			o := q.Option(v.Options[i].ID)
			if o != nil && o.Correct {
				v.Options[i].Result = &views.QuizResultOption{ID: o.ID, Correct: true, Answer: true, Feedback: page.InlineHTML(o.HTML.Feedback.Get(lang))}
			}
		}
	}
}

// summaryStatus is a learner's cached summary as the status line shows it.
func summaryStatus(sum store.QuestionSummary) views.QuizStatus {
	return views.QuizStatus{Attempts: sum.Attempts, EverCorrect: sum.EverCorrect, LatestCorrect: sum.LatestCorrect,
		Revealed: sum.Revealed, Seen: sum.Seen}
}

// quizStatusOf is a stored record as the status line shows it.
func quizStatusOf(st store.QuestionStatus, revealed bool) views.QuizStatus {
	return views.QuizStatus{Attempts: st.Attempts, EverCorrect: st.Best != nil, LatestCorrect: st.Attempts > 0 && st.Latest.Correct, Revealed: revealed, Seen: st.Seen}
}

// tallyText says how much of a withheld wrong answer is right (quiz.Tally),
// never which part.
func tallyText(lang string, typ quiz.Type, t quiz.Tally) string {
	switch {
	case typ == quiz.Order:
		return trf(lang, "quiz.tally.order", t.Right, t.Of)
	case t.Right == t.Of && t.Of > 0:
		return tr(lang)("quiz.tally.multi.more")
	default:
		return trf(lang, "quiz.tally.multi", t.Right, t.Of)
	}
}

// prefill puts an answer back into the form so "try again" starts from it.
func prefill(v *views.QuizQuestion, q *quiz.Question, a quiz.Answer, number string) {
	switch q.Type {
	case quiz.Single, quiz.Multi:
		for i := range v.Options {
			id := v.Options[i].ID
			v.Options[i].Checked = id == a.Choice && q.Type == quiz.Single || q.Type == quiz.Multi && slices.Contains(a.Choices, id)
		}
	case quiz.Order:
		v.Placed = a.Choices
	case quiz.Numeric:
		v.Value = number
	}
}

func firstValue(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return list[0]
}

// lessonAnchorURL is the lesson page showing attempt id at anchor.
func lessonAnchorURL(slug string, attempt int64, anchor string) string {
	q := url.Values{}
	q.Set("attempt", strconv.FormatInt(attempt, 10))
	q.Set("at", anchor)
	return page.LessonHref(slug) + "?" + q.Encode() + "#" + anchor // anchors hold only [a-z0-9._/~-], all valid in a fragment
}
