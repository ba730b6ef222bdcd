package web

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/testwait"
)

// TestDashboardWarnings (issue 29 item 10): the course check's warnings
// are listed on the dashboard (file:line: message), not only counted in
// the log; zh and en headings; a clean course shows no block.
func TestDashboardWarnings(t *testing.T) {
	e := newInstrEnv(t)
	ada := e.instructor("ada", "correct horse battery")
	doc := e.page(e.do(ada, "GET", "/instructor?lang=en", nil), http.StatusOK)
	if doc.Find(`[data-testid=course-warnings]`).Length() != 0 {
		t.Fatal("warnings shown for a clean course")
	}
	// A lesson in Chinese only: a missing-translation warning.
	writeTestFile(t, filepath.Join(e.Dir, "02-beta/index.zh.md"), "---\ntitle: 贝塔\nsummary: 第二课。\norder: 2\n---\n\n正文。\n")
	var text string
	if !testwait.For(10*time.Second, 50*time.Millisecond, func() bool {
		d := e.page(e.do(ada, "GET", "/instructor?lang=zh", nil), http.StatusOK)
		text = d.Find(`[data-testid=course-warnings]`).Text()
		return text != ""
	}) {
		t.Fatal("the dashboard never listed the warning")
	}
	if !strings.Contains(text, "课程检查有 1 条警告") || !strings.Contains(text, "02-beta/index.zh.md") {
		t.Errorf("warnings block reads %q", text)
	}
}
