package web

import "net/http"

// crossOriginProtection refuses state-changing requests (anything but GET,
// HEAD, OPTIONS) that a browser marks as coming from another site, using
// net/http's CrossOriginProtection (Go 1.25+): it reads Sec-Fetch-Site, and
// falls back to comparing Origin with Host. Requests without either header
// (curl, scripts) are not browser-driven cross-site requests and pass; the
// SameSite cookies keep them from riding on a victim's session anyway.
// It wraps the whole router, so every form post and API call is covered,
// including the instructor login and logout.
func (s *Server) crossOriginProtection(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.log.Warn("cross-origin request refused", "method", r.Method, "path", r.URL.Path,
			"origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
		if isAPI(r) {
			s.writeError(w, r, Errorf(CodeForbidden, "cross-origin request refused"))
			return
		}
		s.errorPage(w, r, http.StatusForbidden)
	}))
	return cop.Handler(next)
}
