package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// langCookie remembers the learner's language choice.
const langCookie = "lang"

// defaultLang is used when nothing else decides: the course is written for
// Chinese-speaking learners first.
const defaultLang = "zh"

// supportedLang reports whether the UI and the lessons can be shown in lang.
func supportedLang(lang string) bool { return lang == "zh" || lang == "en" }

// resolveLang picks the page language: ?lang= (which the caller then
// remembers in the cookie), the lang cookie, Accept-Language, then zh.
// fromQuery is true when ?lang= decided.
func resolveLang(r *http.Request) (lang string, fromQuery bool) {
	if q := r.URL.Query().Get("lang"); supportedLang(q) {
		return q, true
	}
	if c, err := r.Cookie(langCookie); err == nil && supportedLang(c.Value) {
		return c.Value, false
	}
	if l := acceptLanguage(r.Header.Get("Accept-Language")); l != "" {
		return l, false
	}
	return defaultLang, false
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

// withLang resolves the request's language and stores a ?lang= choice in
// the lang cookie so later pages keep it.
func (s *Server) withLang(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lang, fromQuery := resolveLang(r)
		if fromQuery {
			http.SetCookie(w, &http.Cookie{
				Name:     langCookie,
				Value:    lang,
				Path:     "/",
				MaxAge:   int(learnerCookieAge / time.Second),
				HttpOnly: true,
				SameSite: http.SameSiteLaxMode,
				Secure:   r.TLS != nil,
			})
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), langKey, lang)))
	})
}

// langOf is the request's language (set by withLang; zh outside it).
func langOf(r *http.Request) string {
	if l, ok := r.Context().Value(langKey).(string); ok {
		return l
	}
	return defaultLang
}
