package web

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/store"
)

// TestSignedLearnerCookie: with a LearnerKey (as serve runs), a learner's
// bare id — what a CSV export or a log line shows — does not make a
// valid cookie, nor does the id with another learner's or another key's
// MAC. Each forgery gets a fresh learner who sees nothing of the victim.
func TestSignedLearnerCookie(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "lab.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key, err := db.Secret(ctx, "learner-cookie", 32)
	if err != nil {
		t.Fatal(err)
	}
	course := fixtureCourse()
	newServer := func(key []byte) *httptest.Server {
		srv, err := New(Config{Course: func() *lessons.Course { return course }, Store: db,
			Logger: slog.New(slog.DiscardHandler), LearnerKey: key})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		return ts
	}
	ts := newServer(key)
	otherKey := newServer([]byte("another lab's key, 32 bytes long"))

	issue := func(ts *httptest.Server) string {
		res, err := http.Get(ts.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		for _, c := range res.Cookies() {
			if c.Name == learnerCookie {
				return c.Value
			}
		}
		t.Fatal("no learner cookie issued")
		return ""
	}
	victimCookie := issue(ts)
	victim, mac, signed := strings.Cut(victimCookie, ".")
	if !signed || !store.ValidLearnerID(victim) || mac == "" {
		t.Fatalf("cookie %q is not ID.MAC", victimCookie)
	}
	if err := db.MarkCompleted(ctx, victim, "01-one"); err != nil {
		t.Fatal(err)
	}
	completed := func(cookie string) (bool, string) {
		req, _ := http.NewRequest("GET", ts.URL+"/?lang=en", nil)
		req.Header.Set("Cookie", learnerCookie+"="+cookie)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		fresh := ""
		for _, c := range res.Cookies() {
			if c.Name == learnerCookie {
				fresh = c.Value
			}
		}
		return strings.Contains(string(b), "Completed"), fresh
	}
	// The real cookie works and is kept.
	if done, fresh := completed(victimCookie); !done || fresh != "" {
		t.Fatalf("victim's own cookie: completed=%v, replaced by %q", done, fresh)
	}
	other, otherMAC, _ := strings.Cut(issue(ts), ".")
	_, foreignMAC, _ := strings.Cut(issue(otherKey), ".")
	for name, forged := range map[string]string{
		"bare id (as in a CSV export)":      victim,
		"id with an empty MAC":              victim + ".",
		"id with another learner's MAC":     victim + "." + otherMAC,
		"id with another lab's MAC":         victim + "." + foreignMAC,
		"id with a flipped MAC":             victim + "." + flip(mac),
		"another learner's id with the MAC": other + "." + mac,
		"MAC twice":                         victimCookie + "." + mac,
	} {
		done, fresh := completed(forged)
		if done {
			t.Errorf("%s: sees the victim's progress", name)
		}
		if fresh == "" || strings.HasPrefix(fresh, victim) {
			t.Errorf("%s: not given a fresh learner (%q)", name, fresh)
		}
	}
	// Unsigned servers (no key) keep accepting bare ids: the tests' mode.
	plain := newServer(nil)
	if c := issue(plain); !store.ValidLearnerID(c) {
		t.Errorf("unsigned server issued %q", c)
	}
}

// flip changes the MAC's first character to another valid one.
func flip(mac string) string {
	if mac[0] == 'A' {
		return "B" + mac[1:]
	}
	return "A" + mac[1:]
}

// TestLearnerCookieSecureBehindProxy: behind nginx terminating TLS (it
// sets X-Forwarded-Proto: https, as docs/operations.md configures it),
// the learner cookie — a bearer credential — is Secure too.
func TestLearnerCookieSecureBehindProxy(t *testing.T) {
	env := newEnv(t, nil)
	res := env.get(http.DefaultClient, "/", "X-Forwarded-Proto", "https")
	res.Body.Close()
	for _, c := range res.Cookies() {
		if c.Name == learnerCookie && !c.Secure {
			t.Errorf("learner cookie behind a TLS proxy is not Secure: %+v", c)
		}
	}
}
