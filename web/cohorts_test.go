package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// answer posts one quiz answer as the browser c.
func (e *instrEnv) answer(c *http.Client, id, body string) {
	e.t.Helper()
	postAnswer(e.t, e.HTTP.URL, c, id, body)
}

// postAnswer posts one quiz answer (JSON) to the lab at base as the
// browser c; anything but 200 or 201 fails t.
func postAnswer(t *testing.T, base string, c *http.Client, id, body string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+attemptsPath(id), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusCreated {
		t.Fatalf("answer %s: %d", id, res.StatusCode)
	}
}

// TestClassesJoinAndFilter: an instructor creates a class; a learner who
// opens the join link and confirms appears in that class's dashboard and
// export; a reader who only visits, and the instructor's own answers, are
// never counted; archiving takes the class out of "all learners".
func TestClassesJoinAndFilter(t *testing.T) {
	e := newInstrEnv(t)
	ada := e.instructor("ada", "correct horse battery")
	ctx := context.Background()

	res := e.do(ada, "POST", "/instructor/classes", url.Values{"name": {"2026 spring, group A"}})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("create class: %d", res.StatusCode)
	}
	e.page(e.do(ada, "POST", "/instructor/classes", url.Values{"name": {"   "}}), http.StatusUnprocessableEntity)
	doc := e.page(e.do(ada, "GET", "/instructor/classes", nil), http.StatusOK)
	joinURL, _ := doc.Find(`[data-testid=class-join-url]`).Attr("value")
	classID, _ := doc.Find(`[data-testid=class]`).Attr("data-id")
	code := doc.Find(`[data-testid=class-code]`).Text()
	if !strings.HasSuffix(joinURL, "/join/"+code) || classID == "" || len(code) != 8 {
		t.Fatalf("join url %q, id %q, code %q", joinURL, classID, code)
	}

	// ann opens the link: a visit only, nothing stored yet.
	ann := e.browser()
	u, _ := url.Parse(joinURL)
	doc = e.page(e.do(ann, "GET", u.Path+"?lang=en", nil), http.StatusOK)
	if got := doc.Find(`[data-testid=join-class]`).Text(); got != "2026 spring, group A" {
		t.Fatalf("join page names %q", got)
	}
	if p, _ := e.DB.ClassLearners(ctx, 0, 0, time.Time{}); p.Total != 0 {
		t.Fatalf("a visit of the join page counted %d learners", p.Total)
	}
	res = e.do(ann, "POST", "/join", url.Values{"code": {strings.ToLower(code)}})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("join: %d", res.StatusCode)
	}
	doc = e.page(e.do(ann, "GET", res.Header.Get("Location"), nil), http.StatusOK)
	if doc.Find(`[data-testid=joined]`).Length() != 1 {
		t.Error("no confirmation after joining")
	}
	e.page(e.do(ann, "POST", "/join", url.Values{"code": {"WRONG123"}}), http.StatusNotFound)
	e.page(e.do(ann, "GET", "/join/WRONG123", nil), http.StatusNotFound)
	e.answer(ann, "alpha/single", `{"answer":"a"}`)

	// bob answers outside any class; a reader only reads the lesson; the
	// instructor answers in their own browser (logged in).
	bob := e.browser()
	e.answer(bob, "alpha/single", `{"answer":"b"}`)
	reader := e.browser()
	e.page(e.do(reader, "GET", "/lessons/01-alpha", nil), http.StatusOK)
	e.answer(ada, "alpha/single", `{"answer":"c"}`)
	mine := e.browser()
	e.page(e.do(mine, "GET", "/lessons/01-alpha", nil), http.StatusOK) // learner cookie first,
	e.login(mine, "ada", "correct horse battery").Body.Close()         // then log in:
	e.answer(mine, "alpha/single", `{"answer":"c"}`)                   // never counted either

	names := func(path string) int {
		t.Helper()
		return e.page(e.do(ada, "GET", path, nil), http.StatusOK).Find(`[data-testid=learner]`).Length()
	}
	if n := names("/instructor"); n != 2 {
		t.Errorf("all learners: %d rows, want 2 (ann, bob)", n)
	}
	doc = e.page(e.do(ada, "GET", "/instructor?lang=en&class="+classID, nil), http.StatusOK)
	if n := doc.Find(`[data-testid=learner]`).Length(); n != 1 {
		t.Errorf("class view: %d rows, want 1", n)
	}
	if got := doc.Find(`[data-testid=class-name]`).Text(); !strings.Contains(got, "2026 spring") {
		t.Errorf("class view heading %q", got)
	}
	if href, _ := doc.Find(`[data-testid=exports] a`).First().Attr("href"); !strings.HasSuffix(href, "?class="+classID) {
		t.Errorf("export link %q does not keep the class", href)
	}
	q := doc.Find(`[data-testid=question][data-id="alpha/single"] [data-testid=facility]`).Text()
	if !strings.Contains(q, "100%") {
		t.Errorf("class facility %q, want 100%% (only ann, right)", q)
	}
	rows := e.fetchCSV(ada, "/instructor/export/attempts.csv?class="+classID)
	if len(rows) != 2 {
		t.Errorf("class attempts export: %d rows, want header + 1", len(rows))
	}
	if all := e.fetchCSV(ada, "/instructor/export/attempts.csv"); len(all) != 3 {
		t.Errorf("all attempts export: %d rows, want header + 2 (no instructor's)", len(all))
	}
	e.page(e.do(ada, "GET", "/instructor?class=999", nil), http.StatusNotFound)
	e.page(e.do(ada, "GET", "/instructor/export/runs.csv?class=x", nil), http.StatusNotFound)

	// Archive: the class leaves "all learners", its code stops working,
	// its own view still shows it.
	res = e.do(ada, "POST", "/instructor/classes/"+classID+"/archive", url.Values{"archived": {"1"}})
	res.Body.Close()
	if n := names("/instructor"); n != 1 {
		t.Errorf("after archiving: %d rows, want 1 (bob)", n)
	}
	if n := names("/instructor?class=" + classID); n != 1 {
		t.Errorf("archived class view: %d rows", n)
	}
	e.page(e.do(e.browser(), "POST", "/join", url.Values{"code": {code}}), http.StatusNotFound)
	doc = e.page(e.do(ada, "GET", "/instructor/classes", nil), http.StatusOK)
	if doc.Find(`[data-testid=class]`).Length() != 0 {
		t.Error("archived class listed by default")
	}
	doc = e.page(e.do(ada, "GET", "/instructor/classes?archived=1", nil), http.StatusOK)
	if doc.Find(`[data-testid=class-reopen]`).Length() != 1 {
		t.Error("no reopen button for the archived class")
	}
	// Learners cannot manage classes.
	res = e.do(bob, "POST", "/instructor/classes", url.Values{"name": {"mine"}})
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("learner creates a class: %d", res.StatusCode)
	}
	if list, _ := e.DB.Cohorts(ctx, true); len(list) != 1 {
		t.Errorf("%d classes", len(list))
	}
}
