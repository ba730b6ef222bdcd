package e2e

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestInstructorFlow: a learner completes lesson 01; an instructor (the
// admin account LAB_ADMIN_PASSWORD creates) is turned away with a wrong
// password, logs in, sees the class dashboard count that learner, and logs
// out again.
func TestInstructorFlow(t *testing.T) {
	flow(t)
	learner := newBrowser(t, shared)
	learner.open(lesson01EN)
	learner.navigates("mark complete", chromedpClick(`[data-testid=complete] button[type=submit]`))
	if n := learner.count("[data-testid=completed]"); n != 1 {
		t.Fatalf("the learner's lesson shows %d completion notes", n)
	}

	b := newBrowser(t, shared)
	b.open("/instructor")
	if n := b.count("[data-testid=instructor-login]"); n != 1 {
		t.Fatalf("/instructor without a session shows no login form (at %s)", eval[string](b, `location.pathname`))
	}
	login := func(user, pass string) {
		t.Helper()
		b.do("fill the login form",
			evalVoid(`document.querySelector("[data-testid=instructor-login] input[name=username]").value = ""`),
			chromedp.SendKeys(chromedp.CSS(`[data-testid=instructor-login] input[name=username]`), user),
			chromedp.SendKeys(chromedp.CSS(`[data-testid=instructor-login] input[name=password]`), pass),
		)
		b.navigates("log in", chromedpClick(`[data-testid=instructor-login] button[type=submit]`))
	}
	login("admin", "not-the-password")
	if msg := b.text("[data-testid=login-error]"); msg == "" {
		t.Error("a wrong password shows no error")
	}
	if n := b.count("[data-testid=dashboard]"); n != 0 {
		t.Fatal("a wrong password reached the dashboard")
	}
	login("admin", instructorPassword)
	if n := b.count("[data-testid=dashboard]"); n != 1 {
		t.Fatalf("after logging in: no dashboard (at %s)", eval[string](b, `location.pathname`))
	}
	if who := b.text("[data-testid=instructor]"); who != "admin" {
		t.Errorf("dashboard says the instructor is %q", who)
	}
	done := b.text(`[data-testid=dash-lesson][data-slug="` + lesson01 + `"] [data-testid=completed]`)
	m := regexp.MustCompile(`(\d+)\s*/\s*(\d+)`).FindStringSubmatch(done)
	if m == nil {
		t.Fatalf("lesson 01 completion on the dashboard reads %q", done)
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 {
		t.Errorf("dashboard counts %s learners who completed lesson 01, want at least the one who just did", m[1])
	}
	if n := b.count(`[data-testid=exports] a[href$=".csv"]`); n < 3 {
		t.Errorf("dashboard offers %d CSV exports", n)
	}

	b.navigates("log out", chromedpClick(`[data-testid=logout]`))
	b.open("/instructor")
	if n := b.count("[data-testid=dashboard]"); n != 0 {
		t.Error("the dashboard is still shown after logging out")
	}
}
