package web

import (
	"net/http/httptest"
	"testing"
)

// The terminal's WebSocket upgrade is a GET, so the router's
// CrossOriginProtection lets it pass; crossOriginUpgrade holds it to the
// same rule.
func TestCrossOriginUpgrade(t *testing.T) {
	cases := []struct {
		name   string
		header []string
		ok     bool
	}{
		{"same origin", []string{"Origin", "http://lab.example"}, true},
		{"same origin, fetch metadata", []string{"Origin", "http://lab.example", "Sec-Fetch-Site", "same-origin"}, true},
		{"other site", []string{"Origin", "http://evil.example"}, false},
		{"other site, fetch metadata", []string{"Origin", "http://lab.example", "Sec-Fetch-Site", "cross-site"}, false},
		{"same site, other origin", []string{"Origin", "http://sub.lab.example", "Sec-Fetch-Site", "same-site"}, false},
		{"no Origin", nil, false},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "http://lab.example/api/terminal", nil)
		for i := 0; i+1 < len(c.header); i += 2 {
			r.Header.Set(c.header[i], c.header[i+1])
		}
		if err := crossOriginUpgrade(r); (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want ok=%v", c.name, err, c.ok)
		}
		if r.Method != "GET" {
			t.Fatalf("the check changed the request's method to %s", r.Method)
		}
	}
}
