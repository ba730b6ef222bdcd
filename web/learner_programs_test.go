package web

import (
	"context"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rdmalab/rdmalab/lessons"
)

// TestGradebookProgramHintsAndSubmission (issue 40): the gradebook counts
// a learner's hints revealed and solutions shown beside passes and runs,
// on the page and in the CSV; its cell opens the learner's page of that
// lesson's exercises, which shows the code last submitted and its run. A
// learner id the scope does not count is not found.
func TestGradebookProgramHintsAndSubmission(t *testing.T) {
	const slug = "04-first-program"
	ents, err := fs.ReadDir(lessons.Builtin, ".")
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, d := range ents {
		if d.IsDir() {
			all = append(all, d.Name())
		}
	}
	e := newInstrEnv(t, all...)
	l := e.Live.Course().Lesson(slug)
	p := l.Programs[0]
	ctx := context.Background()
	ann := instrAnn
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.DB.RecordProgramRun(ctx, ann, slug, p.ID, false))
	must(e.DB.RecordProgramRun(ctx, ann, slug, p.ID, true))
	for range 2 {
		_, err := e.DB.RevealProgramHint(ctx, ann, slug, p.ID, len(p.Config.Hints))
		must(err)
	}
	must(e.DB.RecordSolutionShown(ctx, ann, slug, p.ID))
	const src = "int main(void) { return 7; } /* ann's <last> */\n"
	must(e.DB.RecordProgramSubmission(ctx, ann, slug, p.ID, "run-ann-last", src))

	c := e.instructor("ada", "correct horse battery")
	doc := e.page(e.do(c, "GET", "/instructor/gradebook?lang=en", nil), http.StatusOK)
	var cell, href string
	doc.Find(`[data-testid=grade-row]`).Each(func(_ int, row *goquery.Selection) {
		if strings.Contains(row.Find(".id").Text(), ann[:8]) {
			row.Find(`[data-testid=grade-programs]`).Each(func(_ int, a *goquery.Selection) {
				if h := a.AttrOr("href", ""); strings.Contains(h, "lesson="+slug) {
					cell, href = a.Text(), h
				}
			})
		}
	})
	if !strings.Contains(cell, "programs passed 1/4 (runs: 2, hints: 2, solutions shown: 1)") {
		t.Errorf("gradebook cell %q", cell)
	}
	if href == "" {
		t.Fatal("the programs cell links nowhere")
	}
	rows := e.fetchCSV(c, "/instructor/export/gradebook.csv")
	col := func(name string) int { return slices.Index(rows[0], name) }
	found := false
	for _, r := range rows[1:] {
		if r[0] == ann && r[col("lesson")] == slug {
			found = true
			if r[col("program_hints")] != "2" || r[col("program_solutions")] != "1" || r[col("program_runs")] != "2" || r[col("programs_passed")] != "1" {
				t.Errorf("CSV row %q", r)
			}
		}
	}
	if !found {
		t.Errorf("no CSV row of %s on %s", ann, slug)
	}

	for _, lang := range []string{"en", "zh"} {
		page := e.page(e.do(c, "GET", href+"&lang="+lang, nil), http.StatusOK)
		ex := page.Find(`[data-testid=learner-program][data-program="` + p.ID + `"]`)
		if got := ex.Find(`[data-testid=learner-program-code]`).Text(); got != src {
			t.Errorf("%s: last submission %q, want %q", lang, got, src)
		}
		if got := ex.Find(`[data-testid=learner-program-run]`).AttrOr("href", ""); !strings.HasPrefix(got, "/runs/run-ann-last") {
			t.Errorf("%s: run link %q", lang, got)
		}
		if ex.Find(`[data-testid=learner-program-passed]`).Length() != 1 || ex.Find(`[data-testid=learner-program-solution]`).Length() != 1 {
			t.Errorf("%s: passed or solution shown missing", lang)
		}
		rec := ex.Find(`[data-testid=learner-program-record]`).Text()
		want := map[string]string{"en": "checked runs: 2, passed: 1, hints: 2 of 3", "zh": "运行并检查 2 次，通过 1 次，看提示 2/3 条"}[lang]
		if rec != want {
			t.Errorf("%s: record %q, want %q", lang, rec, want)
		}
		if n := page.Find(`[data-testid=learner-program]`).Length(); n != len(l.Programs) {
			t.Errorf("%s: %d exercises shown, want the lesson's %d", lang, n, len(l.Programs))
		}
	}
	res := e.do(c, "GET", "/instructor/learners/"+strings.Repeat("f", 32)+"/programs", nil)
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("a learner nobody knows: %d, want 404", res.StatusCode)
	}
	res = e.do(e.browser(), "GET", href, nil)
	res.Body.Close()
	if res.StatusCode == http.StatusOK {
		t.Errorf("a learner's browser opened another learner's submissions")
	}
}
