package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/rdmalab/rdmalab/static"
)

// TestStaticFileServedInPlace: an asset is served from the embedded file
// in place, whole and by range, without a copy of it per request. Before
// serveFile an asset request allocated the file's size (fs.ReadFile) and a
// 32 KiB copy buffer (chi's compressor's writer has no ReadFrom): 67 KB
// for the 29 KB experiment.js.
func TestStaticFileServedInPlace(t *testing.T) {
	env := newEnv(t, nil)
	const name = "js/experiment.js"
	want, err := static.FS.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	c := env.client()
	res := env.get(c, staticPrefix+name)
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(got) != string(want) {
		t.Fatalf("GET %s: %d, %d bytes, want 200 and the file's %d", name, res.StatusCode, len(got), len(want))
	}
	res = env.get(c, staticPrefix+name, "Range", "bytes=100-199")
	got, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusPartialContent || string(got) != string(want[100:200]) {
		t.Fatalf("GET %s bytes 100-199: %d, %q", name, res.StatusCode, got)
	}

	// In process, through the whole middleware stack, to a writer that
	// copies as net/http's response does (discardWriter: bench_test.go).
	h := env.Server.Handler()
	r := httptest.NewRequest("GET", staticPrefix+name, nil)
	w := &discardWriter{h: http.Header{}}
	serve := func() {
		w.reset()
		h.ServeHTTP(w, r)
	}
	serve()
	const n = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		serve()
	}
	runtime.ReadMemStats(&after)
	if w.status != 200 || w.n != len(want) {
		t.Fatalf("in process: %d, %d bytes, want 200 and %d", w.status, w.n, len(want))
	}
	per := (after.TotalAlloc - before.TotalAlloc) / n
	t.Logf("%s (%d bytes) through the middleware: %d bytes allocated a request", name, len(want), per)
	// 2.4 KB a request in a plain build. Under -race (make test) sync.Pool
	// drops a quarter of what is put back, so a copy buffer is made for
	// about one request in four: ~12 KB a request. A copy of the file and
	// a buffer each time is 61 KB and more.
	if per > 24<<10 {
		t.Errorf("serving the %d-byte %s allocated %d bytes a request, want under 24 KiB (no copy of the file, no copy buffer each time)", len(want), name, per)
	}
}
