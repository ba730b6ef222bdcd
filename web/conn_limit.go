package web

import (
	"net"
	"net/netip"
	"sync"

	"github.com/rdmalab/rdmalab/web/page"
)

// LimitListener bounds the open connections per client address: a
// connection beyond perAddr from one address is closed as soon as it is
// accepted, before a byte of it is read, so one client holding thousands
// of idle or slow connections cannot use up the server's memory or file
// descriptors while others are served. Peers in exempt (trusted proxies,
// which carry every client's connections) are not counted. perAddr < 1
// returns ln unchanged.
func LimitListener(ln net.Listener, perAddr int, exempt []netip.Prefix) net.Listener {
	if perAddr < 1 {
		return ln
	}
	return &limitListener{Listener: ln, max: perAddr, exempt: exempt, open: map[string]int{}}
}

type limitListener struct {
	net.Listener
	max    int
	exempt []netip.Prefix

	mu      sync.Mutex
	open    map[string]int
	refused uint64
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, counted := l.key(c.RemoteAddr())
		if !counted {
			return c, nil
		}
		l.mu.Lock()
		if l.open[key] >= l.max {
			l.refused++
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.open[key]++
		l.mu.Unlock()
		return &limitConn{Conn: c, release: func() { l.release(key) }}, nil
	}
}

// key is the address a connection counts under; counted is false for
// exempt peers.
func (l *limitListener) key(a net.Addr) (string, bool) {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return a.String(), true
	}
	addr := ap.Addr().Unmap()
	for _, p := range l.exempt {
		if p.Contains(addr) {
			return "", false
		}
	}
	return page.AddrKey(addr), true
}

func (l *limitListener) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key]--; l.open[key] <= 0 {
		delete(l.open, key)
	}
}

// Refused is how many connections were closed for being over the limit.
func (l *limitListener) Refused() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
