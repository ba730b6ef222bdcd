package web

import (
	"context"
	"time"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/lti"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
)

// LMS scores (LTI AGS, issues 29 and 41). A learner's score on a graded
// link is computed from that learner's rows alone (cost independent of
// the class's size), by the rules the class's gradebook applies, and put
// in the outbox (store.QueueScore) that the deliverer drains:
//   - at every answer to a question the link grades, and at a launch that
//     records a link (work done before reaches the new column);
//   - when a task check or a program pass completes a lesson;
//   - for every learner of a class when its graded setting of a lesson
//     changes (counts, dates, limit, practice again), at its close date
//     (Completed, final), and when the instructor asks to send them all
//     again (RescoreLTI).
// Nothing goes out for a link whose class is archived, nor from a
// learner who has done nothing the link grades (a new, empty learner
// never overwrites a grade the LMS holds).

// ltiQueueScores puts the learner's current scores in the outbox for
// their graded links: those grading question, or the lesson holding it
// ("" with all: every link). A link whose lesson is gone is skipped.
// Failures are logged: the work itself was saved, and the next change
// queues the score again.
func (s *Server) ltiQueueScores(ctx context.Context, learner, question string, all bool) {
	s.ltiQueueLinks(ctx, learner, func(g store.LTIGradeLink, l *lessons.Lesson) bool {
		if all {
			return true
		}
		for _, q := range l.Quiz.Questions {
			if (g.Question == "" || q.ID == g.Question) && q.ID == question {
				return true
			}
		}
		return false
	})
}

// ltiQueueLesson queues the learner's scores on the links of lesson slug:
// a task or program done there may complete it.
func (s *Server) ltiQueueLesson(ctx context.Context, learner, slug string) {
	s.ltiQueueLinks(ctx, learner, func(g store.LTIGradeLink, _ *lessons.Lesson) bool { return g.Lesson == slug })
}

// ltiQueueLinks queues the learner's score on each graded link that want
// accepts.
func (s *Server) ltiQueueLinks(ctx context.Context, learner string, want func(store.LTIGradeLink, *lessons.Lesson) bool) {
	if s.cfg.LTI == nil {
		return
	}
	links, err := s.cfg.Store.LTIGradeLinks(ctx, learner)
	if err != nil || len(links) == 0 {
		if err != nil {
			s.log.Error("lti scores", "learner", learner, "err", err)
		}
		return
	}
	c := s.course()
	queued := false
	for _, g := range links {
		l := c.Lesson(g.Lesson)
		if l == nil || linkMax(g, l) == 0 || g.Archived || !want(g, l) {
			continue
		}
		sc, err := s.linkScore(ctx, learner, g, l)
		if err != nil {
			s.log.Error("lti scores", "learner", learner, "err", err)
			continue
		}
		if !sc.Tried {
			continue // nothing to report: an LMS grade stays as it is
		}
		progress := "InProgress"
		if sc.Completed {
			progress = "Completed"
		}
		err = s.cfg.Store.QueueScore(ctx, g.PlatformID, g.LineItem, lti.Score{UserID: g.Sub, ScoreGiven: float64(sc.Given),
			ScoreMaximum: float64(sc.Max), ActivityProgress: progress, GradingProgress: "FullyGraded", Timestamp: time.Now().UTC()})
		if err != nil {
			s.log.Error("lti scores", "learner", learner, "err", err)
			continue
		}
		queued = true
	}
	if queued && s.cfg.LTI.Kick != nil {
		s.cfg.LTI.Kick()
	}
}

// linkScoreOf is one learner's figure on one graded link.
type linkScoreOf struct {
	Given, Max int
	Tried      bool // the learner answered a question the link grades, or passed one of its programs (in the class's term)
	Completed  bool
}

// linkQuestions are the questions graded link g of lesson l scores: one,
// or all of the lesson's.
func linkQuestions(g store.LTIGradeLink, l *lessons.Lesson) []string {
	var ids []string
	if l.Quiz == nil {
		return nil
	}
	for _, q := range l.Quiz.Questions {
		if g.Question == "" || q.ID == g.Question {
			ids = append(ids, q.ID)
		}
	}
	return ids
}

// linkMax is the most graded link g of lesson l gives: a point per
// question it grades and, for a whole lesson, a point per :::program
// exercise (the gradebook's points_max).
func linkMax(g store.LTIGradeLink, l *lessons.Lesson) int {
	n := len(linkQuestions(g, l))
	if g.Question == "" {
		n += len(l.Programs)
	}
	return n
}

