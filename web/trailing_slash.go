package web

import (
	"net/http"
	"strings"
)

// redirectTrailingSlash answers GET and HEAD of a path ending in '/' (but
// "/") with a permanent redirect to the path without it: no page of the
// lab has a trailing slash, and /lessons/01-why-rdma/ typed or pasted from
// a chat used to be a 404 (issue 29 item 10). The target keeps only one
// leading slash, so "//evil.example/" cannot become a redirect off-site.
func redirectTrailingSlash(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && len(p) > 1 && strings.HasSuffix(p, "/") &&
			!strings.HasPrefix(p, staticPrefix) {
			target := "/" + strings.TrimLeft(strings.TrimRight(p, "/"), "/\\")
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, target, http.StatusMovedPermanently)
			return
		}
		next.ServeHTTP(w, r)
	})
}
