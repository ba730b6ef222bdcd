package web

import (
	"bytes"
	"io/fs"
	"net/http"
	"strings"
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
		b, err := fs.ReadFile(static.FS, name)
		if err != nil {
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
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
	})
}

// favicon is GET /favicon.ico: browsers ask for it on every site.
func (s *Server) favicon(w http.ResponseWriter, r *http.Request) {
	b, err := fs.ReadFile(static.FS, "favicon.ico")
	if err != nil {
		s.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "image/x-icon")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	http.ServeContent(w, r, "favicon.ico", time.Time{}, bytes.NewReader(b))
}
