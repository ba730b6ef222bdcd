package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/web/instructor"
)

// TestInviteAndChangePassword: an instructor makes an invitation link, a
// second browser creates an account with it (once), and an instructor
// changes their own password, which ends their other sessions.
func TestInviteAndChangePassword(t *testing.T) {
	e := newInstrEnv(t)
	ada := e.instructor("ada", "correct horse battery")

	doc := e.page(e.do(ada, "GET", "/instructor", nil), http.StatusOK)
	if href, _ := doc.Find(`[data-testid=account-link]`).Attr("href"); href != "/instructor/account" {
		t.Fatalf("dashboard has no account link: %q", href)
	}
	// The link is shown by a GET page (a refresh shows it again, it does not make another).
	res := e.do(ada, "POST", "/instructor/account/invite", url.Values{})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("make invitation: %d", res.StatusCode)
	}
	doc = e.page(e.do(ada, "GET", res.Header.Get("Location"), nil), http.StatusOK)
	link, _ := doc.Find(`[data-testid=invite-url]`).Attr("value")
	u, err := url.Parse(link)
	if err != nil || u.Path != "/instructor/invite" || u.Query().Get("token") == "" {
		t.Fatalf("invite link %q", link)
	}
	token := u.Query().Get("token")

	// A learner's browser (no session) may open and use the link.
	bob := e.browser()
	doc = e.page(e.do(bob, "GET", u.RequestURI(), nil), http.StatusOK)
	if doc.Find(`form[action="/instructor/invite"] input[name=token]`).Length() != 1 {
		t.Fatal("no invitation form")
	}
	// A taken name or short password keeps the link usable.
	e.page(e.do(bob, "POST", "/instructor/invite", url.Values{"token": {token}, "username": {"ADA"}, "password": {"bob's password"}}), http.StatusConflict)
	e.page(e.do(bob, "POST", "/instructor/invite", url.Values{"token": {token}, "username": {"bob"}, "password": {"short"}}), http.StatusUnprocessableEntity)
	res = e.do(bob, "POST", "/instructor/invite", url.Values{"token": {token}, "username": {"bob"}, "password": {"bob's password"}})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/instructor" || cookieNamed(res, instructor.SessionCookie) == nil {
		t.Fatalf("accept invite: %d → %q", res.StatusCode, res.Header.Get("Location"))
	}
	doc = e.page(e.do(bob, "GET", "/instructor/account", nil), http.StatusOK)
	if got := doc.Find(`[data-testid=instructors] li`).Text(); !strings.Contains(got, "ada") || !strings.Contains(got, "bob") {
		t.Errorf("instructors list: %q", got)
	}
	// Used once.
	doc = e.page(e.do(e.browser(), "GET", u.RequestURI(), nil), http.StatusNotFound)
	if doc.Find(`[data-testid=invite-invalid]`).Length() != 1 {
		t.Error("used link not refused")
	}
	e.page(e.do(e.browser(), "POST", "/instructor/invite", url.Values{"token": {token}, "username": {"carol"}, "password": {"carol's password"}}), http.StatusNotFound)
	// Only instructors make invitations.
	res = e.do(e.browser(), "POST", "/instructor/account/invite", url.Values{})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/instructor/login") {
		t.Errorf("invite without a session: %d %q", res.StatusCode, res.Header.Get("Location"))
	}

	// Change own password: the wrong current password is refused; the
	// right one keeps this session and ends the other one.
	other := e.browser()
	e.login(other, "bob", "bob's password").Body.Close()
	doc = e.page(e.do(bob, "POST", "/instructor/account/password", url.Values{"current": {"wrong password"}, "password": {"a new password"}}), http.StatusUnprocessableEntity)
	if doc.Find(`[data-testid=pw-error]`).Length() != 1 {
		t.Error("no error for a wrong current password")
	}
	res = e.do(bob, "POST", "/instructor/account/password", url.Values{"current": {"bob's password"}, "password": {"a new password"}})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("change password: %d", res.StatusCode)
	}
	e.page(e.do(bob, "GET", "/instructor/account?saved=1", nil), http.StatusOK)
	res = e.do(other, "GET", "/instructor", nil)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Errorf("the other session survived: %d", res.StatusCode)
	}
	if _, err := e.DB.Authenticate(context.Background(), "bob", "a new password"); err != nil {
		t.Errorf("new password: %v", err)
	}
}
