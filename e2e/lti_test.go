package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rdmalab/rdmalab/lti"
	"github.com/rdmalab/rdmalab/lti/ltitest"
	"github.com/rdmalab/rdmalab/store"
)

// TestLTILaunchInBrowser: one LTI 1.3 launch as Chromium does it — the
// tool's login URL, the test platform's auth endpoint (on "localhost", so
// another site than the lab on 127.0.0.1), its auto-submitting form_post
// page, the lab's launch — into lesson 01 with the launched learner's
// cookie; a right checkpoint answer then sends the lesson's score to the
// platform's AGS endpoint. The platform is lti/ltitest, written from the
// IMS specs.
func TestLTILaunchInBrowser(t *testing.T) {
	flow(t)
	p := ltitest.New()
	t.Cleanup(p.Close)
	p.UseHost("localhost")
	p.SetToolJWKS(shared.URL + "/lti/jwks")
	db, err := store.Open(shared.DB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddLTIPlatform(context.Background(), p.Registration()); err != nil {
		t.Fatal(err)
	}
	db.Close()

	item := p.NewLineItem("Why RDMA")
	hint := p.Prepare(ltitest.Message{Sub: "stu-77", Name: "Mei Chen", ContextID: "rdma-2026", ContextTitle: "RDMA 2026",
		LineItem: item, Roles: []string{lti.RoleLearner}, Custom: map[string]string{"lesson": lesson01}})
	b := newBrowser(t, shared)
	login := shared.URL + "/lti/login?" + p.LoginQuery(hint, shared.URL+"/lessons/"+lesson01).Encode()
	b.do("LMS link", chromedp.Navigate(login))
	b.waitFor("the lesson after the launch", `location.pathname === "/lessons/`+lesson01+`" && document.readyState === "complete"`, stepTimeout)

	q := `[data-testid=checkpoint] [data-testid=quiz][data-question="why-rdma/overheads"]`
	b.waitFor("quiz.js loaded", `document.querySelector('script[src*="js/quiz.js"]') && document.querySelector('`+q+`')`, stepTimeout)
	for _, o := range []string{"copies", "stack", "irqs", "switches"} {
		b.click(q + ` input[name=answer][value="` + o + `"]`)
	}
	b.click(q + ` button[type=submit]`)
	b.waitFor("graded question", `(function(){var e=document.querySelector('`+q+` [data-testid=result]');return e && e.dataset.correct === "true"})()`, stepTimeout)

	deadline := time.Now().Add(stepTimeout)
	for {
		s := p.Scores()
		if len(s) > 0 {
			got := s[len(s)-1]
			if got.Score.UserID != "stu-77" || got.Score.ScoreGiven != 1 || got.Score.ScoreMaximum < 2 || got.LineItem != item {
				t.Errorf("score at the platform: %+v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no score reached the platform's AGS endpoint; lab log:\n%s", shared.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The learner is the LMS user, named by the LMS.
	b.open("/me?lang=en")
	if !eval[bool](b, `document.querySelector("main").innerHTML.includes("Mei Chen")`) {
		t.Errorf("/me does not show the LMS's name: %s", b.text("main"))
	}
}
