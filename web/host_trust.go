package web

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/internal/textclip"
	"github.com/rdmalab/rdmalab/web/page"
)

// A request's Host header is the client's to write: anyone may send
// "Host: evil.example" to the lab. Without --public-url the LTI tool built
// its URLs from it, so a forged Host reached the redirect_uri of a login
// anyone may start, and the URL of a deep-linked lesson (issue 43). The
// lab's own URLs are therefore built from the Host only when it names
// this lab as the connection reached it — a loopback name or address, or
// the local address the connection arrived on — and otherwise from that
// local address itself, with a warning (at most one a minute) that
// --public-url is unset. Names (lab.example.edu) are trusted only through
// --public-url. Instructor pages' links (join codes, invitations) still
// use the Host: a forged one there comes only from the instructor's own
// browser, since the session cookie is never sent to another name.

// trustedHost reports whether host (a Host header, port allowed) names
// the lab as reached through local, the connection's local address.
func trustedHost(host string, local netip.Addr) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	if err != nil {
		return false // a name: trusted only as --public-url
	}
	a = a.Unmap()
	return a.IsLoopback() || local.IsValid() && a == local.Unmap()
}

// localAddr is the address and port the request's connection reached.
func localAddr(r *http.Request) netip.AddrPort {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			return ap
		}
	}
	return netip.AddrPort{}
}

// hostWarnings bounds the warning about untrusted Host headers.
type hostWarnings struct {
	sync.Mutex
	last   time.Time
	missed int
}

// requestBase is scheme://host of the lab as this request reached it,
// from its Host header only when trustedHost allows, else from the local
// address (see above). No trailing slash.
func (s *Server) requestBase(r *http.Request) string {
	scheme := "http"
	if page.SecureRequest(r) {
		scheme = "https"
	}
	local := localAddr(r)
	if trustedHost(r.Host, local.Addr()) || !local.IsValid() {
		return scheme + "://" + r.Host
	}
	l := &s.hostWarn
	l.Lock()
	if time.Since(l.last) >= time.Minute {
		s.log.Warn("a request's Host is not this lab's address; the lab's URLs are built from the local address instead (set --public-url to the name browsers and the LMS use)",
			"host", textclip.Bytes(r.Host, 80), "local", local.String(), "path", r.URL.Path, "more_since_last", l.missed)
		l.last, l.missed = time.Now(), 0
	} else {
		l.missed++
	}
	l.Unlock()
	return scheme + "://" + netip.AddrPortFrom(local.Addr().Unmap(), local.Port()).String()
}
