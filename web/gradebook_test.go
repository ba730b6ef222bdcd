package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/store"
)

// TestGradebookScriptedClass: three learners join a class and answer
// known questions through the real endpoints; a fourth answers outside
// the class. The class's gradebook CSV matches, cell for cell.
func TestGradebookScriptedClass(t *testing.T) {
	e := newInstrEnv(t)
	ada := e.instructor("ada", "correct horse battery")
	ctx := context.Background()
	cl, err := e.DB.CreateCohort(ctx, "group A", 0)
	if err != nil {
		t.Fatal(err)
	}
	join := func(name string) (*http.Client, string) {
		c := e.browser()
		res := e.do(c, "POST", "/join", url.Values{"code": {cl.Code}})
		res.Body.Close()
		if name != "" {
			e.do(c, "POST", "/me", url.Values{"name": {name}}).Body.Close()
		}
		return c, learnerOf(t, c, e.HTTP.URL)
	}
	ann, annID := join("Ann")
	bob, bobID := join("=cmd") // a formula: guarded in the CSV
	_, catID := join("")
	// ann: single wrong then right, multi right, numeric right; completes the lesson.
	e.answer(ann, "alpha/single", `{"answer":"b"}`)
	e.answer(ann, "alpha/single", `{"answer":"a"}`)
	e.answer(ann, "alpha/multi", `{"answer":["x","y"]}`)
	e.answer(ann, "alpha/num", `{"answer":12.5}`)
	res := e.do(ann, "POST", "/lessons/01-alpha/complete", url.Values{})
	res.Body.Close()
	// bob: single right, numeric wrong twice; then "show answer" on the
	// multi question and answering it right: right, no credit, flagged.
	e.answer(bob, "alpha/single", `{"answer":"a"}`)
	e.answer(bob, "alpha/num", `{"answer":12}`)
	e.answer(bob, "alpha/num", `{"answer":13}`)
	e.answer(bob, "alpha/multi", `{"reveal":true}`)
	e.answer(bob, "alpha/multi", `{"answer":["x","y"]}`)
	// cat joined and did nothing else. dan is in no class.
	dan := e.browser()
	e.answer(dan, "alpha/single", `{"answer":"c"}`)

	got := e.fetchCSV(ada, "/instructor/export/gradebook.csv?class="+itoa64(cl.ID))
	p, err := e.DB.LearnerProgress(ctx, annID)
	if err != nil {
		t.Fatal(err)
	}
	annDone := p["01-alpha"].CompletedAt.UTC().Format(time.RFC3339)
	want := [][]string{
		{"learner", "display_name", "lesson", "lesson_title", "score", "questions", "answer_seen", "completed", "completed_at", "attempts", "runs", "tasks_done", "tasks", "programs_passed", "programs", "program_runs",
			"mode", "opens_at", "closes_at", "attempt_limit", "counts", "revealed"},
	}
	// Most recently active first: bob answered after ann, cat only joined.
	want = append(want,
		[]string{bobID, "'=cmd", "01-alpha", "阿尔法", "1", "4", "1", "false", "", "4", "0", "0", "0", "0", "0", "0", "practice", "", "", "", "", ""},
		[]string{annID, "Ann", "01-alpha", "阿尔法", "3", "4", "0", "true", annDone, "4", "0", "0", "0", "0", "0", "0", "practice", "", "", "", "", ""},
		[]string{catID, "", "01-alpha", "阿尔法", "0", "4", "0", "false", "", "0", "0", "0", "0", "0", "0", "0", "practice", "", "", "", "", ""},
	)
	if len(got) != len(want) {
		t.Fatalf("gradebook has %d rows, want %d:\n%q", len(got), len(want), got)
	}
	for i := range want {
		if strings.Join(got[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d:\n got %q\nwant %q", i, got[i], want[i])
		}
	}

	// The page: three rows, and the hardest question first (alpha/num:
	// ann right, bob wrong first → 50%; alpha/single: ann wrong first,
	// bob right → 50% too; alpha/multi: ann right, bob right after "show
	// answer", which is no success → 50%; ties by learners then id).
	doc := e.page(e.do(ada, "GET", "/instructor/gradebook?lang=en&class="+itoa64(cl.ID), nil), http.StatusOK)
	if n := doc.Find(`[data-testid=grade-row]`).Length(); n != 3 {
		t.Errorf("%d gradebook rows, want 3", n)
	}
	if got := doc.Find(`[data-testid=grade-seen]`).Text(); strings.TrimSpace(got) != "answers seen 1" {
		t.Errorf("the page flags seen answers as %q", got)
	}
	var order []string
	doc.Find(`[data-testid=hard-question]`).Each(func(_ int, q *goquery.Selection) {
		order = append(order, q.AttrOr("data-id", "")+" "+strings.TrimSpace(q.Find(`[data-testid=facility]`).Text()))
	})
	if strings.Join(order, ", ") != "alpha/multi 50%, alpha/num 50%, alpha/single 50%" {
		t.Errorf("hardest questions: %v", order)
	}
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// TestGradebookRuns: runs count for the lessons that show the experiment.
func TestGradebookRuns(t *testing.T) {
	page := func(exp string) map[string]*lessons.Page {
		return map[string]*lessons.Page{"en": {Body: []lessons.Segment{{Kind: lessons.SegExperiment, ID: exp}}}}
	}
	c := &lessons.Course{Lessons: []*lessons.Lesson{
		{Slug: "01-a", Pages: page("memlock"), Quiz: &quiz.Set{}},
		{Slug: "02-b", Pages: page("memlock")},
		{Slug: "03-c", Pages: page("tcp-cost")},
	}}
	rows := gradebook(c, []store.LearnerSummary{{ID: "L1"}}, nil, nil, nil,
		[]store.Run{{Learner: "L1", Experiment: "memlock"}, {Learner: "L1", Experiment: "memlock"}, {Learner: "L2", Experiment: "tcp-cost"}}, nil, nil, nil)
	if len(rows) != 1 || rows[0].Cells[0].Runs != 2 || rows[0].Cells[1].Runs != 2 || rows[0].Cells[2].Runs != 0 {
		t.Errorf("rows = %+v", rows)
	}
}

// TestGradebookTasks: tasks done count per learner and lesson, out of the
// tasks the lesson has now; checks that never passed and tasks no longer
// in the lesson do not count.
func TestGradebookTasks(t *testing.T) {
	c := &lessons.Course{Lessons: []*lessons.Lesson{
		{Slug: "01-a", Tasks: []*lessons.Task{{ID: "memlock"}, {ID: "write-bw"}}},
		{Slug: "02-b"},
	}}
	done := time.Now()
	rec := func(learner, lesson, task string, passed bool) store.TaskRow {
		r := store.TaskRow{Learner: learner, TaskProgress: store.TaskProgress{Lesson: lesson, Task: task, Checks: 2}}
		if passed {
			r.DoneAt = done
		}
		return r
	}
	rows := gradebook(c, []store.LearnerSummary{{ID: "L1"}, {ID: "L2"}}, nil, nil, nil, nil, []store.TaskRow{
		rec("L1", "01-a", "memlock", true), rec("L1", "01-a", "write-bw", false), rec("L1", "01-a", "gone", true),
		rec("L2", "01-a", "memlock", true), rec("L2", "01-a", "write-bw", true),
	}, nil, nil)
	got := func(i, j int) string {
		g := rows[i].Cells[j]
		return strconv.Itoa(g.TasksDone) + "/" + strconv.Itoa(g.Tasks)
	}
	if got(0, 0) != "1/2" || got(1, 0) != "2/2" || got(0, 1) != "0/0" {
		t.Errorf("tasks: L1 %s, L2 %s, L1 on 02-b %s; want 1/2, 2/2, 0/0", got(0, 0), got(1, 0), got(0, 1))
	}
}

// TestGradebookSeenAnswers (issue 29 item 5): a right answer made with the
// answer shown scores nothing and is flagged; a reveal is flagged; a clean
// right answer before is not undone.
func TestGradebookSeenAnswers(t *testing.T) {
	c := &lessons.Course{Lessons: []*lessons.Lesson{{Slug: "01-a", Quiz: &quiz.Set{Questions: []*quiz.Question{{ID: "a/q1"}, {ID: "a/q2"}, {ID: "a/q3"}}}}}}
	rows := gradebook(c, []store.LearnerSummary{{ID: "L1"}, {ID: "L2"}}, nil, []store.Attempt{
		{Learner: "L1", QuestionID: "a/q1", Correct: false},
		{Learner: "L1", QuestionID: "a/q1", Correct: true, Seen: true}, // after three wrong tries or "show answer"
		{Learner: "L1", QuestionID: "a/q2", Correct: true},             // clean
		{Learner: "L2", QuestionID: "a/q1", Correct: true},
		{Learner: "L2", QuestionID: "a/q2", Correct: true, Seen: true},
	}, []store.Reveal{{Learner: "L1", QuestionID: "a/q3"}}, nil, nil, nil, nil)
	g1, g2 := rows[0].Cells[0], rows[1].Cells[0]
	if g1.Score != 1 || g1.Seen != 2 || g1.Attempts != 3 {
		t.Errorf("L1: score %d, seen %d, attempts %d; want 1, 2, 3", g1.Score, g1.Seen, g1.Attempts)
	}
	if g2.Score != 1 || g2.Seen != 1 {
		t.Errorf("L2: score %d, seen %d; want 1, 1", g2.Score, g2.Seen)
	}
}

// TestGradebookPrograms: programs passed and checked runs per learner and
// lesson, out of the programs the lesson has now.
func TestGradebookPrograms(t *testing.T) {
	c := &lessons.Course{Lessons: []*lessons.Lesson{
		{Slug: "04-p", Programs: []*lessons.Program{{ID: "open"}, {ID: "write"}}},
	}}
	rec := func(learner, program string, attempts, passes int) store.ProgramRow {
		r := store.ProgramRow{Learner: learner, ProgramProgress: store.ProgramProgress{Lesson: "04-p", Program: program, Attempts: attempts, Passes: passes}}
		if passes > 0 {
			r.PassedAt = time.Now()
		}
		return r
	}
	rows := gradebook(c, []store.LearnerSummary{{ID: "L1"}, {ID: "L2"}}, nil, nil, nil, nil, nil, []store.ProgramRow{
		rec("L1", "open", 3, 1), rec("L1", "write", 2, 0), rec("L1", "gone", 5, 5), rec("L2", "open", 1, 0),
	}, nil)
	g1, g2 := rows[0].Cells[0], rows[1].Cells[0]
	if g1.ProgramsPassed != 1 || g1.Programs != 2 || g1.ProgramRuns != 5 || g2.ProgramsPassed != 0 || g2.ProgramRuns != 1 {
		t.Errorf("L1 %+v, L2 %+v; want L1 1/2 in 5 runs, L2 0/2 in 1", g1, g2)
	}
}
