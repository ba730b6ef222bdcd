package lti

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// MaxBody bounds every body a platform sends back (JWKS, token, AGS
// answers): a registered platform is trusted to sign, not to be small.
const MaxBody = 1 << 20

// NewHTTPClient is the client the tool talks to platforms with: a time
// limit per request and every response body cut at MaxBody (a longer one
// reads as an error, never as a silently truncated document).
func NewHTTPClient() *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: boundedTransport{http.DefaultTransport}}
}

type boundedTransport struct{ next http.RoundTripper }

func (t boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{rc: resp.Body, left: MaxBody}
	return resp, nil
}

type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

var errTooBig = fmt.Errorf("lti: a platform's answer is longer than %d bytes", MaxBody)

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One more byte decides between "exactly MaxBody" and "more".
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, errTooBig
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// checkURL accepts https URLs, and http ones only for a loopback host (a
// platform on the same machine: tests, a trial Moodle).
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", s)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if h := u.Hostname(); h == "localhost" || isLoopback(h) {
			return nil
		}
		return fmt.Errorf("%q: LTI needs https (http only for localhost)", s)
	}
	return errors.New("URL scheme must be https")
}

func isLoopback(h string) bool {
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
