package web

import (
	"context"
	"database/sql"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/rdmalab/rdmalab/web/instructor"
)

// loginFrom posts a login as a client at addr (through the trusted proxy header).
func (e *instrEnv) loginFrom(c *http.Client, addr, user, pw string) *http.Response {
	e.t.Helper()
	return e.do(c, "POST", "/instructor/login", map[string][]string{"username": {user}, "password": {pw}}, "X-Real-IP", addr)
}

// ageLoginAttempts moves every recorded login attempt d into the past, as
// another process with the database open would (time passing, for a test).
func (e *instrEnv) ageLoginAttempts(d time.Duration) {
	e.t.Helper()
	db, err := sql.Open("sqlite", "file:"+e.DB.Path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT rowid, at FROM login_attempts`)
	if err != nil {
		e.t.Fatal(err)
	}
	type row struct {
		id int64
		at string
	}
	var all []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.at); err != nil {
			e.t.Fatal(err)
		}
		all = append(all, r)
	}
	rows.Close()
	for _, r := range all {
		t, err := time.Parse(time.RFC3339Nano, r.at)
		if err != nil {
			e.t.Fatal(err)
		}
		if _, err := db.Exec(`UPDATE login_attempts SET at = ? WHERE rowid = ?`,
			t.Add(-d).UTC().Format("2006-01-02T15:04:05.000000000Z"), r.id); err != nil {
			e.t.Fatal(err)
		}
	}
}

// TestLoginJunkCannotLockOutAdmin is the attack of issue 18.4: 20 junk
// logins for "admin" from one address used to lock the real admin out for
// 15 minutes from everywhere. Now the account only gets a growing delay
// (at most instructor.LoginMaxDelay), and the junk address alone hits its own limit.
func TestLoginJunkCannotLockOutAdmin(t *testing.T) {
	e := newInstrEnv(t)
	if _, err := e.DB.CreateInstructor(context.Background(), "admin", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		e.loginFrom(e.browser(), "198.51.100.7", "admin", "junk junk junk").Body.Close()
	}
	// The real admin, elsewhere, right now: asked to wait seconds, not minutes.
	res := e.loginFrom(e.browser(), "203.0.113.9", "admin", "correct horse battery")
	doc := e.page(res, http.StatusTooManyRequests)
	ra, _ := strconv.Atoi(res.Header.Get("Retry-After"))
	if ra < 1 || ra > int(instructor.LoginMaxDelay/time.Second) {
		t.Fatalf("Retry-After %q, want 1..%d s", res.Header.Get("Retry-After"), int(instructor.LoginMaxDelay/time.Second))
	}
	if msg := doc.Find(`[data-testid=login-error]`).Text(); !strings.Contains(msg, strconv.Itoa(ra)) {
		t.Errorf("message %q does not say how long to wait (%d s)", msg, ra)
	}
	if cookieNamed(res, instructor.SessionCookie) != nil {
		t.Fatal("a session was started while throttled")
	}
	// Once the delay has passed the admin gets in, although the junk
	// continues to count.
	e.ageLoginAttempts(instructor.LoginMaxDelay + time.Second)
	res = e.loginFrom(e.browser(), "203.0.113.9", "admin", "correct horse battery")
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || cookieNamed(res, instructor.SessionCookie) == nil {
		t.Fatalf("admin after the delay: status %d, want 303 with a session", res.StatusCode)
	}
	// Spraying many usernames from one address (each within its free
	// tries) runs into that address's own limit, for any account.
	if _, err := e.DB.CreateInstructor(context.Background(), "bob", "another good password"); err != nil {
		t.Fatal(err)
	}
	for u := range instructor.LoginIPLimit/instructor.LoginFreeTries + 1 {
		for range instructor.LoginFreeTries {
			e.loginFrom(e.browser(), "198.51.100.7", "user"+strconv.Itoa(u), "junk junk junk").Body.Close()
		}
	}
	res = e.loginFrom(e.browser(), "198.51.100.7", "bob", "another good password")
	res.Body.Close()
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("junk address, other account: status %d, want 429", res.StatusCode)
	}
}

// TestLoginGuessesAcrossAddressesAreSlowed: 30 addresses × 5 tries used to
// get 150 password checks against admin in 17 s. The per-account delay
// lets only a handful be checked.
func TestLoginGuessesAcrossAddressesAreSlowed(t *testing.T) {
	e := newInstrEnv(t)
	if _, err := e.DB.CreateInstructor(context.Background(), "admin", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	checked, throttled := 0, 0
	for a := range 30 {
		addr := "192.0.2." + strconv.Itoa(a+1)
		for range 5 {
			res := e.loginFrom(e.browser(), addr, "admin", "guess "+addr)
			res.Body.Close()
			switch res.StatusCode {
			case http.StatusUnauthorized:
				checked++
			case http.StatusTooManyRequests:
				throttled++
			default:
				t.Fatalf("status %d", res.StatusCode)
			}
		}
	}
	// instructor.LoginFreeTries at once, then one per doubling delay: in the seconds
	// this loop takes, far fewer than 150.
	if checked > instructor.LoginFreeTries+6 || checked+throttled != 150 {
		t.Fatalf("%d passwords checked, %d throttled; want at most %d checked", checked, throttled, instructor.LoginFreeTries+6)
	}
}
