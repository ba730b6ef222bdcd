package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// TestTARole (issue 29 item 7): a TA invitation names a class; its link is
// shown by a GET page (a refresh shows the same link), listed as pending
// with its expiry and zone, and revocable; the TA sees only their class
// (dashboard, gradebook, exports, roster read-only), is sent there from
// "all learners", gets 404 for another class and 403 for everything that
// changes the course, classes or accounts; an instructor assigns the TA a
// second class; a TA with no class is told so.
func TestTARole(t *testing.T) {
	e := newInstrEnv(t)
	ada := e.instructor("ada", "correct horse battery")
	for _, name := range []string{"Group A", "Group B"} {
		res := e.do(ada, "POST", "/instructor/classes", url.Values{"name": {name}})
		res.Body.Close()
	}
	// Classes are listed newest first: B is 2, A is 1.
	res := e.do(ada, "POST", "/instructor/invitations", url.Values{"role": {"ta"}, "class": {"1"}})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/instructor/invitations?link=") {
		t.Fatalf("TA invitation: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	linkPage := res.Header.Get("Location")
	doc := e.page(e.do(ada, "GET", linkPage+"&lang=zh", nil), http.StatusOK)
	link, _ := doc.Find(`[data-testid=invite-url]`).Attr("value")
	if made := doc.Find(`[data-testid=invite-made]`).Text(); !strings.HasPrefix(made, "助教 · Group A：") || !strings.Contains(made, "(UTC") {
		t.Errorf("link notice %q", made)
	}
	again := e.page(e.do(ada, "GET", linkPage, nil), http.StatusOK)
	if l, _ := again.Find(`[data-testid=invite-url]`).Attr("value"); l != link || link == "" {
		t.Errorf("a refresh shows %q, first %q", l, link)
	}
	// A second invitation, revoked: its link stops working.
	res = e.do(ada, "POST", "/instructor/account/invite", url.Values{})
	res.Body.Close()
	doc = e.page(e.do(ada, "GET", "/instructor/invitations?lang=en", nil), http.StatusOK)
	if n := doc.Find(`[data-testid=pending-invite]`).Length(); n != 2 {
		t.Fatalf("%d pending invitations, want 2", n)
	}
	if exp := doc.Find(`[data-testid=invite-expires]`).First().Text(); !strings.Contains(exp, "(UTC") {
		t.Errorf("expiry without its zone: %q", exp)
	}
	revoke, _ := doc.Find(`[data-testid=pending-invite]`).First().Find(`form`).Attr("action")
	res = e.do(ada, "POST", revoke, url.Values{})
	res.Body.Close()
	doc = e.page(e.do(ada, "GET", res.Header.Get("Location"), nil), http.StatusOK)
	if doc.Find(`[data-testid=pending-invite]`).Length() != 1 || doc.Find(`[data-testid=invite-revoked]`).Length() != 1 {
		t.Error("revoking did not take the invitation off the list")
	}

	// Tom redeems the TA invitation.
	tom := e.browser()
	u, _ := url.Parse(link)
	doc = e.page(e.do(tom, "GET", u.RequestURI()+"&lang=zh", nil), http.StatusOK)
	if got := doc.Find(`[data-testid=invite-lede]`).Text(); !strings.HasPrefix(got, "你收到了班级「Group A」的助教邀请") {
		t.Errorf("the TA's invitation page reads %q", got)
	}
	res = e.do(tom, "POST", "/instructor/invite", url.Values{"token": {u.Query().Get("token")}, "username": {"tom"}, "password": {"tom's long password"}})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("TA accepts: %d", res.StatusCode)
	}
	for _, p := range []string{"/instructor", "/instructor/gradebook", "/instructor/export/attempts.csv"} {
		res := e.do(tom, "GET", p, nil)
		res.Body.Close()
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasSuffix(loc, "?class=1") {
			t.Errorf("TA at %s: %d → %q, want their class", p, res.StatusCode, loc)
		}
	}
	doc = e.page(e.do(tom, "GET", "/instructor?class=1&lang=en", nil), http.StatusOK)
	if doc.Find(`[data-testid=drafts-link]`).Length() != 0 {
		t.Error("a TA's dashboard offers drafts")
	}
	e.page(e.do(tom, "GET", "/instructor/gradebook?class=1", nil), http.StatusOK)
	e.page(e.do(tom, "GET", "/instructor/classes/1/roster", nil), http.StatusOK)
	e.page(e.do(tom, "GET", "/instructor?class=2", nil), http.StatusNotFound)
	e.page(e.do(tom, "GET", "/instructor/gradebook?class=2", nil), http.StatusNotFound)
	e.page(e.do(tom, "GET", "/instructor/classes/2/roster", nil), http.StatusNotFound)
	if res := e.do(tom, "GET", "/instructor/export/gradebook.csv?class=2", nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("TA export of another class: %d", res.StatusCode)
	}
	doc = e.page(e.do(tom, "GET", "/instructor/classes?lang=en", nil), http.StatusOK)
	if n := doc.Find(`[data-testid=class]`).Length(); n != 1 || doc.Find(`[data-testid=class-create]`).Length() != 0 || doc.Find(`[data-testid=class-archive]`).Length() != 0 {
		t.Errorf("TA's classes page: %d classes, create form %d", n, doc.Find(`[data-testid=class-create]`).Length())
	}
	doc = e.page(e.do(tom, "GET", "/instructor/account", nil), http.StatusOK)
	if doc.Find(`[data-testid=make-invite]`).Length() != 0 {
		t.Error("a TA's account page offers invitations")
	}
	refused := []struct{ method, path string }{
		{"POST", "/instructor/account/invite"}, {"GET", "/instructor/invitations"}, {"POST", "/instructor/invitations"},
		{"GET", "/instructor/drafts"}, {"POST", "/instructor/classes"}, {"POST", "/instructor/classes/1/archive"},
		{"POST", "/instructor/classes/1/tas"}, {"POST", "/instructor/classes/1/roster"},
		{"POST", "/instructor/classes/1/roster/merge"}, {"POST", "/instructor/classes/1/roster/members/remove"},
	}
	for _, rq := range refused {
		var form url.Values
		if rq.method == "POST" {
			form = url.Values{"name": {"x"}, "csv": {"1,x"}}
		}
		doc := e.page(e.do(tom, rq.method, rq.path+"?lang=zh", form), http.StatusForbidden)
		if !strings.Contains(doc.Find("main").Text(), "助教账号") {
			t.Errorf("%s %s: the 403 page does not say why", rq.method, rq.path)
		}
	}
	// The TA changes their own password.
	res = e.do(tom, "POST", "/instructor/account/password", url.Values{"current": {"tom's long password"}, "password": {"tom's new password"}})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Errorf("TA password change: %d", res.StatusCode)
	}

	// The instructor adds tom to group B, then takes him off both.
	doc = e.page(e.do(ada, "GET", "/instructor/classes", nil), http.StatusOK)
	if doc.Find(`[data-testid=class-tas]`).Last().Text() == "" {
		t.Error("class A does not list its TA")
	}
	var tomID string
	doc.Find(`[data-testid=class-ta-add]`).First().Parent().Find(`option`).Each(func(_ int, s *goquery.Selection) {
		if s.Text() == "tom" {
			tomID, _ = s.Attr("value")
		}
	})
	res = e.do(ada, "POST", "/instructor/classes/2/tas", url.Values{"ta": {tomID}, "on": {"1"}})
	res.Body.Close()
	e.page(e.do(tom, "GET", "/instructor?class=2", nil), http.StatusOK)
	for _, c := range []string{"1", "2"} {
		res = e.do(ada, "POST", "/instructor/classes/"+c+"/tas", url.Values{"ta": {tomID}, "on": {"0"}})
		res.Body.Close()
	}
	doc = e.page(e.do(tom, "GET", "/instructor?lang=en", nil), http.StatusForbidden)
	if !strings.Contains(doc.Find("main").Text(), "no class yet") {
		t.Errorf("a TA without a class reads %q", doc.Find("main").Text())
	}
	// An instructor cannot be made a TA of a class.
	e.page(e.do(ada, "POST", "/instructor/classes/1/tas", url.Values{"ta": {"1"}, "on": {"1"}}), http.StatusNotFound)
}
