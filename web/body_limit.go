package web

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
)

// maxBody bounds the body of every request to the lab. The largest real
// ones (a run's params, an order question's answer, a login form) are a
// few hundred bytes; handlers may set lower limits of their own.
const maxBody = 64 << 10

// CodeTooLarge is a request body beyond maxBody (413).
const CodeTooLarge Code = "too_large"

func init() {
	codeStatus[CodeTooLarge] = http.StatusRequestEntityTooLarge
	addStrings("zh", map[string]string{
		"error.413.title":   "请求太大",
		"error.413.message": "提交的内容超过了 " + strconv.Itoa(maxBody>>10) + " KiB 的上限，没有执行。",
	})
	addStrings("en", map[string]string{
		"error.413.title":   "Request too large",
		"error.413.message": "What was sent is larger than the " + strconv.Itoa(maxBody>>10) + " KiB limit and was not acted on.",
	})
}

// limitBodies reads the body of every request that has one, up to
// maxBody, before the handler runs, and refuses a larger one with 413. A
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
		if r.ContentLength > maxBody {
			s.tooLarge(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			if _, big := errors.AsType[*http.MaxBytesError](err); big {
				s.tooLarge(w, r)
				return
			}
			// The client went away or sent a broken chunked body.
			s.writeBodyError(w, r, &Error{Code: CodeBadRequest, Message: "the request body could not be read", Err: err})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

func (s *Server) tooLarge(w http.ResponseWriter, r *http.Request) {
	s.log.Warn("request body too large", "method", r.Method, "path", r.URL.Path, "content_length", r.ContentLength)
	// The rest of the body is not worth reading: close the connection.
	w.Header().Set("Connection", "close")
	lang, _ := resolveLang(r)
	s.writeBodyError(w, r, &Error{Code: CodeTooLarge, Message: tr(lang)("error.413.message")})
}

// writeBodyError answers in JSON on the API and with an error page
// elsewhere, in the request's language (this runs before withLang).
func (s *Server) writeBodyError(w http.ResponseWriter, r *http.Request, e *Error) {
	if isAPI(r) {
		s.writeError(w, r, e)
		return
	}
	lang, _ := resolveLang(r)
	r = r.WithContext(context.WithValue(r.Context(), langKey, lang))
	s.errorPage(w, r, e.Code.Status())
}
