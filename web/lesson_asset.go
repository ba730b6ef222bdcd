package web

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"

	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/web/page"
)

// lessonAsset is GET /lessons/{slug}/assets/*: an image or other file of
// the lesson folder that the lesson links to. lessons.OpenAsset decides
// what is servable (never quiz.yaml, never dot files).
func (s *Server) lessonAsset(w http.ResponseWriter, r *http.Request) {
	slug, name := chi.URLParam(r, "slug"), chi.URLParam(r, "*")
	c := s.course()
	if c.Lesson(slug) == nil {
		// A renamed lesson's old slug (lessons/aliases.go): its files
		// moved with it, as its page did.
		if to := c.AliasTarget(slug); to != "" {
			u := page.LessonHref(to) + "/assets/" + (&url.URL{Path: name}).EscapedPath()
			if r.URL.RawQuery != "" {
				u += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, u, http.StatusMovedPermanently)
			return
		}
	}
	s.serveAsset(w, r, c, slug, name)
}

// serveAsset answers with the file name of c's lesson slug, or 404.
func (s *Server) serveAsset(w http.ResponseWriter, r *http.Request, c *lessons.Course, slug, name string) {
	f, err := c.OpenAsset(slug, name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.NotFound(w, r)
			return
		}
		s.InternalError(w, r, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.IsDir() {
		s.NotFound(w, r)
		return
	}
	rs, ok := f.(io.ReadSeeker)
	if !ok {
		b, err := io.ReadAll(f)
		if err != nil {
			s.InternalError(w, r, err)
			return
		}
		rs = bytes.NewReader(b)
	}
	h := w.Header()
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("X-Content-Type-Options", "nosniff")
	if path.Ext(name) == ".svg" {
		// An SVG opened directly must not run script in our origin.
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	}
	// Embedded files have no modification time; ServeContent then skips
	// Last-Modified, which is what we want.
	serveFile(w, r, name, fi.ModTime(), rs)
}
