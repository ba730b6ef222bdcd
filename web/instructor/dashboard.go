package instructor

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// activeWindow: a learner with any activity this recent counts as active.
const activeWindow = 15 * time.Minute

// DashPageSize learners are listed per dashboard page.
const DashPageSize = 50

// dashPager links the pages of the learners table ("" links when there is
// only one page).
func (s *Area) dashPager(lang string, sc store.Scope, pageNo, total int) views.Pager {
	last := max(1, (total+DashPageSize-1)/DashPageSize)
	p := views.Pager{Label: s.trf(lang, "instr.dash.page", (pageNo-1)*DashPageSize+1, min(total, pageNo*DashPageSize), total)}
	if pageNo > 1 {
		p.Prev = "/instructor?page=" + strconv.Itoa(pageNo-1) + classQuery(sc, "&") + "#learners"
	}
	if pageNo < last {
		p.Next = "/instructor?page=" + strconv.Itoa(pageNo+1) + classQuery(sc, "&") + "#learners"
	}
	return p
}

// instructorDashboard is GET /instructor: who is active, progress per
// lesson, per-question statistics (quiz.ComputeStats) and run outcomes.
func (s *Area) instructorDashboard(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	lang := page.LangOf(r)
	t := s.tr(lang)
	db := s.cfg.Store
	in, _ := currentInstructor(r)
	course := s.course()
	sc, cohort, ok := s.requestScope(w, r) // ?class=ID (classes.go)
	if !ok {
		return
	}

	// The learners table is paged: a flood of anonymous learners must not
	// make the dashboard huge (issue 18: 100k learners, 30 MB of HTML).
	pageNo, _ := strconv.Atoi(r.URL.Query().Get("page"))
	pageNo = max(1, pageNo)
	now := time.Now()
	lp, err := db.ClassLearnersIn(ctx, sc, DashPageSize, (pageNo-1)*DashPageSize, now.Add(-activeWindow))
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	if len(lp.Learners) == 0 && pageNo > 1 {
		http.Redirect(w, r, "/instructor"+classQuery(sc, "?")+"#learners", http.StatusSeeOther)
		return
	}
	counts, err := db.ClassLessonCountsIn(ctx, sc)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	stored, err := db.ClassAttemptsIn(ctx, sc)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	runs, err := db.ClassRunCountsIn(ctx, sc)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	programs, err := db.ClassProgramsIn(ctx, sc)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	qevents, err := db.AllQuizEventCounts(ctx)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}

	v := views.Dashboard{
		Chrome:       s.Chrome(r, t("instr.dash.title")),
		Instructor:   in.Username,
		TA:           in.TA(),
		LogoutAction: "/instructor/logout",
		ActiveWindow: s.trf(lang, "instr.window", int(activeWindow/time.Minute)),
		Exports: []views.Link{
			{Href: "/instructor/export/progress.csv" + classQuery(sc, "?"), Title: t("instr.export.progress")},
			{Href: "/instructor/export/attempts.csv" + classQuery(sc, "?"), Title: t("instr.export.attempts")},
			{Href: "/instructor/export/runs.csv" + classQuery(sc, "?"), Title: t("instr.export.runs")},
			{Href: "/instructor/export/gradebook.csv" + classQuery(sc, "?"), Title: t("grade.title")},
		},
		ClassName:     cohort.Name,
		GradebookHref: "/instructor/gradebook" + classQuery(sc, "?"),
	}
	if v.Classes, err = s.classPicks(r, sc); err != nil {
		s.InternalError(w, r, err)
		return
	}
	if sc.Cohort > 0 {
		_, graded, err := s.lessonModes(r, cohort)
		if err != nil {
			s.InternalError(w, r, err)
			return
		}
		for _, l := range course.Lessons {
			if m, ok := graded[l.Slug]; ok {
				v.Graded = append(v.Graded, views.Link{Href: page.LessonHref(l.Slug), Title: lessonTitle(course, l.Slug, lang) + " · " + m})
			}
		}
		v.GradedHref = gradedHref(cohort)
	}
	for i, d := range course.Warnings {
		if i == maxDashWarnings {
			v.MoreWarnings = len(course.Warnings) - i
			break
		}
		v.Warnings = append(v.Warnings, d.String())
	}
	if s.cfg.Live != nil {
		for _, d := range s.cfg.Live.Snapshot().Errors {
			v.CourseErrors = append(v.CourseErrors, d.String())
		}
	}

	v.Active, v.Total = lp.Active, lp.Total
	v.Pager = s.dashPager(lang, sc, pageNo, lp.Total)
	for _, l := range lp.Learners {
		active := now.Sub(l.LastActive) <= activeWindow
		v.Learners = append(v.Learners, views.DashLearner{
			Name: l.DisplayName, Short: shortID(l.ID), LastActive: s.ago(lang, now.Sub(l.LastActive), l.LastActive),
			Active: active, Opened: l.Opened, Completed: l.Completed, Attempts: l.Attempts, Correct: l.Correct, Runs: l.Runs, TasksDone: l.TasksDone, ProgramsOK: l.ProgramsOK,
		})
	}

	attempts := quizAttempts(stored)
	for _, l := range course.Lessons {
		p := l.Page(lang)
		c := counts[l.Slug]
		dl := views.DashLesson{Slug: l.Slug, Title: p.Title, Href: page.LessonHref(l.Slug),
			Opened: c.Opened, Completed: c.Completed, Learners: lp.Total}
		if l.Quiz != nil {
			stats := quiz.ComputeStats(l.Quiz.Questions, attempts)
			for i, q := range l.Quiz.Questions {
				dq := dashQuestion(q, stats[i], attempts, lang)
				dq.Reveals, dq.FormatErr = qevents[q.ID].Reveals, qevents[q.ID].FormatErrors
				dl.Questions = append(dl.Questions, dq)
			}
		}
		dl.Programs = dashPrograms(l, programs)
		v.Lessons = append(v.Lessons, dl)
	}

	for _, e := range runs {
		de := views.DashExperiment{ID: e.Experiment, Title: e.Experiment, Total: e.Total, Learners: e.Learners}
		if s.cfg.Experiments != nil {
			if x := s.cfg.Experiments.Get(e.Experiment); x != nil {
				de.Title = x.Title.Get(lang)
				if de.Title == "" {
					de.Title = e.Experiment
				}
			}
		}
		for _, st := range runStatusOrder {
			if n := e.ByStatus[string(st)]; n > 0 {
				de.Statuses = append(de.Statuses, views.DashStatus{Status: string(st), Label: string(st), Count: n})
			}
		}
		v.Experiments = append(v.Experiments, de)
	}
	s.Render(w, r, http.StatusOK, views.DashboardView(v))
}

