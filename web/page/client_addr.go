package page

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientAddrConfig says how to find a request's real client address.
//
// By default it is the TCP peer. Behind a reverse proxy every request comes
// from the proxy, so one client could not be told from another: set Header
// to the header the proxy writes (the documented nginx setup sets
// X-Real-IP; X-Forwarded-For works too, its last entry is used) and list
// the proxies' addresses in Proxies. The header is read only from those
// peers: anyone else could forge a fresh value with every request and
// escape every per-address limit.
type ClientAddrConfig struct {
	Header  string         // e.g. "X-Real-IP"; "" trusts no header
	Proxies []netip.Prefix // peers whose Header is believed; empty with Header set: loopback
}

// loopback is the default trusted proxy: nginx on the same machine.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// ParseProxies reads a comma-separated list of addresses or CIDR prefixes
// (LAB_TRUSTED_PROXIES).
func ParseProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, err
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// peerAddr is the TCP peer of r, unmapped (::ffff:1.2.3.4 → 1.2.3.4).
func peerAddr(r *http.Request) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		a, err := netip.ParseAddr(host)
		return a.Unmap(), err == nil
	}
	return ap.Addr().Unmap(), true
}

// resolve finds the client address of r under c.
func (c ClientAddrConfig) resolve(r *http.Request) netip.Addr {
	peer, ok := peerAddr(r)
	if !ok || c.Header == "" {
		return peer
	}
	proxies := c.Proxies
	if len(proxies) == 0 {
		proxies = loopback
	}
	trusted := false
	for _, p := range proxies {
		if p.Contains(peer) {
			trusted = true
			break
		}
	}
	if !trusted {
		return peer
	}
	v := r.Header.Get(c.Header)
	if i := strings.LastIndexByte(v, ','); i >= 0 {
		// X-Forwarded-For: client, proxy1, …: the entry our proxy added is last.
		v = v[i+1:]
	}
	if a, err := netip.ParseAddr(strings.TrimSpace(v)); err == nil {
		return a.Unmap()
	}
	return peer
}

// AddrKey is the key per-address limits count under: the address itself
// for IPv4, its /64 for IPv6 (one host usually owns a whole /64, so
// counting single v6 addresses would let it mint millions of clients).
func AddrKey(a netip.Addr) string {
	if !a.IsValid() {
		return "?"
	}
	if a.Is6() && !a.IsLoopback() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// Middleware records the request's client address (as c finds it) for
// the limits, the logs and the instructor login.
func (c ClientAddrConfig) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := c.resolve(r)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientAddrKey, a)))
	})
}

// ClientAddr is the request's client address as Middleware found it.
func ClientAddr(r *http.Request) netip.Addr {
	if a, ok := r.Context().Value(clientAddrKey).(netip.Addr); ok {
		return a
	}
	a, _ := peerAddr(r)
	return a
}

// ClientIP is the client address as text (logs, the login throttle).
func ClientIP(r *http.Request) string {
	a := ClientAddr(r)
	if !a.IsValid() {
		return r.RemoteAddr
	}
	return a.String()
}
