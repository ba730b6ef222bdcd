package web

import (
	"context"
	"errors"
	"time"

	"github.com/a-h/templ"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// Graded mode, the learner's side (issue 29). The rules are quiz.Graded's;
// this file finds the setting that applies to a learner on a lesson (the
// open class they joined last that grades it: store.LearnerGradedLesson),
// loads their answers and reveals in it, and says dates in the class's
// time zone. Instructors set it on /instructor/classes/{id}/graded
// (web/instructor/graded_settings.go); the gradebook scores by the same rules
// (web/instructor/gradebook.go, LessonScore).

// gradedLesson is a learner's graded setting of one lesson and their
// record in it, loaded once per request.
type gradedLesson struct {
	store.LearnerGraded
	Rules   quiz.Graded
	Loc     *time.Location
	Now     time.Time
	Tries   map[string][]quiz.Try // by question, oldest first, since joining the class
	Reveals map[string][]time.Time
}

// learnerGraded returns the graded setting of lesson l that applies to the
// learner with their record on its questions, or nil when l is practice
// for them.
func (s *Server) learnerGraded(ctx context.Context, learner string, l *lessons.Lesson) (*gradedLesson, error) {
	if learner == "" || l == nil || l.Quiz == nil || len(l.Quiz.Questions) == 0 {
		return nil, nil
	}
	lg, ok, err := s.cfg.Store.LearnerGradedLesson(ctx, learner, l.Slug)
	if err != nil || !ok {
		return nil, err
	}
	g := &gradedLesson{LearnerGraded: lg, Rules: page.GradedRules(lg.GradedLesson), Loc: page.ZoneOf(lg.TimeZone), Now: s.now(),
		Tries: map[string][]quiz.Try{}}
	ids := make([]string, len(l.Quiz.Questions))
	for i, q := range l.Quiz.Questions {
		ids[i] = q.ID
	}
	atts, err := s.cfg.Store.LearnerAttempts(ctx, learner, ids, lg.JoinedAt)
	if err != nil {
		return nil, err
	}
	for _, a := range atts {
		g.Tries[a.QuestionID] = append(g.Tries[a.QuestionID], quiz.Try{At: a.CreatedAt, Correct: a.Correct, Seen: a.Seen})
	}
	if g.Reveals, err = s.cfg.Store.LearnerReveals(ctx, learner, ids, lg.JoinedAt); err != nil {
		return nil, err
	}
	return g, nil
}

// Phase is the lesson's phase now.
func (g *gradedLesson) Phase() quiz.Phase { return g.Rules.PhaseAt(g.Now) }

// Used is the learner's counted answers to question q.
func (g *gradedLesson) Used(q string) int { return len(g.Rules.Counted(g.Tries[q])) }

// Revealed reports whether the learner chose "show answer" at q in the window.
func (g *gradedLesson) Revealed(q string) bool { return g.Rules.Revealed(g.Reveals[q]) }

// admit is quiz.Graded.Admit for an answer to q now.
func (g *gradedLesson) admit(q string) error { return g.Rules.Admit(g.Now, g.Used(q)) }

// refusedError is the learner's message for an answer or reveal graded
// mode refuses (409: the request was fine, the lesson's state says no).
func refusedError(lang string, g *gradedLesson, err error) *page.Error {
	var ae *quiz.AdmitError
	if !errors.As(err, &ae) {
		return &page.Error{Code: page.CodeInternal, Message: "internal error; see the server log", Err: err}
	}
	var msg string
	switch ae.Refusal {
	case quiz.RefusedNotOpen:
		msg = trf(lang, "graded.err.notopen", page.ZoneTime(lang, g.Rules.Opens, g.Loc))
	case quiz.RefusedClosed:
		msg = trf(lang, "graded.err.closed", page.ZoneTime(lang, g.Rules.Closes, g.Loc))
	default:
		msg = trf(lang, "graded.err.usedup", g.Rules.Limit)
	}
	return &page.Error{Code: page.CodeConflict, Message: msg, Err: err}
}

// gradedInfo is what the JSON answer to a graded question adds: the
// learner's answers used, the limit, and the close date (RFC 3339 and as
// the page says it).
type gradedInfo struct {
	Used     int    `json:"attempts_used"`
	Limit    int    `json:"attempt_limit"`
	Counts   string `json:"counts"`
	Opens    string `json:"opens_at"`
	Closes   string `json:"closes_at"`
	TimeZone string `json:"time_zone"`
	Shown    string `json:"closes_shown"`
	Revealed bool   `json:"revealed"` // "show answer" here: the question scores 0
}

func (g *gradedLesson) info(lang, q string) *gradedInfo {
	if g == nil {
		return nil
	}
	return &gradedInfo{Used: g.Used(q), Limit: g.Rules.Limit, Counts: string(g.Rules.Counts),
		Opens: page.TimeRFC3339(g.Rules.Opens), Closes: page.TimeRFC3339(g.Rules.Closes), TimeZone: g.Loc.String(),
		Shown: page.ZoneTime(lang, g.Rules.Closes, g.Loc), Revealed: g.Revealed(q)}
}

// grade is the learner's graded result on the lesson's questions.
func (g *gradedLesson) grade(l *lessons.Lesson) quiz.LessonGrade {
	ids := make([]string, len(l.Quiz.Questions))
	for i, q := range l.Quiz.Questions {
		ids[i] = q.ID
	}
	return g.Rules.Lesson(ids, g.Tries, g.Reveals)
}

// gradedWork is the learner's work on lesson l that counts in graded mode
// g: tasks done and programs passed since joining the class (tasks: the
// learner's task records of l).
func (s *Server) gradedWork(ctx context.Context, learner string, l *lessons.Lesson, g *gradedLesson,
	tasks map[string]store.TaskProgress) (quiz.Work, error) {
	progs, err := s.cfg.Store.LessonPrograms(ctx, learner, l.Slug)
	if err != nil {
		return quiz.Work{}, err
	}
	w := quiz.Work{Tasks: len(l.Tasks), Programs: len(l.Programs)}
	for _, t := range l.Tasks {
		if p := tasks[t.ID]; p.Done() && !p.DoneAt.Before(g.JoinedAt) {
			w.TasksDone++
		}
	}
	for _, p := range l.Programs {
		if pp := progs[p.ID]; !pp.PassedAt.IsZero() && !pp.PassedAt.Before(g.JoinedAt) {
			w.ProgramsPassed++
		}
	}
	return w, nil
}

// gradedDone reports whether lesson l is complete for the learner by graded
// mode's rule (computed from the work); graded is false where l is
// practice for them, and the self-declared mark applies.
func (s *Server) gradedDone(ctx context.Context, learner string, l *lessons.Lesson) (done, graded bool, err error) {
	g, err := s.learnerGraded(ctx, learner, l)
	if err != nil || g == nil {
		return false, false, err
	}
	tasks, err := s.cfg.Store.LessonTasks(ctx, learner, l.Slug)
	if err != nil {
		return false, true, err
	}
	w, err := s.gradedWork(ctx, learner, l, g, tasks)
	if err != nil {
		return false, true, err
	}
	return g.grade(l).Complete(w), true, nil
}

// gradedBox is the completion box of a graded lesson: class, dates, rules,
// questions answered, and completion computed from the work.
func (s *Server) gradedBox(lr *lessonRequest) templ.Component {
	g, lang := lr.Graded, lr.Lang
	lg := g.grade(lr.Lesson)
	tasks, err := s.learnerTasks(lr)
	if err != nil {
		return failing(err)
	}
	w, err := s.gradedWork(lr.r.Context(), lr.Learner, lr.Lesson, g, tasks)
	if err != nil {
		return failing(err)
	}
	return views.GradedCompleteBox(views.GradedBox{T: lr.T,
		Class:    trf(lang, "graded.box.class", g.ClassName),
		Opens:    trf(lang, "graded.status.opens", page.ZoneTime(lang, g.Rules.Opens, g.Loc)),
		Closes:   trf(lang, "graded.status.closes", page.ZoneTime(lang, g.Rules.Closes, g.Loc)),
		Rules:    trf(lang, "graded.box.rules", g.Rules.Limit, tr(lang)("graded.counts."+string(g.Rules.Counts))),
		Progress: trf(lang, "graded.box.progress", lg.Answered, lg.Questions),
		Done:     lg.Complete(w),
	})
}
