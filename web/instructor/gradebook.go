package instructor

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// The gradebook: learner × lesson. For each lesson of the course:
//   - score: the lesson's questions (quiz.yaml) answered right at least
//     once without the answer shown (store.Attempt.Clean), out of how
//     many the lesson has;
//   - answer_seen: the lesson's questions whose answer the learner saw
//     ("show answer", or shown by itself after wrong tries) before
//     answering right, if ever: they score nothing;
//   - completed: the learner marked the lesson complete;
//   - attempts: answers submitted to the lesson's questions;
//   - runs: runs of the experiments the lesson's pages show (an experiment
//     shown by two lessons counts in both);
//   - tasks: the lesson's :::task steps the learner's Check verified, out
//     of the tasks the lesson has now (a removed task no longer counts);
//   - programs: the lesson's :::program exercises passed, out of those it
//     has now; their checked runs, the hints revealed and the exercises
//     whose solution was shown (a removed exercise no longer counts);
//   - points: the score plus the exercises passed before their solution
//     was shown (and before a graded lesson's close), out of the
//     questions plus the exercises — the lesson's score in the LMS.
// Learners are those the dashboard counts (store.Scope), most recently
// active first, as on the dashboard.
//
// A lesson the class grades (graded mode, quiz.Graded) is scored by its
// rules instead: per question the answer that counts (first, last or
// best) among those made between the open and close dates, at most the
// attempt limit; a "show answer" in that window scores the question 0
// (answer_seen counts those, revealed names them); completed is computed
// from the work (quiz.LessonGrade.Complete), not the learner's button.

// gradeCell is one learner's record on one lesson.
type gradeCell struct {
	Score, Questions int
	Completed        bool
	CompletedAt      string // RFC 3339 or ""
	Attempts, Runs   int
	TasksDone, Tasks int // the lesson's :::task steps verified done, and how many it has
	Seen             int // questions whose answer was seen before a clean right answer (none scored)
	// the lesson's :::program exercises passed, how many it has, and the
	// learner's checked runs of them
	ProgramsPassed, Programs, ProgramRuns int
	ProgramHints, ProgramSolutions        int // hints revealed; exercises whose solution was shown
	// ProgramPoints: the exercises that earn their point (quiz.ProgramPoint:
	// passed before any solution was shown, and before a graded close).
	// Points of PointsMax is the lesson's score the LMS gets: the score
	// plus ProgramPoints, of the questions plus the programs.
	ProgramPoints, Points, PointsMax int
	// Graded: the class grades the lesson; Revealed are the questions
	// whose answer the learner chose to see in its window (scored 0).
	Graded   *store.GradedLesson
	Revealed []string
}

// gradeRow is one learner.
type gradeRow struct {
	Learner, Name string
	Cells         []gradeCell // in course order
}

