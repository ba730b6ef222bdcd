package web

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestLessonAliasRedirect: an old slug listed in `aliases:` answers 301 to
// the lesson, keeping the query.
func TestLessonAliasRedirect(t *testing.T) {
	e := newInstrEnv(t)
	c := e.browser()
	ls := e.openReload(c)
	nextEvent(t, ls, "state")
	writeTestFile(t, filepath.Join(e.Dir, "01-alpha", "img", "diagram.png"), pngBytes)
	for _, lang := range []string{"en", "zh"} {
		page := strings.Replace(alphaPage(lang, "Alpha", "Renamed."), "order: 1\n", "order: 1\naliases: [01-old]\n", 1)
		writeTestFile(t, filepath.Join(e.Dir, "01-alpha", "index."+lang+".md"), page)
	}
	for {
		nextEvent(t, ls, "reload")
		if e.DB != nil && e.Live.Course().AliasTarget("01-old") == "01-alpha" && len(e.Live.Course().Aliases()) == 1 {
			break
		}
	}
	res := e.do(c, "GET", "/lessons/01-old?lang=en", nil)
	res.Body.Close()
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/lessons/01-alpha?lang=en" {
		t.Fatalf("old slug: %d → %q", res.StatusCode, res.Header.Get("Location"))
	}
	e.page(e.do(c, "GET", "/lessons/01-nothing", nil), http.StatusNotFound)

	// The lesson's files moved with it: an old asset URL redirects too.
	res = e.do(c, "GET", "/lessons/01-old/assets/img/diagram.png?v=2", nil)
	res.Body.Close()
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/lessons/01-alpha/assets/img/diagram.png?v=2" {
		t.Fatalf("old asset URL: %d → %q", res.StatusCode, res.Header.Get("Location"))
	}
	res = e.do(c, "GET", res.Header.Get("Location"), nil)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(b) != pngBytes {
		t.Errorf("asset after the redirect: %d %q", res.StatusCode, b)
	}
	for _, p := range []string{"/lessons/01-nothing/assets/img/diagram.png", "/lessons/01-alpha/assets/img/none.png"} {
		res := e.do(c, "GET", p, nil)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, res.StatusCode)
		}
	}
}
