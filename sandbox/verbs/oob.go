package verbs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// Endpoint is what two RC peers must tell each other before their QPs can
// talk, sent out of band over TCP as perftest does: the QP number and first
// PSN, the GID (address) of the port, and for one-sided operations the
// address and rkey of the memory the peer may access.
type Endpoint struct {
	LID  uint16 `json:"lid"`
	QPN  uint32 `json:"qpn"`
	PSN  uint32 `json:"psn"`
	GID  string `json:"gid"` // sysfs form
	Addr uint64 `json:"addr"`
	RKey uint32 `json:"rkey"`
	Len  uint64 `json:"len"`
	// Extra carries experiment-specific fields (message size, mode…).
	Extra map[string]string `json:"extra,omitempty"`
}

// ErrPeerTimeout is returned when the peer did not connect or answer in time.
var ErrPeerTimeout = errors.New("the peer did not connect in time")

// Listen opens the TCP side of the exchange on addr ("10.0.0.1:0").
func Listen(addr string) (*net.TCPListener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for the out-of-band exchange on %s: %w", addr, err)
	}
	return l.(*net.TCPListener), nil
}

// Accept waits for the peer until ctx ends or timeout passes.
func Accept(ctx context.Context, l *net.TCPListener, timeout time.Duration) (net.Conn, error) {
	dl := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	if err := l.SetDeadline(dl); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = l.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c, err := l.Accept()
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("waited %s on %s: %w", timeout, l.Addr(), ErrPeerTimeout)
		}
		return nil, fmt.Errorf("accept the peer on %s: %w", l.Addr(), err)
	}
	return c, nil
}

// Dial connects to the peer, retrying while it is not listening yet, until
// ctx ends or timeout passes.
func Dial(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("connect to %s for %s (last error: %v): %w", addr, timeout, err, ErrPeerTimeout)
			}
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Exchange sends local and reads the peer's endpoint, one JSON line each,
// within timeout.
func Exchange(c net.Conn, local Endpoint, timeout time.Duration) (Endpoint, error) {
	var remote Endpoint
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return remote, err
	}
	defer c.SetDeadline(time.Time{})
	b, err := json.Marshal(local)
	if err != nil {
		return remote, err
	}
	if _, err := c.Write(append(b, '\n')); err != nil {
		return remote, fmt.Errorf("send endpoint to %s: %w", c.RemoteAddr(), err)
	}
	line, err := readLine(c)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return remote, fmt.Errorf("read endpoint from %s: %w", c.RemoteAddr(), ErrPeerTimeout)
		}
		return remote, fmt.Errorf("read endpoint from %s: %w", c.RemoteAddr(), err)
	}
	if err := json.Unmarshal(line, &remote); err != nil {
		return remote, fmt.Errorf("decode endpoint from %s: %w", c.RemoteAddr(), err)
	}
	return remote, nil
}

// RemoteGID parses the endpoint's GID.
func (e Endpoint) RemoteGID() (GID, error) { return ParseGID(e.GID) }

// readLine reads up to and including '\n' one byte at a time, so nothing the
// peer sends after the line (a later "go" or "done") is swallowed by a buffer.
func readLine(c net.Conn) ([]byte, error) {
	var line []byte
	b := make([]byte, 1)
	for len(line) < 64<<10 {
		if _, err := c.Read(b); err != nil {
			return nil, err
		}
		if b[0] == '\n' {
			return line, nil
		}
		line = append(line, b[0])
	}
	return nil, errors.New("endpoint line longer than 64 KiB")
}
