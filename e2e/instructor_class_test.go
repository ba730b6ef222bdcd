package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestInstructorInviteAndClass: admin invites a second instructor from the
// account page; the invited instructor signs up with the link, creates a
// class; a learner joins with the class's link; the class's dashboard and
// gradebook list that learner (and only learners of the class).
func TestInstructorInviteAndClass(t *testing.T) {
	flow(t)
	admin := newBrowser(t, shared)
	admin.open("/instructor/login?lang=en")
	admin.do("fill the login form",
		chromedp.SendKeys(chromedp.CSS(`[data-testid=instructor-login] input[name=username]`), "admin"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=instructor-login] input[name=password]`), instructorPassword),
	)
	admin.navigates("log in", chromedpClick(`[data-testid=instructor-login] button[type=submit]`))
	admin.navigates("open accounts", chromedpClick(`[data-testid=account-link]`))
	admin.navigates("make an invitation", chromedpClick(`[data-testid=make-invite]`))
	invite := eval[string](admin, `(function(){var u=new URL(document.querySelector("[data-testid=invite-url]").value);return u.pathname+u.search})()`)
	if !strings.HasPrefix(invite, "/instructor/invite?token=") {
		t.Fatalf("invitation link %q", invite)
	}

	bea := newBrowser(t, shared)
	bea.open(invite + "&lang=en")
	bea.do("fill the invitation form",
		chromedp.SendKeys(chromedp.CSS(`[data-testid=instructor-invite] input[name=username]`), "bea"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=instructor-invite] input[name=password]`), "bea's long password"),
	)
	bea.navigates("create the account", chromedpClick(`[data-testid=instructor-invite] button[type=submit]`))
	if who := bea.text("[data-testid=instructor]"); who != "bea" {
		t.Fatalf("after the invitation the dashboard says %q (at %s)", who, eval[string](bea, `location.pathname`))
	}
	bea.navigates("open classes", chromedpClick(`[data-testid=classes-link]`))
	bea.do("name the class", chromedp.SendKeys(chromedp.CSS(`[data-testid=classes] input[name=name]`), "e2e group"))
	bea.navigates("create the class", chromedpClick(`[data-testid=class-create]`))
	join := eval[string](bea, `(function(){var rows=document.querySelectorAll("[data-testid=class]");for(var r of rows){if(r.textContent.indexOf("e2e group")>=0){return new URL(r.querySelector("[data-testid=class-join-url]").value).pathname}}return ""})()`)
	classID := eval[string](bea, `(function(){var rows=document.querySelectorAll("[data-testid=class]");for(var r of rows){if(r.textContent.indexOf("e2e group")>=0){return r.dataset.id}}return ""})()`)
	if !strings.HasPrefix(join, "/join/") || classID == "" {
		t.Fatalf("class join link %q, id %q", join, classID)
	}

	learner := newBrowser(t, shared)
	learner.open(join + "?lang=en")
	if got := learner.text("[data-testid=join-class]"); got != "e2e group" {
		t.Fatalf("the join page names %q", got)
	}
	learner.navigates("join", chromedpClick(`[data-testid=join-submit]`))
	if n := learner.count("[data-testid=joined]"); n != 1 {
		t.Fatal("no confirmation after joining")
	}

	bea.open("/instructor?lang=en&class=" + classID)
	if n := bea.count("[data-testid=learner]"); n != 1 {
		t.Errorf("the class dashboard lists %d learners, want the one who joined", n)
	}
	bea.navigates("open the gradebook", chromedpClick(`[data-testid=gradebook-link]`))
	if n := bea.count("[data-testid=grade-row]"); n != 1 {
		t.Errorf("the class gradebook has %d rows, want 1", n)
	}
}
