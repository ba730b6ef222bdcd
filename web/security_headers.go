package web

import "net/http"

// contentSecurityPolicy is what every page satisfies: scripts, styles,
// images and connections from this origin only, no inline script (the
// theme script is a file too), no inline style attribute (the dashboard's
// bars use classes), no plugins, and no framing by other sites.
// Scripts may still set element.style (uPlot, the reload overlay):
// CSSOM changes are not governed by style-src. data: images are the
// charts' exported PNGs.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders sets the headers every answer carries: the CSP, no
// framing (also for browsers without frame-ancestors), no content-type
// sniffing, and no full URLs (run ids, lesson anchors) in Referer to
// other sites.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "strict-origin-when-cross-origin")
		next.ServeHTTP(w, r)
	})
}
