package web

import (
	"net/http"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/attackcost"
)

// TestLTIFramingLearnerPagesOnly is issue 43, fall 8: once an LMS was
// registered, every page — /instructor/* too — could be framed by its
// origins and lost X-Frame-Options; a hosted LMS that also hosts free
// teacher accounts could then clickjack instructor actions. Now only the
// learner's pages a launch opens may be framed by the LMS; the
// instructor's area, the deep-linking picker, the account and join pages
// and a path that is not clean keep frame-ancestors 'none' and DENY.
func TestLTIFramingLearnerPagesOnly(t *testing.T) {
	e := newLTIEnv(t)
	c := e.browser()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	framed := "frame-ancestors 'self' " + e.Platform.Issuer()
	cost := attackcost.WatchSelf(func() int64 { return int64(len(e.Logs.String())) })
	defer func() { cost.Stop().Check(t, "fall 8 framing (in-process)") }()
	for _, tc := range []struct {
		path   string
		framed bool
	}{
		{"/", true},
		{"/lessons/01-quiz", true},
		{"/runs", true},
		{"/instructor", false},
		{"/instructor/login", false},
		{"/instructor/setup", false},
		{"/instructor/export/progress.csv", false},
		{"/lti/deep-link/anything", false},
		{"/me", false},
		{"/join", false},
		{"/lessons/../instructor", false},
		{"//instructor", false},
	} {
		res, err := c.Get(e.HTTP.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		csp, xfo := res.Header.Get("Content-Security-Policy"), res.Header.Get("X-Frame-Options")
		if tc.framed && (!strings.Contains(csp, framed) || xfo != "") {
			t.Errorf("%s (%d): CSP %q, X-Frame-Options %q; want the LMS allowed to frame it", tc.path, res.StatusCode, csp, xfo)
		}
		if !tc.framed && (!strings.Contains(csp, "frame-ancestors 'none'") || xfo != "DENY") {
			t.Errorf("%s (%d): CSP %q, X-Frame-Options %q; want frame-ancestors 'none' and DENY", tc.path, res.StatusCode, csp, xfo)
		}
	}
}
