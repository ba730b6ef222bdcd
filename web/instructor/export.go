package instructor

import (
	"bytes"
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rdmalab/rdmalab/internal/textclip"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
)

// The CSV exports give instructors the raw class data. Files start with a
// UTF-8 byte order mark so spreadsheet programs read Chinese names right;
// learner-written text that a spreadsheet would run as a formula (=, +, -, @)
// is prefixed with a quote. Times are RFC 3339 UTC.

// csvText defuses spreadsheet formulas in text a learner wrote. Spreadsheets
// skip leading spaces before a formula and some read the full-width signs
// (＝＋－＠) as formula starts too, so the first character that is not a
// space decides (and a cell that starts with a tab or line break is
// guarded whatever follows).
func csvText(s string) string {
	lead := strings.TrimLeftFunc(s, unicode.IsSpace)
	if lead != s && strings.ContainsAny(s[:len(s)-len(lead)], "\t\r\n") {
		return "'" + s
	}
	if r, _ := utf8.DecodeRuneInString(lead); lead != "" && strings.ContainsRune("=+-@|＝＋－＠", r) {
		return "'" + s
	}
	return s
}

// MaxWorkerText bounds a cell a worker may have written (runs.csv).
const MaxWorkerText = 1000

// csvWorkerText is csvText for text a worker sent, cut to MaxWorkerText
// bytes (on a rune boundary).
func csvWorkerText(s string) string { return csvText(textclip.Bytes(s, MaxWorkerText)) }

// csvFile is rows as a CSV file: a BOM, then the records.
func csvFile(rows [][]string) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("\ufeff")
	cw := csv.NewWriter(&buf)
	if err := cw.WriteAll(rows); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeCSV sends rows as a download named name.
func (s *Area) writeCSV(w http.ResponseWriter, r *http.Request, name string, rows [][]string) {
	b, err := csvFile(rows)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	sendCSV(w, name, b)
}