// linkScore computes the learner's score on link g of lesson l from the
// learner's own rows: a lesson link of an LMS course is scored as that
// course's class gradebook scores it (graded mode's rules and dates, the
// work since joining the class); otherwise, and for a question link, the
// practice rule (store.Attempt.Clean: right at least once without the
// answer shown). A whole lesson's link also gives a point per :::program
// exercise passed before its solution was shown (and, graded, before the
// close: quiz.ProgramPoint), as the gradebook's points do. Completed:
// graded, computed from the work (quiz.LessonGrade.Complete); practice,
// every question answered and every task and program of the lesson done.
func (s *Server) linkScore(ctx context.Context, learner string, g store.LTIGradeLink, l *lessons.Lesson) (linkScoreOf, error) {
	var out linkScoreOf
	ids := linkQuestions(g, l)
	out.Max = linkMax(g, l)
	var since time.Time
	var set *store.GradedLesson
	if g.Cohort > 0 {
		joined, member, err := s.cfg.Store.CohortJoinedAt(ctx, g.Cohort, learner)
		if err != nil {
			return out, err
		}
		if member {
			since = joined
		}
		if g.Question == "" {
			settings, err := s.cfg.Store.GradedLessons(ctx, g.Cohort)
			if err != nil {
				return out, err
			}
			if gl, ok := settings[l.Slug]; ok && member {
				set = &gl
			}
		}
	}
	atts, err := s.cfg.Store.LearnerAttempts(ctx, learner, ids, since)
	if err != nil {
		return out, err
	}
	tasks, err := s.cfg.Store.LessonTasks(ctx, learner, l.Slug)
	if err != nil {
		return out, err
	}
	progs, err := s.cfg.Store.LessonPrograms(ctx, learner, l.Slug)
	if err != nil {
		return out, err
	}
	w := quiz.Work{Tasks: len(l.Tasks), Programs: len(l.Programs)}
	for _, t := range l.Tasks {
		if p := tasks[t.ID]; p.Done() && !p.DoneAt.Before(since) {
			w.TasksDone++
		}
	}
	var closes time.Time
	if set != nil {
		closes = set.Closes
	}
	points := 0
	for _, p := range l.Programs {
		if pp := progs[p.ID]; pp.Passed() && !pp.PassedAt.Before(since) {
			w.ProgramsPassed++
			if quiz.ProgramPoint(pp.PassedAt, pp.SolutionAt, closes) {
				points++
			}
		}
	}
	// A pass is work the link grades; failed runs alone are not (the
	// learner has nothing to show yet, and an LMS grade stays as it is).
	ran := w.ProgramsPassed > 0
	if g.Question != "" {
		points, ran = 0, false // a question's link scores that question alone
	}
	if set != nil {
		reveals, err := s.cfg.Store.LearnerReveals(ctx, learner, ids, since)
		if err != nil {
			return out, err
		}
		tries := map[string][]quiz.Try{}
		for _, a := range atts {
			tries[a.QuestionID] = append(tries[a.QuestionID], quiz.Try{At: a.CreatedAt, Correct: a.Correct, Seen: a.Seen})
		}
		rules := page.GradedRules(*set)
		lg := rules.Lesson(ids, tries, reveals)
		// After the close nothing more can be done: the activity is over
		// for everyone (AGS §3.4.5 Completed), and the score is final.
		closed := rules.PhaseAt(s.now()) == quiz.Closed
		out.Given, out.Tried, out.Completed = lg.Score+points, len(atts) > 0 || ran, closed || lg.Complete(w)
		return out, nil
	}
	right, tried := map[string]bool{}, map[string]bool{}
	for _, a := range atts {
		tried[a.QuestionID] = true
		if a.Clean() {
			right[a.QuestionID] = true
		}
	}
	out.Given, out.Tried = len(right)+points, len(tried) > 0 || ran
	out.Completed = len(tried) == len(ids) && w.TasksDone == w.Tasks && w.ProgramsPassed == w.Programs
	return out, nil
}

// RescoreLTI queues the LMS scores of every learner with a graded link in
// class cohort (to lesson; "" every lesson): the class's graded setting
// changed, or the instructor asked to send them again. It returns how
// many learners' scores were looked at.
func (s *Server) RescoreLTI(ctx context.Context, cohort int64, lesson string) (int, error) {
	if s.cfg.LTI == nil {
		return 0, nil
	}
	learners, err := s.cfg.Store.LTIGradedLearners(ctx, cohort, lesson)
	if err != nil {
		return 0, err
	}
	for _, id := range learners {
		s.ltiQueueLinks(ctx, id, func(g store.LTIGradeLink, _ *lessons.Lesson) bool {
			return g.Cohort == cohort && (lesson == "" || g.Lesson == lesson)
		})
	}
	return len(learners), nil
}

// ltiSendCloses queues, once per close date, the scores of the classes
// whose graded lessons closed by now: final, and Completed where the work
// is done.
func (s *Server) ltiSendCloses(ctx context.Context) error {
	due, err := s.cfg.Store.DueGradedCloses(ctx, s.now())
	if err != nil {
		return err
	}
	for _, g := range due {
		if _, err := s.RescoreLTI(ctx, g.Cohort, g.Lesson); err != nil {
			return err
		}
		if err := s.cfg.Store.MarkCloseSent(ctx, g); err != nil {
			return err
		}
	}
	return nil
}

// ltiClosePoll is how often the server looks for graded lessons that closed.
const ltiClosePoll = 30 * time.Second

// RunLTICloses sends the scores of graded lessons as they close, until
// ctx ends (serve runs it beside the score deliverer).
func (s *Server) RunLTICloses(ctx context.Context) {
	if s.cfg.LTI == nil {
		return
	}
	t := time.NewTicker(ltiClosePoll)
	defer t.Stop()
	for {
		if err := s.ltiSendCloses(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("lti closes", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