// gradebook computes the table for learners over the course.
func gradebook(c *lessons.Course, learners []store.LearnerSummary, progress []store.ProgressRow, attempts []store.Attempt, reveals []store.Reveal, runs []store.Run, tasks []store.TaskRow, programs []store.ProgramRow, graded map[string]store.GradedLesson) []gradeRow {
	type key struct{ learner, lesson string }
	lessonOf := map[string]string{}     // question → lesson
	expLessons := map[string][]string{} // experiment → lessons showing it
	nq := map[string]int{}              // lesson → questions
	for _, l := range c.Lessons {
		if l.Quiz != nil {
			for _, q := range l.Quiz.Questions {
				lessonOf[q.ID] = l.Slug
			}
			nq[l.Slug] = len(l.Quiz.Questions)
		}
		for _, p := range l.Pages {
			for _, seg := range p.Body {
				if seg.Kind == lessons.SegExperiment && !slices.Contains(expLessons[seg.ID], l.Slug) {
					expLessons[seg.ID] = append(expLessons[seg.ID], l.Slug)
				}
			}
		}
	}
	cells := map[key]*gradeCell{}
	cell := func(learner, lesson string) *gradeCell {
		k := key{learner, lesson}
		if cells[k] == nil {
			cells[k] = &gradeCell{}
		}
		return cells[k]
	}
	right := map[key]map[string]bool{}
	seen := map[key]map[string]bool{} // answer seen while not yet right
	mark := func(m map[key]map[string]bool, k key, q string) {
		if m[k] == nil {
			m[k] = map[string]bool{}
		}
		m[k][q] = true
	}
	for _, a := range attempts {
		slug, ok := lessonOf[a.QuestionID]
		if !ok {
			continue // a question no longer in the course
		}
		cell(a.Learner, slug).Attempts++
		k := key{a.Learner, slug}
		if a.Clean() {
			mark(right, k, a.QuestionID)
		} else if a.Seen && !right[k][a.QuestionID] {
			mark(seen, k, a.QuestionID)
		}
	}
	for _, rv := range reveals {
		// A reveal is only offered while the question is not answered
		// right, so it always counts.
		if slug, ok := lessonOf[rv.QuestionID]; ok {
			mark(seen, key{rv.Learner, slug}, rv.QuestionID)
		}
	}
	for k, qs := range right {
		cell(k.learner, k.lesson).Score = len(qs)
	}
	for k, qs := range seen {
		cell(k.learner, k.lesson).Seen = len(qs)
	}
	for _, p := range progress {
		if !p.CompletedAt.IsZero() {
			g := cell(p.Learner, p.Lesson)
			g.Completed, g.CompletedAt = true, page.TimeRFC3339(p.CompletedAt)
		}
	}
	for _, r := range runs {
		for _, slug := range expLessons[r.Experiment] {
			cell(r.Learner, slug).Runs++
		}
	}
	for _, t := range tasks {
		if l := c.Lesson(t.Lesson); t.Done() && l != nil && l.Task(t.Task) != nil {
			cell(t.Learner, t.Lesson).TasksDone++
		}
	}
	for _, p := range programs {
		if l := c.Lesson(p.Lesson); l != nil && l.Program(p.Program) != nil {
			g := cell(p.Learner, p.Lesson)
			g.ProgramRuns += p.Attempts
			g.ProgramHints += p.Hints
			if !p.SolutionAt.IsZero() {
				g.ProgramSolutions++
			}
			if p.Passed() {
				g.ProgramsPassed++
			}
			if quiz.ProgramPoint(p.PassedAt, p.SolutionAt, graded[p.Lesson].Closes) {
				g.ProgramPoints++
			}
		}
	}
	// Graded lessons: each learner's answers and reveals by question, in
	// time order (attempts and reveals come in id and time order).
	type lq struct{ learner, question string }
	tries := map[lq][]quiz.Try{}
	revealsAt := map[lq][]time.Time{}
	if len(graded) > 0 {
		for _, a := range attempts {
			if _, ok := graded[lessonOf[a.QuestionID]]; ok {
				k := lq{a.Learner, a.QuestionID}
				tries[k] = append(tries[k], quiz.Try{At: a.CreatedAt, Correct: a.Correct, Seen: a.Seen})
			}
		}
		for _, rv := range reveals {
			if _, ok := graded[lessonOf[rv.QuestionID]]; ok {
				k := lq{rv.Learner, rv.QuestionID}
				revealsAt[k] = append(revealsAt[k], rv.At)
			}
		}
	}
	out := make([]gradeRow, 0, len(learners))
	for _, l := range learners {
		row := gradeRow{Learner: l.ID, Name: l.DisplayName}
		for _, les := range c.Lessons {
			g := gradeCell{}
			if p := cells[key{l.ID, les.Slug}]; p != nil {
				g = *p
			}
			g.Questions = nq[les.Slug]
			g.Tasks = len(les.Tasks)
			g.Programs = len(les.Programs)
			if set, ok := graded[les.Slug]; ok && les.Quiz != nil {
				ids := make([]string, len(les.Quiz.Questions))
				qt, qr := map[string][]quiz.Try{}, map[string][]time.Time{}
				for i, q := range les.Quiz.Questions {
					ids[i] = q.ID
					qt[q.ID], qr[q.ID] = tries[lq{l.ID, q.ID}], revealsAt[lq{l.ID, q.ID}]
				}
				lg := page.GradedRules(set).Lesson(ids, qt, qr)
				g.Graded, g.Score, g.Seen, g.Revealed = &set, lg.Score, len(lg.Revealed), lg.Revealed
				g.Completed = lg.Complete(quiz.Work{TasksDone: g.TasksDone, Tasks: g.Tasks, ProgramsPassed: g.ProgramsPassed, Programs: g.Programs})
				g.CompletedAt = "" // computed from the work: no moment to report
			}
			g.Points, g.PointsMax = g.Score+g.ProgramPoints, g.Questions+g.Programs
			row.Cells = append(row.Cells, g)
		}
		out = append(out, row)
	}
	return out
}