// sendCSV sends a CSV file's bytes as a download named name.
func sendCSV(w http.ResponseWriter, name string, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// exportProgress is GET /instructor/export/progress.csv: one row per learner
// and opened lesson.
func (s *Area) exportProgress(w http.ResponseWriter, r *http.Request) {
	sc, _, ok := s.requestScope(w, r)
	if !ok {
		return
	}
	rows, err := s.cfg.Store.ClassProgressIn(r.Context(), sc)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	course := s.course()
	out := [][]string{{"learner", "display_name", "lesson", "lesson_title", "opened_at", "completed_at"}}
	for _, p := range rows {
		out = append(out, []string{p.Learner, csvText(p.DisplayName), p.Lesson, lessonTitle(course, p.Lesson, page.LangOf(r)),
			page.TimeRFC3339(p.OpenedAt), page.TimeRFC3339(p.CompletedAt)})
	}
	s.writeCSV(w, r, "progress.csv", out)
}

// exportAttempts is GET /instructor/export/attempts.csv: every quiz
// attempt, the answer as the stored JSON (readable even when the question
// or its options changed since).
func (s *Area) exportAttempts(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sc, _, ok := s.requestScope(w, r)
	if !ok {
		return
	}
	attempts, err := s.cfg.Store.ClassAttemptsIn(ctx, sc)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	names, err := s.cfg.Store.DisplayNames(ctx)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	reveals, err := s.cfg.Store.ClassRevealsIn(ctx, sc)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	var graded map[string]store.GradedLesson
	if sc.Cohort > 0 {
		if graded, err = s.cfg.Store.GradedLessons(ctx, sc.Cohort); err != nil {
			s.InternalError(w, r, err)
			return
		}
	}
	course := s.course()
	lessonOf := map[string]string{}
	for _, l := range course.Lessons {
		if l.Quiz != nil {
			for _, q := range l.Quiz.Questions {
				lessonOf[q.ID] = l.Slug
			}
		}
	}
	// answer_seen: the answer was on the learner's screen when they sent
	// it ("show answer", or shown by itself after wrong tries): a right
	// answer then earns nothing. mode: the class grades the lesson
	// (graded) or not (practice); counted: graded, and the answer is one
	// the rules weigh (made between the open and close dates, within the
	// attempt limit); revealed: the learner chose "show answer" at the
	// question (graded: in the window, so it scores 0). event: "answer",
	// or "reveal" for a graded "show answer", listed so the flag is there
	// even when no answer followed.
	type lq struct{ learner, question string }
	revealsAt := map[lq][]time.Time{}
	for _, rv := range reveals {
		k := lq{rv.Learner, rv.QuestionID}
		revealsAt[k] = append(revealsAt[k], rv.At)
	}
	made := map[lq]int{} // counted answers so far, by learner and question
	out := [][]string{{"attempt", "learner", "display_name", "lesson", "question", "type", "answer", "correct", "answer_seen", "created_at",
		"mode", "counted", "revealed", "event"}}
	for _, a := range attempts {
		typ := ""
		if q := course.Questions[a.QuestionID]; q != nil {
			typ = string(q.Type)
		}
		k := lq{a.Learner, a.QuestionID}
		mode, counted, revealed := "practice", "", len(revealsAt[k]) > 0
		if set, ok := graded[lessonOf[a.QuestionID]]; ok {
			rules := page.GradedRules(set)
			in := rules.PhaseAt(a.CreatedAt) == quiz.Open && made[k] < rules.Limit
			if in {
				made[k]++
			}
			mode, counted, revealed = "graded", strconv.FormatBool(in), rules.Revealed(revealsAt[k])
		}
		out = append(out, []string{strconv.FormatInt(a.ID, 10), a.Learner, csvText(names[a.Learner]), lessonOf[a.QuestionID],
			a.QuestionID, typ, string(a.Answer), strconv.FormatBool(a.Correct), strconv.FormatBool(a.Seen), page.TimeRFC3339(a.CreatedAt),
			mode, counted, strconv.FormatBool(revealed), "answer"})
	}
	for _, rv := range reveals {
		set, ok := graded[lessonOf[rv.QuestionID]]
		if !ok || page.GradedRules(set).PhaseAt(rv.At) != quiz.Open {
			continue
		}
		typ := ""
		if q := course.Questions[rv.QuestionID]; q != nil {
			typ = string(q.Type)
		}
		out = append(out, []string{"", rv.Learner, csvText(names[rv.Learner]), lessonOf[rv.QuestionID],
			rv.QuestionID, typ, "", "", "true", page.TimeRFC3339(rv.At), "graded", "false", "true", "reveal"})
	}
	s.writeCSV(w, r, "attempts.csv", out)
}

// exportRuns is GET /instructor/export/runs.csv: every experiment run and
// how it ended.
func (s *Area) exportRuns(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sc, _, ok := s.requestScope(w, r)
	if !ok {
		return
	}
	runs, err := s.cfg.Store.ClassRunsIn(ctx, sc)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	names, err := s.cfg.Store.DisplayNames(ctx)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	out := [][]string{{"run", "learner", "display_name", "experiment", "params", "status", "backend",
		"result_ok", "result", "error", "created_at", "started_at", "finished_at", "duration_s"}}
	for _, run := range runs {
		ok, verdict := "", ""
		if run.Result != nil {
			verdict = run.Result.Message
			if run.Result.OK != nil {
				ok = strconv.FormatBool(*run.Result.OK)
			}
		}
		dur := ""
		if !run.StartedAt.IsZero() && !run.FinishedAt.IsZero() {
			dur = strconv.FormatFloat(run.FinishedAt.Sub(run.StartedAt).Seconds(), 'f', 3, 64)
		}
		// backend, result and error may come from a worker (another
		// machine, untrusted): bounded and guarded like a learner's text.
		out = append(out, []string{run.ID, run.Learner, csvText(names[run.Learner]), run.Experiment, string(run.Params),
			string(run.Status), csvWorkerText(run.Backend), ok, csvWorkerText(verdict), csvWorkerText(run.Error),
			page.TimeRFC3339(run.CreatedAt), page.TimeRFC3339(run.StartedAt), page.TimeRFC3339(run.FinishedAt), dur})
	}
	s.writeCSV(w, r, "runs.csv", out)
}

// lessonTitle is a lesson's title in lang ("" for a lesson no longer in the course).
func lessonTitle(c *lessons.Course, slug, lang string) string {
	if l := c.Lesson(slug); l != nil {
		if p := l.Page(lang); p != nil {
			return p.Title
		}
	}
	return ""
}
