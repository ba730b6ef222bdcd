package web

import (
	"net/http"
	"testing"
)

// TestTrailingSlashRedirects (issue 29 item 10): /lessons/01-one/ was a 404;
// it redirects to the page, keeping the query, and never off-site.
func TestTrailingSlashRedirects(t *testing.T) {
	env := newEnv(t, nil)
	c := env.client()
	for path, want := range map[string]string{
		"/lessons/01-one/":          "/lessons/01-one",
		"/lessons/01-one//?lang=en": "/lessons/01-one?lang=en",
		"/instructor/":              "/instructor",
		"//evil.example/":           "/evil.example",
		"/\\evil.example/":          "/%5Cevil.example", // escaped: no second slash
	} {
		res := env.get(c, path)
		res.Body.Close()
		if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != want {
			t.Errorf("GET %s: %d Location %q, want 301 %q", path, res.StatusCode, res.Header.Get("Location"), want)
		}
	}
	env.doc(c, "/lessons/01-one", http.StatusOK)
	if res := env.get(c, "/"); res.StatusCode != http.StatusOK {
		t.Errorf("GET /: %d", res.StatusCode)
	}
}
