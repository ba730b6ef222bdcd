package web

import (
	"context"
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
	placedAt map[string]int // ::quiz placements so far, for unique DOM ids

	// hole, set while the static page skeleton is built (lesson_static.go),
	// places a hole where a learner's record goes instead of rendering one.
	hole func(skeletonHole) templ.Component
}

// quizShown is what one question shows instead of an empty form.
type quizShown struct {
	QuestionID string
	Anchor     string // the placement it was submitted from ("" = every placement)
	Answer     *quiz.Answer
	Values     []string // rejected form values, to refill the form
	Error      string
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
	shown := &quizShown{QuestionID: a.QuestionID, Answer: &ans}
	if at := r.URL.Query().Get("at"); validAnchor(a.QuestionID, at) {
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
	v := questionView(lr.Lang, q, dom, lr.Lesson.Slug, 0, views.QuizStatus(qp.status[q.ID]), qp.Shown)
	if qp.hole != nil {
		v.StatusSlot = qp.hole(skeletonHole{kind: holeQuizStatus, id: q.ID})
	}
	return views.QuizQuestionView(v)
}

// checkpointSegment renders ::checkpoint: every question of the lesson's
// quiz.yaml, including ones also placed in the text (the checkpoint is the
// lesson's self-test at the end), with the learner's score.
func (s *Server) checkpointSegment(lr *lessonRequest) templ.Component {
	if lr.Lesson.Quiz == nil {
		return views.Placeholder(string(lessons.SegCheckpoint), lr.Lesson.Slug, trf(lr.Lang, "quiz.nocheckpoint"))
	}
	qp, err := s.quizState(lr)
	if err != nil {
		return failing(err)
	}
	v := views.Quiz{T: lr.T}
	if qp.hole != nil {
		v.ScoreSlot = qp.hole(skeletonHole{kind: holeQuizScore})
	}
	for i, q := range lr.Lesson.Quiz.Questions {
		st := views.QuizStatus(qp.status[q.ID])
		if st.EverCorrect {
			v.Correct++
		}
		qv := questionView(lr.Lang, q, checkpointPrefix+q.ID, lr.Lesson.Slug, i+1, st, qp.Shown)
		if qp.hole != nil {
			qv.StatusSlot = qp.hole(skeletonHole{kind: holeQuizStatus, id: q.ID})
		}
		v.Questions = append(v.Questions, qv)
	}
	return views.QuizCheckpoint(v)
}

// failing is a component whose rendering fails with err: the page handler
// turns it into a clean 500 instead of a page with a hole.
func failing(err error) templ.Component {
	return templ.ComponentFunc(func(context.Context, io.Writer) error { return err })
}

// questionView builds the form of q at DOM id dom. Only the texts a learner
// needs to answer go in, unless shown carries a graded answer or a rejected
// submission for this placement.
func questionView(lang string, q *quiz.Question, dom, lesson string, number int, st views.QuizStatus, shown *quizShown) views.QuizQuestion {
	v := views.QuizQuestion{
		T:      tr(lang),
		DOMID:  dom,
		ID:     q.ID,
		Type:   string(q.Type),
		Action: attemptsPath(q.ID),
		Lesson: lesson,
		Number: number,
		Prompt: markdownInline(q.Prompt.Get(lang)),
		Hint:   markdownInline(q.Hint.Get(lang)),
		Unit:   q.Unit,
		Status: st,
	}
	text := map[string]string{}
	for _, o := range q.DisplayOptions() {
		t := o.Text.Get(lang)
		text[o.ID] = t
		v.Options = append(v.Options, views.QuizOption{
			ID: o.ID, InputID: dom + ":" + o.ID, Text: markdownInline(t), Plain: plainText(t),
		})
	}
	if shown == nil || shown.QuestionID != q.ID || (shown.Anchor != "" && shown.Anchor != dom) {
		return v
	}
	if shown.Error != "" {
		v.Error = shown.Error
		prefill(&v, q, quiz.Answer{Choices: shown.Values, Choice: firstValue(shown.Values)}, firstValue(shown.Values))
		return v
	}
	if shown.Answer == nil {
		return v
	}
	a := *shown.Answer
	res := quiz.Grade(q, a, lang)
	v.Result = &views.QuizResult{Correct: res.Correct, Explanation: markdownHTML(res.Explanation)}
	if q.Type == quiz.Numeric {
		v.Result.Number = strconv.FormatFloat(a.Number, 'g', -1, 64)
	}
	byID := map[string]*views.QuizResultOption{}
	for _, o := range res.Options {
		ro := views.QuizResultOption{ID: o.ID, Text: markdownInline(text[o.ID]), Chosen: o.Chosen, Correct: o.Correct, Feedback: markdownInline(o.Feedback)}
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

// quizStatusOf is a stored record as the status line shows it.
func quizStatusOf(st store.QuestionStatus) views.QuizStatus {
	return views.QuizStatus{Attempts: st.Attempts, EverCorrect: st.Best != nil, LatestCorrect: st.Attempts > 0 && st.Latest.Correct}
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
	return lessonHref(slug) + "?" + q.Encode() + "#" + anchor // anchors hold only [a-z0-9._/~-], all valid in a fragment
}
