package web

import (
	"context"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// contentSecurityPolicy is what every page satisfies: scripts, styles,
// images and connections from this origin only, no inline script (the
// theme script is a file too), no inline style attribute (the dashboard's
// bars use classes), no plugins, and no framing by other sites — except
// a learner's pages by the LMSs registered for LTI (frameAncestors,
// framable).
// Scripts may still set element.style (uPlot, the reload overlay):
// CSSOM changes are not governed by style-src. data: images are the
// charts' exported PNGs.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders sets the headers every answer carries: the CSP, no
// framing (also for browsers without frame-ancestors), no content-type
// sniffing, and no full URLs (run ids, lesson anchors) in Referer to
// other sites. With LTI platforms registered, their origins may frame the
// learner's pages an LMS launch opens (framable): frame-ancestors names
// them and X-Frame-Options, which cannot name an origin, is left out
// there. Every other page keeps 'none' and DENY: an LMS origin may also
// host anyone's free teacher account (a hosted Canvas), and from there it
// framed /instructor/* to clickjack instructor actions (issue 43 fall 8).
func (s *Server) securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// Canonical keys and shared one-value slices (len = cap, so an
		// Add elsewhere copies): no canonicalizing and no allocation on
		// every request.
		if anc := s.frames.get(r.Context(), s); anc != "" && framable(r.URL.Path) {
			h.Set("Content-Security-Policy", strings.Replace(contentSecurityPolicy, "frame-ancestors 'none'", "frame-ancestors "+anc, 1))
		} else {
			h["Content-Security-Policy"] = cspValue
			h["X-Frame-Options"] = denyValue
		}
		h["X-Content-Type-Options"] = nosniffValue
		h["Referrer-Policy"] = referrerValue
		next.ServeHTTP(w, r)
	})
}

// framable says whether the page at path may be framed by a registered
// LMS: the launch itself and the learner's pages a launch opens and
// links to (the course home, lessons, runs, the lab's state) — never the
// instructor's area, the deep-linking picker (an instructor's choice of
// content for a course), a learner's account page (/me) or a class join.
// Only a clean path counts: chi routes by the path as sent.
func framable(p string) bool {
	if p != path.Clean(p) {
		return false
	}
	switch {
	case p == "/", p == "/lti/launch", p == "/lti/login", p == "/runs", p == "/lab":
		return true
	case strings.HasPrefix(p, "/lessons/"), strings.HasPrefix(p, "/runs/"), strings.HasPrefix(p, "/api/"):
		return true
	}
	return false
}

var (
	cspValue      = []string{contentSecurityPolicy}[:1:1]
	denyValue     = []string{"DENY"}[:1:1]
	nosniffValue  = []string{"nosniff"}[:1:1]
	referrerValue = []string{"strict-origin-when-cross-origin"}[:1:1]
)

// frameTTL is how long the framing origins are cached: `labserver lti
// add` in another process takes effect within it.
const frameTTL = 30 * time.Second

// frameAncestors caches the origins allowed to frame the lab.
type frameAncestors struct {
	mu    sync.Mutex
	value string
	at    time.Time
}

func (f *frameAncestors) forget() {
	f.mu.Lock()
	f.at = time.Time{}
	f.mu.Unlock()
}

// get is "" (no framing) or "'self' ORIGIN…": the origins of each
// registered platform's issuer and auth URL and its extra frame origins.
func (f *frameAncestors) get(ctx context.Context, s *Server) string {
	if s.cfg.LTI == nil {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.at) < frameTTL {
		return f.value
	}
	ps, err := s.cfg.Store.LTIPlatforms(ctx)
	if err != nil {
		return f.value // the last known list; asked again next time
	}
	var origins []string
	for _, p := range ps {
		for _, u := range append([]string{p.Issuer, p.AuthURL}, p.FrameOrigins...) {
			if o, err := url.Parse(u); err == nil && o.Host != "" && !slices.Contains(origins, o.Scheme+"://"+o.Host) {
				origins = append(origins, o.Scheme+"://"+o.Host)
			}
		}
	}
	f.value = ""
	if len(origins) > 0 {
		f.value = "'self' " + strings.Join(origins, " ")
	}
	f.at = time.Now()
	return f.value
}
