package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/attackcost"
	"github.com/rdmalab/rdmalab/runs/runner"
)

// TestRequestLogFlood is issue 43, fall 6: every request logged its whole
// path and anonymous GETs are not rate-limited, so 1,447 requests in 10 s
// with long paths wrote 1.45 GB of log. Here 1,500 GETs from one address,
// each with a 4 KB path, go to a real server: the log grows by a few
// lines' worth (the path clipped, the address's share, one line saying it
// is over its share), not by the 6 MB of the paths; an honest learner
// on another address loads pages during the flood, another address is
// still logged afterwards, and a header block past MaxHeaderBytes is
// refused with 431.
func TestRequestLogFlood(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	srv := httptest.NewUnstartedServer(env.Server.Handler())
	srv.Config.MaxHeaderBytes = MaxHeaderBytes
	srv.Start()
	t.Cleanup(srv.Close)
	get := func(path, addr string, hdr int) int {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("X-Real-IP", addr)
		if hdr > 0 {
			req.Header.Set("X-Junk", strings.Repeat("j", hdr))
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	before := env.Logs.Len()
	long := "/lessons/" + strings.Repeat("x", 4000)
	honest := 0
	attackcost.Measure(t, "fall 6 request-log flood (in-process)", func() int64 { return int64(env.Logs.Len()) }, func() {
		for i := range 1500 {
			if code := get(long, "198.51.100.7", 0); code != http.StatusNotFound {
				t.Fatalf("flood request: %d", code)
			}
			if i%100 == 0 && get("/", "192.0.2.44", 0) == http.StatusOK { // an honest learner elsewhere
				honest++
			}
		}
	})
	if honest != 15 {
		t.Errorf("an honest learner's pages during the flood: %d of 15 loaded", honest)
	}
	grown := env.Logs.Len() - before
	logs := env.Logs.String()[before:]
	over := strings.Count(logs, "request log over its share for this address")
	t.Logf("1500 requests with 4 KB paths: the log grew %d bytes (%d lines, %d over-share notes)", grown, strings.Count(logs, "\n"), over)
	if grown > 100<<10 {
		t.Errorf("the log grew %d bytes under the flood; want at most 100 KiB", grown)
	}
	if over != 1 {
		t.Errorf("the address's abuse was said %d times, want once", over)
	}
	if strings.Contains(logs, strings.Repeat("x", logPathMax+1)) {
		t.Errorf("a logged path is longer than %d bytes", logPathMax)
	}
	// Another address is logged meanwhile.
	mark := env.Logs.Len()
	get("/lessons/another-address", "203.0.113.5", 0)
	if !strings.Contains(env.Logs.String()[mark:], "path=/lessons/another-address") {
		t.Errorf("another address's request was not logged: %q", env.Logs.String()[mark:])
	}
	// A header block past the bound is refused before any handler.
	if code := get("/", "203.0.113.6", 64<<10); code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 64 KiB header: %d, want 431", code)
	}
	if code := get("/", "203.0.113.6", 8<<10); code != http.StatusOK {
		t.Errorf("an 8 KiB header: %d, want 200", code)
	}
}
