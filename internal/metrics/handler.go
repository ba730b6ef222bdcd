package metrics

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Access says who may read /metrics.
type Access struct {
	// Token, when set, is the bearer token a scrape must present
	// (--metrics-token, LAB_METRICS_TOKEN); it is then the only rule,
	// wherever the scrape comes from.
	Token string
	// ProxyHeader is the header the trusted reverse proxy writes
	// (--trusted-proxy-header): a request carrying it came through the
	// proxy. The usual forwarding headers count as well, set or not.
	ProxyHeader string
}

// forwarded are the headers a reverse proxy adds; a request with any of
// them came through one (the documented nginx setup sets X-Real-IP and
// X-Forwarded-Proto).
var forwarded = []string{"X-Real-IP", "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "Forwarded"}

// Allowed reports whether r may read the metrics under a, and if not, the
// status and the reason to answer with.
//
// Without a token only a direct loopback client may: behind nginx every
// request's TCP peer is loopback, so the peer alone would hand the
// metrics (run counts, learner load, route names) to the whole internet;
// a proxied request is told apart by the headers the proxy adds.
func (a Access) Allowed(r *http.Request) (ok bool, status int, why string) {
	if a.Token != "" {
		got, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if found && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(a.Token)) == 1 {
			return true, 0, ""
		}
		return false, http.StatusUnauthorized, "metrics: a bearer token is required (Authorization: Bearer …, the value of --metrics-token)\n"
	}
	if !loopbackPeer(r.RemoteAddr) {
		return false, http.StatusForbidden, "metrics: without --metrics-token only a client on this machine may read them\n"
	}
	headers := forwarded
	if a.ProxyHeader != "" {
		headers = append(headers[:len(headers):len(headers)], a.ProxyHeader)
	}
	for _, h := range headers {
		if r.Header.Get(h) != "" {
			return false, http.StatusForbidden, "metrics: this request came through a reverse proxy (" + h + "); set --metrics-token to scrape from elsewhere\n"
		}
	}
	return true, 0, ""
}

// loopbackPeer reports whether the TCP peer is on this machine.
func loopbackPeer(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// Handler serves the registry in the Prometheus text format to whom a
// allows; a nil Lab answers 404 (metrics off).
func (l *Lab) Handler(a Access) http.Handler {
	if l == nil {
		return http.NotFoundHandler()
	}
	// The lab's middleware compresses (web/compress.go): not twice.
	h := promhttp.HandlerFor(l.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, DisableCompression: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, status, why := a.Allowed(r); !ok {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="rdmalab metrics"`)
			}
			http.Error(w, why, status)
			return
		}
		h.ServeHTTP(w, r)
	})
}
