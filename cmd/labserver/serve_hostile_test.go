package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/store"
)

// TestServeSignsLearnerCookies: the real server signs learner cookies
// with a key it keeps in the database, so a bare learner id (as the CSV
// exports show it) is refused, and a restart keeps learners signed in.
func TestServeSignsLearnerCookies(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "lab.db")
	serve := func() *Main {
		m, out := newMain(map[string]string{"LAB_ADDR": "127.0.0.1:0", "LAB_DB": dbPath, "LAB_BACKEND": "none"})
		if err := m.ParseFlags(nil); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(context.Background()); err != nil {
			t.Fatalf("Run: %v\n%s", err, out)
		}
		return m
	}
	cookieOf := func(m *Main, send string) string {
		req, _ := http.NewRequest("GET", "http://"+m.Addr()+"/", nil)
		if send != "" {
			req.Header.Set("Cookie", "lab_learner="+send)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		for _, c := range res.Cookies() {
			if c.Name == "lab_learner" {
				return c.Value
			}
		}
		return ""
	}
	m := serve()
	signed := cookieOf(m, "")
	id, mac, ok := strings.Cut(signed, ".")
	if !ok || !store.ValidLearnerID(id) || mac == "" {
		t.Fatalf("cookie %q is not a signed learner id", signed)
	}
	if c := cookieOf(m, id); c == "" || strings.HasPrefix(c, id) {
		t.Errorf("a bare learner id was accepted as a cookie (new cookie %q)", c)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = serve()
	defer m.Close()
	if c := cookieOf(m, signed); c != "" {
		t.Errorf("after a restart the signed cookie was replaced by %q", c)
	}
}
