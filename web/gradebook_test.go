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
			"program_hints", "program_solutions", "mode", "opens_at", "closes_at", "attempt_limit", "counts", "revealed", "lms_user_id", "lms_email", "points", "points_max"},
	}
	// Most recently active first: bob answered after ann, cat only joined.
	want = append(want,
		[]string{bobID, "'=cmd", "01-alpha", "阿尔法", "1", "4", "1", "false", "", "4", "0", "0", "0", "0", "0", "0", "0", "0", "practice", "", "", "", "", "", "", "", "1", "4"},
		[]string{annID, "Ann", "01-alpha", "阿尔法", "3", "4", "0", "true", annDone, "4", "0", "0", "0", "0", "0", "0", "0", "0", "practice", "", "", "", "", "", "", "", "3", "4"},
		[]string{catID, "", "01-alpha", "阿尔法", "0", "4", "0", "false", "", "0", "0", "0", "0", "0", "0", "0", "0", "0", "practice", "", "", "", "", "", "", "", "0", "4"},
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
