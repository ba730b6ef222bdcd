package web

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"

	"github.com/a-h/templ"

	"github.com/rdmalab/rdmalab/web/views"
)

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuf keeps one huge page from pinning its buffer in the pool.
const maxPooledBuf = 1 << 20

// render writes c as an HTML page with status. The page is rendered into a
// buffer first so a failing component yields a clean 500 instead of half a
// page, and so the response carries a Content-Length.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= maxPooledBuf {
			bufPool.Put(buf)
		}
	}()
	if err := c.Render(r.Context(), buf); err != nil {
		if status == http.StatusInternalServerError {
			// Rendering the error page itself failed: plain text is all that is left.
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		s.internalError(w, r, err)
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

// chrome is the layout data for a page in the request's language.
func (s *Server) chrome(r *http.Request, title string) views.Chrome {
	return s.chromeFor(langOf(r), r.URL.EscapedPath(), title)
}

// chromeFor is the layout data for the page at path (already escaped) in lang.
func (s *Server) chromeFor(lang, path, title string) views.Chrome {
	links := make([]views.LangLink, len(langNames))
	for i, l := range langNames {
		links[i] = views.LangLink{Code: l.Code, Label: l.Label, Href: path + "?lang=" + l.Code, Current: l.Code == lang}
	}
	c := views.Chrome{Lang: lang, T: tr(lang), Title: title, Langs: links}
	if s.cfg.Live != nil {
		c.Scripts = append(c.Scripts, "js/reload.js") // live reload of watched lessons
	}
	return c
}

// errorPage renders the 404/405/500 page in the learner's language.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, status int) {
	lang := langOf(r)
	t := tr(lang)
	key := "error." + strconv.Itoa(status)
	if _, ok := uiStrings[lang][key+".title"]; !ok {
		key = "error.500"
	}
	c := s.chrome(r, t(key+".title"))
	s.render(w, r, status, views.ErrorView(views.ErrorPage{
		Chrome: c, Status: status, Heading: t(key + ".title"), Message: t(key + ".message"),
	}))
}
