package web

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/attackcost"
	"github.com/rdmalab/rdmalab/lti/ltitest"
)

// TestLTIForgedHost (issue 43): with no --public-url, a login anyone may
// start with "Host: evil.example" gets a redirect_uri (and a deep-linked
// lesson its URL) on the lab as the connection reached it, never on the
// forged name; Hosts that name the lab (its local address, loopback) are
// kept as sent; the warning is logged once, not per request.
func TestLTIForgedHost(t *testing.T) {
	e := newLTIEnv(t)
	login := func(host string) string {
		t.Helper()
		hint := e.Platform.Prepare(ltitest.Message{Sub: "u-1"})
		req, _ := http.NewRequest("POST", e.HTTP.URL+"/lti/login", strings.NewReader(e.Platform.LoginQuery(hint, e.HTTP.URL+"/").Encode()))
		req.Host = host
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Origin", e.Platform.URL)
		res, err := e.browser().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		u, err := url.Parse(res.Header.Get("Location"))
		if res.StatusCode != http.StatusFound || err != nil {
			t.Fatalf("login with Host %q: %d %q", host, res.StatusCode, res.Header.Get("Location"))
		}
		return u.Query().Get("redirect_uri")
	}
	cost := attackcost.WatchSelf(func() int64 { return int64(len(e.Logs.String())) })
	lab := strings.TrimPrefix(e.HTTP.URL, "http://")
	port := lab[strings.LastIndex(lab, ":"):]
	for _, host := range []string{"evil.example", "evil.example" + port, "203.0.113.9" + port, "[2001:db8::1]" + port} {
		for range 3 {
			if got := login(host); got != e.HTTP.URL+"/lti/launch" {
				t.Errorf("Host %q: redirect_uri %q, want the lab as reached, %s/lti/launch", host, got, e.HTTP.URL)
			}
		}
	}
	for _, host := range []string{lab, "localhost" + port, "[::1]" + port} {
		if got := login(host); got != "http://"+host+"/lti/launch" {
			t.Errorf("Host %q (names the lab): redirect_uri %q, want it kept", host, got)
		}
	}
	cost.Stop().Check(t, "fall 10 forged Host at the LTI login (in-process)")
	if n := strings.Count(e.Logs.String(), "Host is not this lab's address"); n != 1 {
		t.Errorf("the untrusted Host warning logged %d times for 12 requests, want once a minute", n)
	}
	local := netip.MustParseAddr("10.1.2.3")
	for host, want := range map[string]bool{"10.1.2.3:8080": true, "10.1.2.3": true, "LOCALHOST:1": true, "127.0.0.2:9": true,
		"10.1.2.4:8080": false, "lab.example.edu": false, "": false, "[::ffff:10.1.2.3]:80": true} {
		if got := trustedHost(host, local); got != want {
			t.Errorf("trustedHost(%q) = %v, want %v", host, got, want)
		}
	}
}