// dashPrograms sums the class's records of l's :::program exercises, in
// the lesson's order (records of programs since removed are left out).
func dashPrograms(l *lessons.Lesson, rows []store.ProgramRow) []views.DashProgram {
	out := make([]views.DashProgram, len(l.Programs))
	at := map[string]int{}
	for i, p := range l.Programs {
		out[i].ID = p.ID
		at[p.ID] = i
	}
	for _, r := range rows {
		i, ok := at[r.Program]
		if r.Lesson != l.Slug || !ok {
			continue
		}
		d := &out[i]
		d.Runs += r.Attempts
		if r.Attempts > 0 {
			d.Tried++
		}
		if r.Passed() {
			d.Passed++
		}
		if !r.SolutionAt.IsZero() {
			d.Solution++
		}
	}
	return out
}

// runStatusOrder is the order outcomes are listed in.
var runStatusOrder = []sandbox.Status{
	sandbox.StatusDone, sandbox.StatusFailed, sandbox.StatusTimedOut, sandbox.StatusCancelled,
	sandbox.StatusInterrupted, sandbox.StatusRunning, sandbox.StatusQueued,
}

// maxDashWarnings bounds the course warnings the dashboard lists (`labserver
// check` prints them all).
const maxDashWarnings = 100

// quizAttempts converts stored attempts for quiz.ComputeStats. Answers are
// read by shape alone (quiz.StoredAnswer), so attempts at options an author
// has since removed stay readable.
func quizAttempts(stored []store.Attempt) []quiz.Attempt {
	out := make([]quiz.Attempt, len(stored))
	for i, a := range stored {
		out[i] = quiz.Attempt{Learner: a.Learner, QuestionID: a.QuestionID, Answer: quiz.StoredAnswer(a.Answer), Correct: a.Correct, Seen: a.Seen}
	}
	return out
}

