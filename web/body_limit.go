package web

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/rdmalab/rdmalab/web/page"
)

// page.MaxBody bounds the body of every request to the lab: the one body
// limit (handlers set none of their own; they read a body limitBodies has
// already read). The largest real ones (a run's params, an order
// question's answer, a login form) are a few hundred bytes.

// MaxHeaderBytes is what the lab's http.Server takes of a request's
// header block (net/http's default is 1 MiB, and it adds 4 KiB of slack):
// the largest real ones — the learner's cookie, an instructor's session,
// a few LTI state cookies, Accept-Language — are a few KiB. A larger one
// is answered 431 without reaching a handler (issue 43 fall 6: 1 MiB
// headers on every request of a flood).
const MaxHeaderBytes = 32 << 10

// A request body beyond page.MaxBody is page.CodeTooLarge (413); a body that
// did not arrive within Limits.BodyTimeout page.CodeTimeout (408).

var bodyLimitStrings = page.Table{
	"zh": {
		"error.408.title":   "请求超时",
		"error.408.message": "提交的内容没有及时传完，没有执行：请重试。",
		"error.413.title":   "请求太大",
		"error.413.message": "提交的内容超过了 " + strconv.Itoa(page.MaxBody>>10) + " KiB 的上限，没有执行。",
	},
	"en": {
		"error.408.title":   "Request timed out",
		"error.408.message": "What was sent did not arrive in time and was not acted on: please try again.",
		"error.413.title":   "Request too large",
		"error.413.message": "What was sent is larger than the " + strconv.Itoa(page.MaxBody>>10) + " KiB limit and was not acted on.",
	},
}

// limitBodies reads the body of every request that has one, up to
// page.MaxBody, before the handler runs, and refuses a larger one with 413. A
// handler therefore never sees a half-read body: without this, a form
// whose body failed to parse looked like an empty form to
// r.PostFormValue (and, say, cleared a learner's display name), and a
// handler that ignores its body acted on a 12 MB request. A declared
// Content-Length over the limit is refused without reading.
func (s *Server) limitBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > page.MaxBody {
			s.tooLarge(w, r)
			return
		}
		// The whole body must arrive within Limits.BodyTimeout: the
		// deadline requestDeadline set when the request came in; once the
		// body is in, the handler may take its time.
		rc := http.NewResponseController(w)
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, page.MaxBody))
		if err != nil {
			// Every error path closes the connection and keeps a read
			// deadline, one already passed: net/http reads what is left of
			// a body (up to 256 KiB) after the handler, and with the
			// deadline lifted a client trickling its body held the
			// connection for hours after its 408 (issue 43 fall 5).
			_ = rc.SetReadDeadline(time.Now())
			w.Header().Set("Connection", "close")
			if _, big := errors.AsType[*http.MaxBytesError](err); big {
				s.tooLarge(w, r)
				return
			}
			// The client went away, was too slow, or sent a broken chunked body.
			if errors.Is(err, os.ErrDeadlineExceeded) {
				s.log.Warn("request body too slow", "method", r.Method, "path", r.URL.Path, "addr", page.ClientIP(r))
				// net/http cancels the request's context on a read error; the
				// answer is still worth writing.
				r = r.WithContext(context.WithoutCancel(r.Context()))
				lang, _ := page.ResolveLang(r)
				s.writeBodyError(w, r, &page.Error{Code: page.CodeTimeout, Message: tr(lang)("error.408.message"), Err: err})
				return
			}
			s.writeBodyError(w, r, &page.Error{Code: page.CodeBadRequest, Message: "the request body could not be read", Err: err})
			return
		}
		if s.cfg.Limits.BodyTimeout > 0 {
			_ = rc.SetReadDeadline(time.Time{})
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// requestDeadline gives every request that carries a body one deadline
// for reading all of it, Limits.BodyTimeout from its arrival, set before
// anything else looks at the request. A client that trickles its body (a
// byte every few seconds) would otherwise hold the connection and its
// buffers for as long as it likes — also when the request is refused
// before its body is read (a cross-origin 403): net/http then reads what is
// left of the body before it reuses the connection, and that read had no
// deadline (70 s and more with a byte every 2 s). limitBodies lifts the
// deadline once the body is in, and only then.
func (s *Server) requestDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Limits.BodyTimeout > 0 && r.Body != nil && r.Body != http.NoBody {
			// unsupported writers (tests' recorders): no deadline
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.Limits.BodyTimeout))
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) tooLarge(w http.ResponseWriter, r *http.Request) {
	s.log.Warn("request body too large", "method", r.Method, "path", r.URL.Path, "content_length", r.ContentLength)
	// The rest of the body is not worth reading: close the connection.
	w.Header().Set("Connection", "close")
	lang, _ := page.ResolveLang(r)
	s.writeBodyError(w, r, &page.Error{Code: page.CodeTooLarge, Message: tr(lang)("error.413.message")})
}

// writeBodyError answers in JSON on the API and with an error page
// elsewhere, in the request's language (this runs before withLang).
func (s *Server) writeBodyError(w http.ResponseWriter, r *http.Request, e *page.Error) {
	if page.IsAPI(r) {
		s.WriteError(w, r, e)
		return
	}
	lang, _ := page.ResolveLang(r)
	r = page.SetLang(r, lang)
	s.ErrorPage(w, r, e.Code.Status())
}
