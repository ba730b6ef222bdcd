package web

import (
	"net/http"

	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// quizScores fills in each home page lesson's checkpoint score: the
// questions of its quiz.yaml the learner answered correctly at least once,
// out of all of them. Lessons without questions show no score.
func (s *Server) quizScores(r *http.Request, rows []views.HomeLesson) error {
	correct, err := s.cfg.Store.CorrectQuestions(r.Context(), learnerID(r))
	if err != nil {
		return err
	}
	c, lang := s.course(), page.LangOf(r)
	for i := range rows {
		l := c.Lesson(rows[i].Slug)
		if l == nil || l.Quiz == nil || len(l.Quiz.Questions) == 0 {
			continue
		}
		n := 0
		for _, q := range l.Quiz.Questions {
			if correct[q.ID] {
				n++
			}
		}
		rows[i].Score = trf(lang, "quiz.home.score", n, len(l.Quiz.Questions))
	}
	return nil
}