// dashQuestion is one question's statistics for the page, plus the choices
// of options that no longer exist (counted from the raw attempts, which
// ComputeStats ignores).
func dashQuestion(q *quiz.Question, st quiz.QuestionStats, attempts []quiz.Attempt, lang string) views.DashQuestion {
	dq := views.DashQuestion{
		ID: q.ID, Type: string(q.Type), Prompt: plainPrompt(q.Prompt.Get(lang)),
		Learners: st.Learners, Attempts: st.Attempts, Facility: "–",
	}
	if st.Learners > 0 {
		dq.FacPct = int(st.Facility*100 + 0.5)
		dq.Facility = strconv.Itoa(dq.FacPct) + "%"
	}
	if st.MostPickedWrong != nil {
		dq.WrongPick = st.MostPickedWrong.ID
	}
	text := map[string]string{}
	for _, o := range q.Options {
		text[o.ID] = page.PlainText(o.Text.Get(lang)) // Markdown markers (`code`, **bold**) are not shown raw
	}
	pct := func(n int) int {
		if st.Attempts == 0 {
			return 0
		}
		return n * 100 / st.Attempts
	}
	for _, o := range st.Options {
		dq.Options = append(dq.Options, views.DashOption{ID: o.ID, Text: text[o.ID], Correct: o.Correct,
			Chosen: o.Chosen, FirstChosen: o.FirstChosen, Pct: pct(o.Chosen)})
	}
	if q.Type == quiz.Single || q.Type == quiz.Multi {
		removed := map[string]*views.DashOption{}
		var order []string
		seen := map[string]bool{}
		for _, a := range attempts {
			if a.QuestionID != q.ID {
				continue
			}
			first := !seen[a.Learner]
			seen[a.Learner] = true
			ids := a.Answer.Choices
			if q.Type == quiz.Single {
				ids = []string{a.Answer.Choice}
			}
			for _, id := range uniqIDs(ids) {
				if _, ok := text[id]; ok || id == "" {
					continue
				}
				o := removed[id]
				if o == nil {
					o = &views.DashOption{ID: id, Removed: true}
					removed[id] = o
					order = append(order, id)
				}
				o.Chosen++
				if first {
					o.FirstChosen++
				}
			}
		}
		slices.Sort(order)
		for _, id := range order {
			o := removed[id]
			o.Pct = pct(o.Chosen)
			dq.Options = append(dq.Options, *o)
		}
	}
	for _, val := range st.Values {
		dq.Values = append(dq.Values, views.DashValue{
			Value: strconv.FormatFloat(val.Value, 'g', -1, 64), Correct: val.Correct, Count: val.Count})
	}
	return dq
}

func uniqIDs(ids []string) []string {
	var out []string
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// plainPrompt is a one-line version of a Markdown prompt for the overview.
func plainPrompt(md string) string {
	s := strings.Join(strings.Fields(md), " ")
	s = strings.NewReplacer("**", "", "`", "", "__", "").Replace(s)
	if r := []rune(s); len(r) > 140 {
		s = string(r[:139]) + "…"
	}
	return s
}

// shortID is enough of an anonymous learner id to tell learners apart.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// ago says how long ago t was, in lang.
func (s *Area) ago(lang string, d time.Duration, t time.Time) string {
	switch {
	case t.IsZero():
		return "–"
	case d < time.Minute:
		return s.tr(lang)("instr.ago.now")
	case d < time.Hour:
		return s.trf(lang, "instr.ago.min", int(d/time.Minute))
	case d < 24*time.Hour:
		return s.trf(lang, "instr.ago.hour", int(d/time.Hour))
	case d < 14*24*time.Hour:
		return s.trf(lang, "instr.ago.day", int(d/(24*time.Hour)))
	}
	return t.Local().Format("2006-01-02")
}