// gradebookData loads what gradebook needs for the request's class.
func (s *Area) gradebookData(w http.ResponseWriter, r *http.Request, limit, offset int) (rows []gradeRow, lp store.LearnerPage, sc store.Scope, cohort store.Cohort, ok bool) {
	ctx := r.Context()
	sc, cohort, ok = s.requestScope(w, r)
	if !ok {
		return nil, lp, sc, cohort, false
	}
	db := s.cfg.Store
	var err error
	fail := func() bool {
		if err != nil {
			s.InternalError(w, r, err)
			return true
		}
		return false
	}
	lp, err = db.ClassLearnersIn(ctx, sc, limit, offset, time.Now().Add(-activeWindow))
	if fail() {
		return nil, lp, sc, cohort, false
	}
	rows, err = s.gradebookRows(ctx, sc, lp.Learners)
	if fail() {
		return nil, lp, sc, cohort, false
	}
	return rows, lp, sc, cohort, true
}

// gradebookRows loads what gradebook needs for learners of scope sc and
// computes their rows.
func (s *Area) gradebookRows(ctx context.Context, sc store.Scope, learners []store.LearnerSummary) ([]gradeRow, error) {
	db := s.cfg.Store
	progress, err := db.ClassProgressIn(ctx, sc)
	if err != nil {
		return nil, err
	}
	attempts, err := db.ClassAttemptsIn(ctx, sc)
	if err != nil {
		return nil, err
	}
	runs, err := db.ClassRunsIn(ctx, sc)
	if err != nil {
		return nil, err
	}
	tasks, err := db.ClassTasksIn(ctx, sc)
	if err != nil {
		return nil, err
	}
	reveals, err := db.ClassRevealsIn(ctx, sc)
	if err != nil {
		return nil, err
	}
	programs, err := db.ClassProgramsIn(ctx, sc)
	if err != nil {
		return nil, err
	}
	var graded map[string]store.GradedLesson
	if sc.Cohort > 0 {
		// Graded mode is a class's: the all-learners view scores practice.
		if graded, err = db.GradedLessons(ctx, sc.Cohort); err != nil {
			return nil, err
		}
	}
	return gradebook(s.course(), learners, progress, attempts, reveals, runs, tasks, programs, graded), nil
}

// LessonScore is a learner's result on a lesson in a class, as that
// class's gradebook computes it: by the graded rules where the class
// grades the lesson (quiz.Graded), else practice (right at least once
// without the answer shown). For the LMS grade passback (LTI AGS), so the
// platform gets the gradebook's figure.
type LessonScore struct {
	Score, Questions int
	// Points of PointsMax: Score plus the program exercises that earn
	// their point, of the questions plus the programs (what the LMS gets).
	Points, PointsMax int
	Graded            bool     // the class grades the lesson
	Completed         bool     // graded: computed from the work; practice: marked by the learner
	Revealed          []string // graded: questions whose answer the learner chose to see (scored 0)
}

// ErrNoLesson: LessonScore was asked for a lesson the course does not have.
var ErrNoLesson = errors.New("instructor: no such lesson")

