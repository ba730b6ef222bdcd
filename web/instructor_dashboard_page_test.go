package web

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/web/instructor"
)

// TestDashboardWith100kLearners is issue 18.3's aftermath: 118k learners
// made /instructor 30 MB of HTML. The learners table is paged; the counts
// still cover everyone.
func TestDashboardWith100kLearners(t *testing.T) {
	e := newInstrEnv(t)
	c := e.instructor("ada", "correct horse battery")
	n := 100_000
	if testing.Short() {
		n = 5_000 // the pages and their bound are the same; the scale is make test's
	}
	db, err := sql.Open("sqlite", "file:"+e.DB.Path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	// Each with a display name: a learner who did nothing but visit is not
	// counted (issue 19), so these are learners who acted.
	ins, err := tx.Prepare(`INSERT INTO learners (id, created, display_name) VALUES (?, ?, 'L')`)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour).UTC().Format("2006-01-02T15:04:05.000000000Z")
	for i := range n {
		if _, err := ins.Exec(fmt.Sprintf("%032x", i+1), old); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db.Close()

	res := e.do(c, "GET", "/instructor", nil)
	body := e.page(res, http.StatusOK)
	if rows := body.Find(`[data-testid=learner]`).Length(); rows != instructor.DashPageSize {
		t.Errorf("%d learner rows on the first page, want %d", rows, instructor.DashPageSize)
	}
	if got := body.Find(`[data-testid=active-count]`).Text(); !strings.Contains(got, fmt.Sprint(n)) {
		t.Errorf("active count %q does not say %d learners", got, n)
	}
	next, ok := body.Find(`[data-testid=learners-pager] a[rel=next]`).Attr("href")
	if !ok {
		t.Fatal("no link to the next page")
	}
	raw := e.do(c, "GET", "/instructor", nil)
	html, _ := io.ReadAll(raw.Body)
	raw.Body.Close()
	if len(html) > 256<<10 {
		t.Errorf("dashboard is %d bytes with %d learners, want a page under 256 KiB", len(html), n)
	}
	// The last page, and past it.
	last := e.page(e.do(c, "GET", fmt.Sprintf("/instructor?page=%d", n/instructor.DashPageSize), nil), http.StatusOK)
	if rows := last.Find(`[data-testid=learner]`).Length(); rows != instructor.DashPageSize {
		t.Errorf("last page: %d rows", rows)
	}
	if last.Find(`[data-testid=learners-pager] a[rel=next]`).Length() != 0 {
		t.Error("the last page links to a next page")
	}
	past := e.do(c, "GET", fmt.Sprintf("/instructor?page=%d", n/instructor.DashPageSize+1), nil)
	past.Body.Close()
	if past.StatusCode != http.StatusSeeOther {
		t.Errorf("past the last page: %d, want a redirect", past.StatusCode)
	}
	if next != "/instructor?page=2#learners" {
		t.Errorf("next page link %q", next)
	}
}
