package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// attemptRequest is the JSON body of POST /api/quiz/{id}/attempts. Anchor
// and Lesson are optional: quiz.js sends them so the HTML it gets back has
// the ids of the placement it replaces.
type attemptRequest struct {
	Answer json.RawMessage `json:"answer"`
	Anchor string          `json:"anchor,omitempty"`
	Lesson string          `json:"lesson,omitempty"`
	// Reveal asks for the answer instead of answering ("show answer"):
	// recorded for the instructor, nothing graded.
	Reveal bool `json:"reveal,omitempty"`
}

// attemptResponse is quiz.Result plus what the page needs to update itself.
type attemptResponse struct {
	quiz.Result
	AttemptID int64  `json:"attempt_id"`
	Attempts  int    `json:"attempts"`     // the learner's attempts at this question so far
	Best      bool   `json:"ever_correct"` // answered correctly at least once
	HTML      string `json:"html"`         // the question re-rendered with this result
	// Graded: the lesson is graded work for the learner (graded.go):
	// answers used of the limit, what counts, the dates.
	Graded *gradedInfo `json:"graded,omitempty"`
}

// quizAttempt is POST /api/quiz/{questionID...}/attempts. Question ids
// contain '/', so the route is a wildcard and "/attempts" is cut off here.
// A JSON body gets the graded result as JSON; a form post (no JavaScript)
// is redirected to the lesson page showing the stored attempt. A rejected
// answer is a 400 and stores nothing.
func (s *Server) quizAttempt(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutSuffix(chi.URLParam(r, "*"), "/attempts")
	c := s.course()
	q := c.Questions[id]
	if !ok || q == nil {
		s.WriteError(w, r, page.Errorf(page.CodeNotFound, trf(page.LangOf(r), "quiz.err.unknown", id)))
		return
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		s.quizAttemptJSON(w, r, c, q)
	case "application/x-www-form-urlencoded":
		s.quizAttemptForm(w, r, c, q)
	default:
		s.WriteError(w, r, page.Errorf(page.CodeBadRequest, tr(page.LangOf(r))("quiz.err.content_type")))
	}
}

func (s *Server) quizAttemptJSON(w http.ResponseWriter, r *http.Request, c *lessons.Course, q *quiz.Question) {
	lang := page.LangOf(r)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.WriteError(w, r, bodyError(lang, err))
		return
	}
	if len(bytes.TrimSpace(body)) == 0 {
		s.WriteError(w, r, page.Errorf(page.CodeBadRequest, tr(lang)("quiz.err.empty")))
		return
	}
	var req attemptRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.More() {
		s.WriteError(w, r, &page.Error{Code: page.CodeBadRequest, Message: tr(lang)("quiz.err.json"), Err: err})
		return
	}
	slug := lessonFor(c, q.ID, req.Lesson)
	anchor := req.Anchor
	if !validAnchor(q.ID, anchor) {
		anchor = inlinePrefix + q.ID
	}
	qc, err := s.quizCtxFor(r, c, slug, lang)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	if req.Reveal {
		s.quizRevealJSON(w, r, q, anchor, slug, qc)
		return
	}
	a, err := quiz.DecodeAnswer(q, req.Answer)
	if err != nil {
		s.noteFormatError(r, q, err, string(req.Answer))
		s.WriteError(w, r, answerError(lang, err))
		return
	}
	att, graded, err := s.saveAttempt(r, q, a, lang, qc)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	st, err := s.cfg.Store.LearnerQuestionStatus(r.Context(), att.Learner, []string{q.ID})
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	revealed, err := s.cfg.Store.Revealed(r.Context(), att.Learner, q.ID)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	status := quizStatusOf(st[q.ID], revealed)
	shown := &quizShown{QuestionID: q.ID, Answer: &a, Graded: &graded, Revealed: revealed, Seen: att.Seen}
	v := questionView(lang, q, anchor, slug, 0, status, shown, qc)
	var html bytes.Buffer
	if err := views.QuizQuestionView(v).Render(r.Context(), &html); err != nil {
		s.WriteError(w, r, err)
		return
	}
	// The JSON tells no more than the page: the same policy on the same result.
	res, _ := qc.policy().View(q.Type, graded, qc.shownRecord(q.ID, status, shown))
	page.WriteJSON(w, http.StatusOK, attemptResponse{
		Result:    res,
		AttemptID: att.ID,
		Attempts:  st[q.ID].Attempts,
		Best:      st[q.ID].Best != nil,
		HTML:      html.String(),
		Graded:    qc.Graded.info(lang, q.ID),
	})
}