// LessonScore returns learner's LessonScore on lesson in class cohort
// (counting, as the gradebook does, only work done in the class's term).
func (s *Area) LessonScore(ctx context.Context, cohort int64, learner, lesson string) (LessonScore, error) {
	c := s.course()
	idx := slices.IndexFunc(c.Lessons, func(l *lessons.Lesson) bool { return l.Slug == lesson })
	if idx < 0 {
		return LessonScore{}, ErrNoLesson
	}
	rows, err := s.gradebookRows(ctx, store.Scope{Cohort: cohort}, []store.LearnerSummary{{ID: learner}})
	if err != nil {
		return LessonScore{}, err
	}
	g := rows[0].Cells[idx]
	return LessonScore{Score: g.Score, Questions: g.Questions, Points: g.Points, PointsMax: g.PointsMax, Graded: g.Graded != nil, Completed: g.Completed, Revealed: g.Revealed}, nil
}

// exportGradebook is GET /instructor/export/gradebook.csv[?class=ID]: one
// row per learner and lesson.
func (s *Area) exportGradebook(w http.ResponseWriter, r *http.Request) {
	rows, _, _, _, ok := s.gradebookData(w, r, 0, 0)
	if !ok {
		return
	}
	c := s.course()
	lang := page.LangOf(r)
	// mode, opens_at, closes_at, attempt_limit, counts: the class's graded
	// setting of the lesson ("practice" and empty without one); revealed:
	// the questions whose answer the learner chose to see while graded
	// (each scored 0), separated by spaces; lms_user_id, lms_email: the
	// learner's LMS identity (the launch's sub and email claim), so the
	// rows match the LMS gradebook ("" for a learner not from an LMS);
	// points, points_max: the lesson's score as the LMS gets it (the
	// score plus the program exercises that earn their point).
	ids, err := s.cfg.Store.LTIIdentities(r.Context())
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	out := [][]string{{"learner", "display_name", "lesson", "lesson_title", "score", "questions", "answer_seen", "completed", "completed_at", "attempts", "runs", "tasks_done", "tasks", "programs_passed", "programs", "program_runs",
		"program_hints", "program_solutions", "mode", "opens_at", "closes_at", "attempt_limit", "counts", "revealed", "lms_user_id", "lms_email", "points", "points_max"}}
	for _, row := range rows {
		for i, g := range row.Cells {
			l := c.Lessons[i]
			mode := []string{"practice", "", "", "", "", ""}
			if set := g.Graded; set != nil {
				mode = []string{"graded", page.TimeRFC3339(set.Opens), page.TimeRFC3339(set.Closes), strconv.Itoa(set.Limit), set.Counts, strings.Join(g.Revealed, " ")}
			}
			out = append(out, append([]string{row.Learner, csvText(row.Name), l.Slug, lessonTitle(c, l.Slug, lang),
				strconv.Itoa(g.Score), strconv.Itoa(g.Questions), strconv.Itoa(g.Seen), strconv.FormatBool(g.Completed), g.CompletedAt,
				strconv.Itoa(g.Attempts), strconv.Itoa(g.Runs), strconv.Itoa(g.TasksDone), strconv.Itoa(g.Tasks),
				strconv.Itoa(g.ProgramsPassed), strconv.Itoa(g.Programs), strconv.Itoa(g.ProgramRuns),
				strconv.Itoa(g.ProgramHints), strconv.Itoa(g.ProgramSolutions)}, append(mode,
				csvText(ids[row.Learner].Sub), csvText(ids[row.Learner].Email), strconv.Itoa(g.Points), strconv.Itoa(g.PointsMax))...))
		}
	}
	s.writeCSV(w, r, "gradebook.csv", out)
}

