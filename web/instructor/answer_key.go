package instructor

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// answerKey is GET /instructor/answers[?lesson=SLUG][&class=ID][&print=questions]:
// the questions of the course, or of one lesson, with their answers,
// per-option feedback and explanation, for instructors and TAs (the route
// sits behind requireInstructor). With a class, each question also says
// how that class did (learners, first-try facility, each option's first
// choices). print=questions is the question sheet: the same page without
// answers, feedback, hints or explanations, for handing out. It prints
// cleanly (instructor.css hides the site chrome under @media print).
func (s *Area) answerKey(w http.ResponseWriter, r *http.Request) {
	lang := page.LangOf(r)
	t := s.tr(lang)
	c := s.course()
	q := r.URL.Query()
	sc, cohort, ok := s.requestScope(w, r) // ?class=ID (classes.go; a TA is kept to their classes)
	if !ok {
		return
	}
	only := q.Get("lesson")
	v := views.AnswerKey{Chrome: s.Chrome(r, t("key.title")), QuestionsOnly: q.Get("print") == "questions", ClassName: cohort.Name}
	keyHref := func(lesson string, questions bool) string {
		u := url.Values{}
		if lesson != "" {
			u.Set("lesson", lesson)
		}
		if sc.Cohort != 0 {
			u.Set("class", strconv.FormatInt(sc.Cohort, 10))
		}
		if questions {
			u.Set("print", "questions")
		}
		if len(u) == 0 {
			return "/instructor/answers"
		}
		return "/instructor/answers?" + u.Encode()
	}
	v.ToggleHref = keyHref(only, !v.QuestionsOnly)
	v.Nav = append(v.Nav, views.ClassPick{Label: t("key.all"), Href: keyHref("", v.QuestionsOnly), Current: only == ""})
	var attempts []quiz.Attempt
	if sc.Cohort != 0 {
		stored, err := s.cfg.Store.ClassAttemptsIn(r.Context(), sc)
		if err != nil {
			s.InternalError(w, r, err)
			return
		}
		attempts = quizAttempts(stored)
	}
	found := only == ""
	for _, l := range c.Lessons {
		if l.Quiz == nil || len(l.Quiz.Questions) == 0 {
			continue
		}
		title := l.Page(lang).Title
		v.Nav = append(v.Nav, views.ClassPick{Label: s.trf(lang, "lesson.kicker", fmt.Sprintf("%02d", l.Order)) + " " + title,
			Href: keyHref(l.Slug, v.QuestionsOnly), Current: only == l.Slug})
		if only != "" && only != l.Slug {
			continue
		}
		found = true
		kl := views.KeyLesson{Slug: l.Slug, Title: title}
		var stats []quiz.QuestionStats
		if sc.Cohort != 0 {
			stats = quiz.ComputeStats(l.Quiz.Questions, attempts)
		}
		for qi, q := range l.Quiz.Questions {
			kq := views.KeyQuestion{ID: q.ID, Type: string(q.Type), TypeLabel: t("key.type." + string(q.Type)),
				Prompt: q.HTML.Prompt.Get(lang), Explanation: q.HTML.Explanation.Get(lang),
				Hint: string(page.InlineHTML(q.HTML.Hint.Get(lang)))}
			var first map[string]int
			if stats != nil {
				st := stats[qi]
				kq.ClassStats = s.trf(lang, "key.class.none", cohort.Name)
				if st.Learners > 0 {
					kq.ClassStats = s.trf(lang, "key.class.stats", cohort.Name, st.Learners, int(st.Facility*100+0.5))
				}
				first = map[string]int{}
				for _, o := range st.Options {
					first[o.ID] = o.FirstChosen
				}
			}
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
				ko := views.KeyOption{ID: o.ID, Text: string(page.InlineHTML(o.HTML.Text.Get(lang))), Correct: o.Correct,
					Feedback: string(page.InlineHTML(o.HTML.Feedback.Get(lang)))}
				if q.Type == quiz.Order {
					ko.Position = i + 1 // the authored order is the correct one
				}
				if first != nil {
					key := "key.class.first"
					if q.Type == quiz.Order {
						key = "key.class.misplaced"
					}
					ko.ClassCount = s.trf(lang, key, first[o.ID])
				}
				kq.Options = append(kq.Options, ko)
			}
			kl.Questions = append(kl.Questions, kq)
		}
		v.Lessons = append(v.Lessons, kl)
	}
	if !found {
		s.NotFound(w, r)
		return
	}
	s.Render(w, r, http.StatusOK, views.AnswerKeyView(v))
}
