package instructor

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// learnerProgramsHref is the page of learner's :::program exercises of
// lesson, within scope sc (the gradebook's cell links to it).
func learnerProgramsHref(learner, lesson string, sc store.Scope) string {
	return "/instructor/learners/" + url.PathEscape(learner) + "/programs?lesson=" + url.QueryEscape(lesson) + classQuery(sc, "&")
}

// learnerPrograms is GET /instructor/learners/{learner}/programs
// [?class=ID][&lesson=SLUG]: one learner's record on each :::program
// exercise (runs, passes, hints revealed, solution shown) and the code
// they last submitted, with a link to that run's replay. A learner the
// scope does not count (another class's, for a TA) is not found.
func (s *Area) learnerPrograms(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	lang := page.LangOf(r)
	sc, cohort, ok := s.requestScope(w, r)
	if !ok {
		return
	}
	learner := chi.URLParam(r, "learner")
	if !store.ValidLearnerID(learner) {
		s.NotFound(w, r)
		return
	}
	db := s.cfg.Store
	in, err := db.LearnerInScope(ctx, sc, learner)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	if !in {
		s.NotFound(w, r)
		return
	}
	name, err := db.DisplayName(ctx, learner)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	rows, err := db.ClassProgramsIn(ctx, sc)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	subs, err := db.ProgramSubmissions(ctx, learner)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	type key struct{ lesson, program string }
	recs := map[key]store.ProgramProgress{}
	for _, row := range rows {
		if row.Learner == learner {
			recs[key{row.Lesson, row.Program}] = row.ProgramProgress
		}
	}
	last := map[key]store.ProgramSubmission{}
	for _, sub := range subs {
		last[key{sub.Lesson, sub.Program}] = sub
	}
	who := name
	if who == "" {
		who = shortID(learner)
	}
	only := r.URL.Query().Get("lesson")
	v := views.LearnerPrograms{Chrome: s.Chrome(r, s.trf(lang, "lprog.title", who)), Learner: who, ClassName: cohort.Name,
		Back: "/instructor/gradebook" + classQuery(sc, "?")}
	now := s.now()
	for _, l := range s.course().Lessons {
		if len(l.Programs) == 0 || (only != "" && l.Slug != only) {
			continue
		}
		vl := views.LearnerProgramsLesson{Title: lessonTitle(s.course(), l.Slug, lang), Href: page.LessonHref(l.Slug)}
		for i, p := range l.Programs {
			rec := recs[key{l.Slug, p.ID}]
			vp := views.LearnerProgram{ID: p.ID, Heading: s.trf(lang, "lprog.exercise", i+1, p.ID), Passed: rec.Passed(),
				Record:        s.trf(lang, "lprog.record", rec.Attempts, rec.Passes, rec.Hints, len(p.Config.Hints)),
				SolutionShown: !rec.SolutionAt.IsZero()}
			if sub, ok := last[key{l.Slug, p.ID}]; ok {
				vp.Source = sub.Source
				vp.Submitted = s.trf(lang, "lprog.submitted", s.ago(lang, now.Sub(sub.At), sub.At), strconv.Itoa(len(sub.Source)))
				vp.RunHref = "/runs/" + url.PathEscape(sub.RunID) + "?lang=" + lang
			}
			vl.Programs = append(vl.Programs, vp)
		}
		v.Lessons = append(v.Lessons, vl)
	}
	s.Render(w, r, http.StatusOK, views.LearnerProgramsView(v))
}