// gradebookShow is GET /instructor/gradebook[?class=ID&page=N]: the table
// (one page of learners) and the course's hardest questions.
func (s *Area) gradebookShow(w http.ResponseWriter, r *http.Request) {
	lang := page.LangOf(r)
	t := s.tr(lang)
	pageNo, _ := strconv.Atoi(r.URL.Query().Get("page"))
	pageNo = max(1, pageNo)
	rows, lp, sc, cohort, ok := s.gradebookData(w, r, DashPageSize, (pageNo-1)*DashPageSize)
	if !ok {
		return
	}
	c := s.course()
	v := views.Gradebook{Chrome: s.Chrome(r, t("grade.title")), ClassName: cohort.Name,
		CSV: "/instructor/export/gradebook.csv" + classQuery(sc, "?")}
	for _, l := range c.Lessons {
		v.Lessons = append(v.Lessons, views.Link{Href: page.LessonHref(l.Slug), Title: l.Page(lang).Title})
	}
	if sc.Cohort > 0 {
		var err error
		if v.Modes, _, err = s.lessonModes(r, cohort); err != nil {
			s.InternalError(w, r, err)
			return
		}
		v.GradedHref = gradedHref(cohort)
	}
	for _, row := range rows {
		vr := views.GradeRow{Name: row.Name, Short: shortID(row.Learner)}
		for i, g := range row.Cells {
			vr.Cells = append(vr.Cells, views.GradeCell{Score: strconv.Itoa(g.Score) + "/" + strconv.Itoa(g.Questions),
				Full: g.Questions > 0 && g.Score == g.Questions, Completed: g.Completed, Attempts: g.Attempts, Runs: g.Runs, Seen: g.Seen})
			if g.Tasks > 0 {
				vr.Cells[len(vr.Cells)-1].Tasks = strconv.Itoa(g.TasksDone) + "/" + strconv.Itoa(g.Tasks)
			}
			if g.Programs > 0 {
				cell := &vr.Cells[len(vr.Cells)-1]
				cell.Programs = s.trf(lang, "grade.programs.of", g.ProgramsPassed, g.Programs, g.ProgramRuns, g.ProgramHints, g.ProgramSolutions)
				cell.ProgramsHref = learnerProgramsHref(row.Learner, c.Lessons[i].Slug, sc)
			}
		}
		v.Rows = append(v.Rows, vr)
	}
	v.Pager = s.dashPager(lang, sc, pageNo, lp.Total)
	if v.Pager.Prev != "" {
		v.Pager.Prev = "/instructor/gradebook" + v.Pager.Prev[len("/instructor"):]
	}
	if v.Pager.Next != "" {
		v.Pager.Next = "/instructor/gradebook" + v.Pager.Next[len("/instructor"):]
	}
	attempts, err := s.cfg.Store.ClassAttemptsIn(r.Context(), sc)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	v.Hardest = hardestQuestions(c, quizAttempts(attempts), lang)
	s.Render(w, r, http.StatusOK, views.GradebookView(v))
}

// hardestQuestions lists every answered question of the course, lowest
// facility first (ties: more learners first, then id).
func hardestQuestions(c *lessons.Course, attempts []quiz.Attempt, lang string) []views.HardQuestion {
	type hq struct {
		views.HardQuestion
		fac float64
	}
	var list []hq
	for _, l := range c.Lessons {
		if l.Quiz == nil {
			continue
		}
		stats := quiz.ComputeStats(l.Quiz.Questions, attempts)
		for i, q := range l.Quiz.Questions {
			st := stats[i]
			if st.Learners == 0 {
				continue
			}
			list = append(list, hq{views.HardQuestion{ID: q.ID, Lesson: l.Slug, Prompt: plainPrompt(q.Prompt.Get(lang)),
				Facility: strconv.Itoa(int(st.Facility*100+0.5)) + "%", Learners: st.Learners, Attempts: st.Attempts}, st.Facility})
		}
	}
	slices.SortStableFunc(list, func(a, b hq) int {
		switch {
		case a.fac != b.fac:
			if a.fac < b.fac {
				return -1
			}
			return 1
		case a.Learners != b.Learners:
			return b.Learners - a.Learners
		}
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	out := make([]views.HardQuestion, len(list))
	for i, h := range list {
		out[i] = h.HardQuestion
	}
	return out
}
