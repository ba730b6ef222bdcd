package page

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// langCookie remembers the learner's language choice.
const langCookie = "lang"

// langCookieAge keeps the choice as long as a learner's cookie lives.
const langCookieAge = 365 * 24 * time.Hour

// ctxKey keys what the page base puts in a request's context.
type ctxKey int

const (
	langKey ctxKey = iota + 1
	clientAddrKey
)

// DefaultLang is used when nothing else decides: the course is written for
// Chinese-speaking learners first.
const DefaultLang = "zh"

// supportedLang reports whether the UI and the lessons can be shown in lang.
func supportedLang(lang string) bool { return lang == "zh" || lang == "en" }

// ResolveLang picks the page language: ?lang= (which the caller then
// remembers in the cookie), the lang cookie, Accept-Language, then zh.
// fromQuery is true when ?lang= decided.
func ResolveLang(r *http.Request) (lang string, fromQuery bool) {
	if q := r.URL.Query().Get("lang"); supportedLang(q) {
		return q, true
	}
	if c, err := r.Cookie(langCookie); err == nil && supportedLang(c.Value) {
		return c.Value, false
	}
	if l := acceptLanguageMemo(r.Header.Get("Accept-Language")); l != "" {
		return l, false
	}
	return DefaultLang, false
}

// acceptLangs remembers acceptLanguage's answer per header: a class's
// browsers send a handful of distinct headers, parsed once each. Bounded:
// past acceptLangsMax headers (a hostile client's inventions) it parses.
var (
	acceptLangsMu sync.RWMutex
	acceptLangs   = map[string]string{}
)

const acceptLangsMax = 256

func acceptLanguageMemo(h string) string {
	if h == "" {
		return ""
	}
	acceptLangsMu.RLock()
	l, ok := acceptLangs[h]
	acceptLangsMu.RUnlock()
	if ok {
		return l
	}
	l = acceptLanguage(h)
	if len(h) <= 256 {
		acceptLangsMu.Lock()
		if len(acceptLangs) < acceptLangsMax {
			acceptLangs[h] = l
		}
		acceptLangsMu.Unlock()
	}
	return l
}

// acceptLanguage returns the supported language the header prefers most
// ("" if none): the highest q wins, ties go to the earlier entry; regions
// and scripts are ignored (zh-TW, zh-Hant and en-GB all count).
func acceptLanguage(h string) string {
	best, bestQ := "", 0.0
	for part := range strings.SplitSeq(h, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				continue
			}
			q = f
		}
		primary, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
		if supportedLang(primary) && q > bestQ {
			best, bestQ = primary, q
		}
	}
	return best
}

// WithLang resolves the request's language and stores a ?lang= choice in
// the lang cookie so later pages keep it.
func WithLang(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lang, fromQuery := ResolveLang(r)
		if fromQuery {
			http.SetCookie(w, &http.Cookie{
				Name:     langCookie,
				Value:    lang,
				Path:     "/",
				MaxAge:   int(langCookieAge / time.Second),
				HttpOnly: true,
				SameSite: http.SameSiteLaxMode,
				Secure:   r.TLS != nil,
			})
		}
		next.ServeHTTP(w, SetLang(r, lang))
	})
}

// SetLang is r in language lang, for what answers before WithLang runs
// (a refused body's page).
func SetLang(r *http.Request, lang string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), langKey, lang))
}

// LangOf is the request's language (set by WithLang; zh outside it).
func LangOf(r *http.Request) string {
	if l, ok := r.Context().Value(langKey).(string); ok {
		return l
	}
	return DefaultLang
}
