package web

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/static"
)

const staticPrefix = static.Prefix

// staticHandler serves the embedded assets. A request carrying the asset's
// current content hash (?v=, as views.Asset writes it) may be cached
// forever; any other gets a short max-age and revalidates by ETag.
func (s *Server) staticHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, staticPrefix)
		hash := static.Hash(name)
		if hash == "" {
			s.NotFound(w, r)
			return
		}
		f, err := static.FS.Open(name)
		if err != nil {
			s.NotFound(w, r)
			return
		}
		defer f.Close()
		rs, ok := f.(io.ReadSeeker) // every embedded file is; a directory is not
		if !ok {
			s.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("ETag", `"`+hash+`"`)
		if r.URL.Query().Get("v") == hash {
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			h.Set("Cache-Control", "public, max-age=300")
		}
		h.Set("X-Content-Type-Options", "nosniff")
		// An embedded file seeks and reads in place: no copy of the asset
		// per request.
		serveFile(w, r, name, time.Time{}, rs)
	})
}

// favicon is GET /favicon.ico: browsers ask for it on every site.
func (s *Server) favicon(w http.ResponseWriter, r *http.Request) {
	f, err := static.FS.Open("favicon.ico")
	if err != nil {
		s.NotFound(w, r)
		return
	}
	defer f.Close()
	rs, ok := f.(io.ReadSeeker)
	if !ok {
		s.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "image/x-icon")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	serveFile(w, r, "favicon.ico", time.Time{}, rs)
}

// serveFile is http.ServeContent with a ReaderFrom on the response: the
// middleware's writers (chi's compressor) have none, so ServeContent's
// io.Copy would otherwise allocate a 32 KiB buffer for every file served.
func serveFile(w http.ResponseWriter, r *http.Request, name string, modtime time.Time, content io.ReadSeeker) {
	http.ServeContent(copyingWriter{w}, r, name, modtime, content)
}

// copyBufs are serveFile's copy buffers, net/http's size.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyingWriter adds ReadFrom, through a pooled buffer, to a ResponseWriter.
// ServeContent needs nothing else of it (no Flush, no Hijack).
type copyingWriter struct{ http.ResponseWriter }

func (w copyingWriter) ReadFrom(src io.Reader) (int64, error) {
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src) // net/http's own: sendfile, or its pooled buffer
	}
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	return io.CopyBuffer(w.ResponseWriter, src, *buf)
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (w copyingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
