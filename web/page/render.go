// Package page is the page base both audiences of the lab share — the
// learner's pages (package web) and the instructor area (web/instructor):
// rendering a templ view, the layout's chrome, the error pages and the
// JSON error convention of /api/*, the UI string tables and their
// translators, the request's language and client address.
package page

import (
	"bytes"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/a-h/templ"

	"github.com/rdmalab/rdmalab/web/views"
)

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuf keeps one huge page from pinning its buffer in the pool.
const maxPooledBuf = 1 << 20

// Buffer is an empty pooled buffer to render a page into; PutBuffer gives
// it back.
func Buffer() *bytes.Buffer {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	return buf
}

// PutBuffer returns buf to the pool (unless one huge page grew it).
func PutBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledBuf {
		bufPool.Put(buf)
	}
}

// Base renders the pages of one audience: its logger, its merged UI
// strings, and whether a watched course asks pages to reload live.
type Base struct {
	Log     *slog.Logger
	Strings *Strings
	// Live: the course is watched (serve --lessons DIR); every page loads
	// js/reload.js to follow its changes.
	Live bool
}

// Render writes c as an HTML page with status. The page is rendered into a
// buffer first so a failing component yields a clean 500 instead of half a
// page, and so the response carries a Content-Length.
func (s *Base) Render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	buf := Buffer()
	defer PutBuffer(buf)
	if err := c.Render(r.Context(), buf); err != nil {
		if status == http.StatusInternalServerError {
			// Rendering the error page itself failed: plain text is all that is left.
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		s.InternalError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	// Pages show the learner's own progress: never share them between
	// learners. A stricter policy set before (instructor pages: no-store)
	// is kept.
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "private, no-cache")
	}
	h.Set("Vary", "Cookie, Accept-Language")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(buf.Bytes())
	}
}

// Chrome is the layout data for a page in the request's language.
func (s *Base) Chrome(r *http.Request, title string) views.Chrome {
	return s.ChromeFor(LangOf(r), r.URL.EscapedPath(), title)
}

// ChromeFor is the layout data for the page at path (already escaped) in lang.
func (s *Base) ChromeFor(lang, path, title string) views.Chrome {
	links := make([]views.LangLink, len(langNames))
	for i, l := range langNames {
		links[i] = views.LangLink{Code: l.Code, Label: l.Label, Href: path + "?lang=" + l.Code, Current: l.Code == lang}
	}
	c := views.Chrome{Lang: lang, T: s.Strings.Tr(lang), Title: title, Langs: links}
	if s.Live {
		c.Scripts = append(c.Scripts, "js/reload.js") // live reload of watched lessons
	}
	return c
}

// ErrorPage renders the error page of status in the learner's language
// (the 500 page for a status without words of its own).
func (s *Base) ErrorPage(w http.ResponseWriter, r *http.Request, status int) {
	lang := LangOf(r)
	t := s.Strings.Tr(lang)
	key := "error." + strconv.Itoa(status)
	if !s.Strings.Has(lang, key+".title") {
		key = "error.500"
	}
	c := s.Chrome(r, t(key+".title"))
	s.Render(w, r, status, views.ErrorView(views.ErrorPage{
		Chrome: c, Status: status, Heading: t(key + ".title"), Message: t(key + ".message"),
	}))
}
