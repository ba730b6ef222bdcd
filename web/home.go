package web

import (
	"net/http"

	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// home is GET /: every lesson with summary, duration and the learner's progress.
func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	lang := page.LangOf(r)
	progress, err := s.cfg.Store.LearnerProgress(r.Context(), learnerID(r))
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	c := s.course()
	v := views.Home{Chrome: s.Chrome(r, tr(lang)("home.title"))}
	for _, l := range c.Lessons {
		p := l.Page(lang)
		if p == nil {
			continue
		}
		pr, opened := progress[l.Slug]
		// A graded lesson is complete by its work, as on its page and in
		// the gradebook; the self-declared mark is practice mode's.
		completed, graded, err := s.gradedDone(r.Context(), learnerID(r), l)
		if err != nil {
			s.InternalError(w, r, err)
			return
		}
		if !graded {
			completed = pr.Completed()
		}
		v.Lessons = append(v.Lessons, views.HomeLesson{
			Slug:      l.Slug,
			Href:      page.LessonHref(l.Slug),
			Order:     p.Order,
			Title:     p.Title,
			Summary:   p.Summary,
			Duration:  p.Duration,
			Fallback:  p.Fallback,
			Opened:    opened,
			Completed: completed,
		})
	}
	if err := s.quizScores(r, v.Lessons); err != nil {
		s.InternalError(w, r, err)
		return
	}
	s.Render(w, r, http.StatusOK, views.HomeView(v))
}