// quizRevealJSON records that the learner asked for q's answer and answers
// with the question showing it.
func (s *Server) quizRevealJSON(w http.ResponseWriter, r *http.Request, q *quiz.Question, anchor, slug string, qc quizCtx) {
	lang := page.LangOf(r)
	if err := s.addReveal(r, q, qc); err != nil {
		s.WriteError(w, r, err)
		return
	}
	st, err := s.cfg.Store.LearnerQuestionStatus(r.Context(), learnerID(r), []string{q.ID})
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	v := questionView(lang, q, anchor, slug, 0, quizStatusOf(st[q.ID], true), &quizShown{QuestionID: q.ID, Reveal: true, Revealed: true}, qc)
	var html bytes.Buffer
	if err := views.QuizQuestionView(v).Render(r.Context(), &html); err != nil {
		s.WriteError(w, r, err)
		return
	}
	page.WriteJSON(w, http.StatusOK, attemptResponse{
		Result:   quiz.Result{Options: []quiz.OptionResult{}, Explanation: q.Explanation.Get(lang)},
		Attempts: st[q.ID].Attempts,
		Best:     st[q.ID].Best != nil,
		HTML:     html.String(),
		Graded:   qc.Graded.info(lang, q.ID),
	})
}

// addReveal records the learner's "show answer" at q: in graded mode only
// while the lesson is open (before, it would hand out the answer; after,
// the answer shows anyway), and it then scores the question 0.
func (s *Server) addReveal(r *http.Request, q *quiz.Question, qc quizCtx) error {
	if g := qc.Graded; g != nil {
		if err := g.Rules.AdmitReveal(g.Now); err != nil {
			return refusedError(page.LangOf(r), g, err)
		}
	}
	if err := s.cfg.Store.AddQuizEvent(r.Context(), learnerID(r), q.ID, store.QuizReveal, ""); err != nil {
		return err
	}
	if g := qc.Graded; g != nil {
		g.Reveals[q.ID] = append(g.Reveals[q.ID], g.Now)
	}
	return nil
}

// quizCtxFor is the question context of a submission from lesson slug,
// with the learner's graded setting of that lesson, if any.
func (s *Server) quizCtxFor(r *http.Request, c *lessons.Course, slug, lang string) (quizCtx, error) {
	qc := quizCtx{Learner: learnerID(r), RevealAfter: lessons.DefaultRevealAfter}
	l := c.Lesson(slug)
	if l != nil {
		if p := l.Page(lang); p != nil {
			qc.RevealAfter = p.RevealAfter
		}
	}
	g, err := s.learnerGraded(r.Context(), qc.Learner, l)
	qc.Graded = g
	return qc, err
}

// noteFormatError records a numeric answer the server could not read, so
// instructors see learners struggling with the format (never graded).
func (s *Server) noteFormatError(r *http.Request, q *quiz.Question, err error, raw string) {
	var ae *quiz.AnswerError
	if q.Type != quiz.Numeric || !errors.As(err, &ae) || ae.Kind != quiz.AnswerNotANumber {
		return
	}
	if e := s.cfg.Store.AddQuizEvent(r.Context(), learnerID(r), q.ID, store.QuizFormat, raw); e != nil {
		s.log.Warn("record a quiz format error", "question", q.ID, "err", e)
	}
}

func (s *Server) quizAttemptForm(w http.ResponseWriter, r *http.Request, c *lessons.Course, q *quiz.Question) {
	lang := page.LangOf(r)
	parseErr := r.ParseForm()
	slug := lessonFor(c, q.ID, r.PostForm.Get("lesson"))
	anchor := r.PostForm.Get("anchor")
	if !validAnchor(q.ID, anchor) {
		anchor = "" // show the result at every placement of the question
	}
	values := r.PostForm["answer"]
	qc, err := s.quizCtxFor(r, c, slug, lang)
	if err != nil {
		s.PageError(w, r, err)
		return
	}
	if parseErr == nil && r.PostForm.Get("reveal") != "" {
		if err := s.addReveal(r, q, qc); err != nil {
			s.formRefused(w, r, slug, q, anchor, values, err)
			return
		}
		if anchor == "" {
			anchor = inlinePrefix + q.ID
		}
		u := page.LessonHref(slug) + "?" + url.Values{"reveal": {q.ID}, "at": {anchor}}.Encode() + "#" + anchor
		http.Redirect(w, r, u, http.StatusSeeOther)
		return
	}
	var a quiz.Answer
	var rejected *page.Error
	if parseErr != nil {
		rejected = bodyError(lang, parseErr)
	} else if a, parseErr = quiz.FormAnswer(q, values); parseErr != nil {
		s.noteFormatError(r, q, parseErr, firstValue(values))
		rejected = answerError(lang, parseErr)
	}
	if rejected != nil {
		// Re-render the page with the message at the question and the
		// learner's input kept; nothing was stored, so there is nothing to
		// redirect to.
		s.serveLesson(w, r, lessonState{Slug: slug, Status: http.StatusBadRequest,
			Quiz: &quizPage{Shown: &quizShown{QuestionID: q.ID, Anchor: anchor, Values: values, Error: rejected.Message}}})
		return
	}
	att, _, err := s.saveAttempt(r, q, a, lang, qc)
	if err != nil {
		s.formRefused(w, r, slug, q, anchor, values, err)
		return
	}
	if anchor == "" {
		anchor = inlinePrefix + q.ID
	}
	// POST/redirect/GET: reloading the result page does not submit again.
	http.Redirect(w, r, lessonAnchorURL(slug, att.ID, anchor), http.StatusSeeOther)
}

