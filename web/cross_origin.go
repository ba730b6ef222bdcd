package web

import (
	"errors"
	"net/http"

	"github.com/rdmalab/rdmalab/web/page"
)

// crossOrigin is the lab's one cross-origin rule: net/http's
// CrossOriginProtection (Go 1.25+). It reads Sec-Fetch-Site, and falls back
// to comparing Origin with Host. Requests without either header (curl,
// scripts) are not browser-driven cross-site requests and pass; the
// SameSite cookies keep them from riding on a victim's session anyway.
//
// Two routes are exempt: the LTI login initiation and launch (lti_launch.go)
// are form posts from the LMS's page, cross-site by design; a launch is
// trusted only once its signed id_token verifies, and a login only
// redirects to a registered platform.
var crossOrigin = func() *http.CrossOriginProtection {
	c := http.NewCrossOriginProtection()
	c.AddInsecureBypassPattern("POST /lti/login")
	c.AddInsecureBypassPattern("POST /lti/launch")
	return c
}()

// crossOriginProtection refuses state-changing requests (anything but GET,
// HEAD, OPTIONS) that a browser marks as coming from another site. It wraps
// the whole router, so every form post and API call is covered, including
// the instructor login and logout.
func (s *Server) crossOriginProtection(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := crossOrigin.Check(r); err != nil {
			s.refuseCrossOrigin(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) refuseCrossOrigin(w http.ResponseWriter, r *http.Request) {
	s.log.Warn("cross-origin request refused", "method", r.Method, "path", r.URL.Path,
		"origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
	if page.IsAPI(r) {
		s.WriteError(w, r, page.Errorf(page.CodeForbidden, "cross-origin request refused"))
		return
	}
	s.ErrorPage(w, r, http.StatusForbidden)
}

// crossOriginUpgrade applies the same rule to a WebSocket upgrade (the
// terminal). The upgrade is a GET, which CrossOriginProtection lets through
// (it guards only unsafe methods), yet it opens a learner's shell with their
// cookie: so it is checked as if it were a POST. Browsers always send Origin
// on a WebSocket handshake, so one without it is refused as well.
func crossOriginUpgrade(r *http.Request) error {
	if r.Header.Get("Origin") == "" {
		return errors.New("WebSocket upgrade without an Origin header")
	}
	post := *r
	post.Method = http.MethodPost
	return crossOrigin.Check(&post)
}
