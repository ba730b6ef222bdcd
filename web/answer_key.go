package web

import (
	"net/http"
	"strconv"

	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/web/views"
)

// answerKey is GET /instructor/answers: every question of the course with
// its answers, per-option feedback and explanation, for instructors only
// (the route sits behind requireInstructor). It prints cleanly
// (instructor.css hides the site chrome under @media print).
func (s *Server) answerKey(w http.ResponseWriter, r *http.Request) {
	lang := langOf(r)
	t := tr(lang)
	c := s.course()
	v := views.AnswerKey{Chrome: s.chrome(r, t("key.title"))}
	for _, l := range c.Lessons {
		if l.Quiz == nil || len(l.Quiz.Questions) == 0 {
			continue
		}
		kl := views.KeyLesson{Slug: l.Slug, Title: l.Page(lang).Title}
		for _, q := range l.Quiz.Questions {
			kq := views.KeyQuestion{ID: q.ID, Type: string(q.Type), TypeLabel: t("key.type." + string(q.Type)),
				Prompt: q.HTML.Prompt.Get(lang), Explanation: q.HTML.Explanation.Get(lang),
				Hint: string(inlineHTML(q.HTML.Hint.Get(lang)))}
			if q.Type == quiz.Numeric {
				kq.Numeric = strconv.FormatFloat(q.Value, 'g', -1, 64)
				if q.Tolerance > 0 {
					kq.Numeric += " ± " + strconv.FormatFloat(q.Tolerance, 'g', -1, 64)
				}
				if q.Unit != "" {
					kq.Numeric += " " + q.Unit
				}
			}
			for i, o := range q.Options {
				ko := views.KeyOption{ID: o.ID, Text: string(inlineHTML(o.HTML.Text.Get(lang))), Correct: o.Correct,
					Feedback: string(inlineHTML(o.HTML.Feedback.Get(lang)))}
				if q.Type == quiz.Order {
					ko.Position = i + 1 // the authored order is the correct one
				}
				kq.Options = append(kq.Options, ko)
			}
			kl.Questions = append(kl.Questions, kq)
		}
		v.Lessons = append(v.Lessons, kl)
	}
	s.render(w, r, http.StatusOK, views.AnswerKeyView(v))
}
