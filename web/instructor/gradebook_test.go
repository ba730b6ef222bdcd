package instructor

import (
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/store"
	"strconv"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/quiz"
)

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
