package web

import (
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
}
