package page

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestLanguageResolution(t *testing.T) {
	for _, tc := range []struct {
		name, query, cookie, accept, want string
	}{
		{"default", "", "", "", "zh"},
		{"accept en", "", "", "en-US,en;q=0.9", "en"},
		{"accept zh-TW", "", "", "zh-TW", "zh"},
		{"accept unsupported then en", "", "", "fr-FR, en;q=0.5", "en"},
		{"accept only unsupported", "", "", "fr, de;q=0.8", "zh"},
		{"accept q order", "", "", "zh;q=0.3, en;q=0.8", "en"},
		{"accept q zero", "", "", "en;q=0", "zh"},
		{"accept garbage", "", "", ";;,q=x,en;q=abc", "zh"},
		{"cookie beats accept", "", "en", "zh-CN", "en"},
		{"bad cookie ignored", "", "xx", "en", "en"},
		{"query beats cookie", "zh", "en", "en", "zh"},
		{"query en", "en", "", "", "en"},
		{"bad query ignored", "fr", "en", "", "en"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/?lang="+tc.query, nil)
			if tc.cookie != "" {
				r.AddCookie(&http.Cookie{Name: langCookie, Value: tc.cookie})
			}
			if tc.accept != "" {
				r.Header.Set("Accept-Language", tc.accept)
			}
			got, fromQuery := ResolveLang(r)
			if got != tc.want {
				t.Errorf("resolveLang = %q, want %q", got, tc.want)
			}
			if fromQuery != (tc.query == tc.want && supportedLang(tc.query)) {
				t.Errorf("fromQuery = %v", fromQuery)
			}
		})
	}
}

// The remembered answers are the parsed ones, and a client inventing
// headers fills the memory only up to its bound.
func TestAcceptLanguageMemoBounded(t *testing.T) {
	for _, h := range []string{"zh-CN,zh;q=0.9,en;q=0.8", "en-GB,en;q=0.9", "fr", ""} {
		if got, want := acceptLanguageMemo(h), acceptLanguage(h); got != want {
			t.Errorf("%q: %q, parsed %q", h, got, want)
		}
		if got, want := acceptLanguageMemo(h), acceptLanguage(h); got != want {
			t.Errorf("%q again: %q, parsed %q", h, got, want)
		}
	}
	for i := range 2 * acceptLangsMax {
		acceptLanguageMemo(fmt.Sprintf("x-%d, en;q=0.%d", i, i%9+1))
	}
	acceptLangsMu.RLock()
	n := len(acceptLangs)
	acceptLangsMu.RUnlock()
	if n > acceptLangsMax {
		t.Errorf("%d headers remembered, bound %d", n, acceptLangsMax)
	}
}