// formRefused answers a form submission that could not be stored: graded
// mode's refusal is shown at the question on the lesson page (status 409,
// the learner's input kept); anything else is an error page (a form gets a
// page even on the /api/ path).
func (s *Server) formRefused(w http.ResponseWriter, r *http.Request, slug string, q *quiz.Question, anchor string, values []string, err error) {
	var e *page.Error
	if errors.As(err, &e) && e.Code == page.CodeConflict {
		s.serveLesson(w, r, lessonState{Slug: slug, Status: http.StatusConflict,
			Quiz: &quizPage{Shown: &quizShown{QuestionID: q.ID, Anchor: anchor, Values: values, Error: e.Message}}})
		return
	}
	s.PageError(w, r, err)
}

// saveAttempt grades a — the one grading of a submission: the JSON answer
// and the re-rendered question take the result from here — and stores it
// for the request's learner, with whether the answer was shown to them
// before (qc's quiz.Policy, applied here once per attempt: every score
// reads the stored flag).
func (s *Server) saveAttempt(r *http.Request, q *quiz.Question, a quiz.Answer, lang string, qc quizCtx) (store.Attempt, quiz.Result, error) {
	learner := learnerID(r)
	if g := qc.Graded; g != nil {
		if err := g.admit(q.ID); err != nil {
			return store.Attempt{}, quiz.Result{}, refusedError(lang, g, err)
		}
	}
	st, err := s.cfg.Store.LearnerQuestionStatus(r.Context(), learner, []string{q.ID})
	if err != nil {
		return store.Attempt{}, quiz.Result{}, err
	}
	revealed, err := s.cfg.Store.Revealed(r.Context(), learner, q.ID)
	if err != nil {
		return store.Attempt{}, quiz.Result{}, err
	}
	seen := qc.policy().Seen(qc.record(q.ID, quizStatusOf(st[q.ID], revealed), revealed))
	res := quiz.Grade(q, a, lang)
	var att store.Attempt
	if g := qc.Graded; g != nil {
		// The limit is checked again in the write that stores the answer:
		// answers sent at once are taken one at a time, and one over the
		// limit is refused like any, saying nothing of right or wrong.
		att, err = s.cfg.Store.AddGradedAttempt(r.Context(), learner, q.ID, quiz.EncodeAnswer(q, a), res.Correct, seen,
			store.GradedWindow{Since: g.JoinedAt, Opens: g.Rules.Opens, Closes: g.Rules.Closes, Limit: g.Rules.Limit})
		if errors.Is(err, store.ErrAttemptLimit) {
			return store.Attempt{}, quiz.Result{}, refusedError(lang, g, g.Rules.Admit(s.now(), g.Rules.Limit))
		}
	} else {
		att, err = s.cfg.Store.AddAttempt(r.Context(), learner, q.ID, quiz.EncodeAnswer(q, a), res.Correct, seen)
	}
	if err == nil {
		if qc.Graded != nil {
			qc.Graded.Tries[q.ID] = append(qc.Graded.Tries[q.ID], quiz.Try{At: att.CreatedAt, Correct: att.Correct, Seen: att.Seen})
		}
		s.ltiQueueScores(r.Context(), learner, q.ID, false) // a graded LMS link's score (lti_launch.go)
	}
	return att, res, err
}

// lessonFor is the lesson a submission returns to: the page it came from
// when that lesson exists, else the lesson whose quiz.yaml holds the question.
func lessonFor(c *lessons.Course, questionID, from string) string {
	if from != "" && c.Lesson(from) != nil {
		return from
	}
	for _, l := range c.Lessons {
		if l.Quiz == nil {
			continue
		}
		for _, q := range l.Quiz.Questions {
			if q.ID == questionID {
				return l.Slug
			}
		}
	}
	return from
}

// bodyError is the 400 for a body that could not be read or parsed (its
// size is limitBodies' business: body_limit.go).
func bodyError(lang string, err error) *page.Error {
	return &page.Error{Code: page.CodeBadRequest, Message: tr(lang)("quiz.err.body"), Err: err}
}

// answerError turns a *quiz.AnswerError into a 400 in the learner's language.
func answerError(lang string, err error) *page.Error {
	var ae *quiz.AnswerError
	if !errors.As(err, &ae) {
		return &page.Error{Code: page.CodeInternal, Message: "internal error; see the server log", Err: err}
	}
	msg := tr(lang)("quiz.err." + string(ae.Kind))
	if ae.Option != "" {
		msg = trf(lang, "quiz.err."+string(ae.Kind)+".option", ae.Option) // quiz keeps it short
	}
	return &page.Error{Code: page.CodeBadRequest, Message: msg, Err: err}
}
