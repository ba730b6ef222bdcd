package web

import (
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestAnswerKey: every question with its answers and explanation, for
// instructors only; the stylesheet hides the site chrome when printing.
func TestAnswerKey(t *testing.T) {
	e := newInstrEnv(t)
	ada := e.instructor("ada", "correct horse battery")
	doc := e.page(e.do(ada, "GET", "/instructor/answers?lang=en", nil), http.StatusOK)
	if n := doc.Find(`[data-testid=key-question]`).Length(); n != 4 {
		t.Fatalf("%d questions in the key, want 4", n)
	}
	single := doc.Find(`[data-testid=key-question][data-id="alpha/single"]`)
	if ids := single.Find(`[data-testid=key-option][data-correct]`).AttrOr("data-id", ""); ids != "a" {
		t.Errorf("single: correct option %q, want a", ids)
	}
	if !strings.Contains(single.Text(), "Because A.") {
		t.Error("single: no explanation")
	}
	if got := doc.Find(`[data-testid=key-question][data-id="alpha/multi"] [data-testid=key-option][data-correct]`).Length(); got != 2 {
		t.Errorf("multi: %d correct options, want 2", got)
	}
	if got := strings.TrimSpace(doc.Find(`[data-testid=key-numeric]`).Text()); !strings.Contains(got, "12.5 ± 0.1 GB/s") {
		t.Errorf("numeric answer %q", got)
	}
	order := doc.Find(`[data-testid=key-question][data-id="alpha/order"] [data-testid=key-option]`)
	if order.Length() != 2 || !strings.HasPrefix(strings.TrimSpace(order.First().Text()), "1.") {
		t.Errorf("order answer: %q", order.Text())
	}
	// Learners never see it.
	learner := e.browser()
	e.do(learner, "GET", "/", nil).Body.Close()
	res := e.do(learner, "GET", "/instructor/answers", nil)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a learner gets %d for the answer key", res.StatusCode)
	}
	css, err := os.ReadFile("../static/css/instructor.css")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(css), "@media print") || !strings.Contains(string(css), "header.site, footer.site") {
		t.Error("instructor.css has no print rules hiding the site chrome")
	}
}
