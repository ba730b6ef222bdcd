package page

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/rdmalab/rdmalab/web/views"
)

// Code classifies a user-facing error; it decides the HTTP status and is
// the "code" of a JSON error body, so clients and tests branch on codes,
// never on message text.
type Code string

// Error codes. Anything that is not an *Error is CodeInternal.
const (
	CodeBadRequest       Code = "bad_request"        // malformed request (JSON, form)
	CodeInvalid          Code = "invalid"            // well-formed but not acceptable (e.g. a param out of range)
	CodeNotFound         Code = "not_found"          // no such lesson, question, run…
	CodeMethodNotAllowed Code = "method_not_allowed" // wrong verb for the path
	CodeForbidden        Code = "forbidden"          // e.g. a cross-site form post
	CodeConflict         Code = "conflict"           // the learner already has an active run…
	CodeBusy             Code = "busy"               // queue full: try again later
	CodeUnavailable      Code = "unavailable"        // a feature this machine cannot run
	CodeInternal         Code = "internal"           // a bug or an infrastructure failure
	CodeTooLarge         Code = "too_large"          // a body beyond the server's limit (web's body_limit.go)
	CodeTimeout          Code = "timeout"            // a body that did not arrive in time (web's body_limit.go)
	CodeRateLimited      Code = "rate_limited"       // too many runs too fast (web's run_ratelimit.go)
)

// codeStatus is the HTTP status of every Code.
var codeStatus = map[Code]int{
	CodeBadRequest:       http.StatusBadRequest,
	CodeInvalid:          http.StatusUnprocessableEntity,
	CodeNotFound:         http.StatusNotFound,
	CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	CodeForbidden:        http.StatusForbidden,
	CodeConflict:         http.StatusConflict,
	CodeBusy:             http.StatusTooManyRequests,
	CodeUnavailable:      http.StatusServiceUnavailable,
	CodeInternal:         http.StatusInternalServerError,
	CodeTooLarge:         http.StatusRequestEntityTooLarge,
	CodeTimeout:          http.StatusRequestTimeout,
	CodeRateLimited:      http.StatusTooManyRequests,
}

// Status is the HTTP status for c (500 for an unknown code).
func (c Code) Status() int {
	if s, ok := codeStatus[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Error is an error a learner may see: a code and a message they can act on.
// Err, if set, is the cause (logged, never shown).
type Error struct {
	Code    Code
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return string(e.Code) + ": " + e.Message + ": " + e.Err.Error()
	}
	return string(e.Code) + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf is a shorthand for an *Error without a cause.
func Errorf(code Code, message string) *Error { return &Error{Code: code, Message: message} }

// ErrorBody is the JSON form of an error: {"error":{"code":…,"message":…}}.
type ErrorBody struct {
	Error struct {
		Code    Code   `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// WriteJSON writes v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":{"code":"internal","message":"encoding the response failed"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// WriteError answers an /api/* request with the JSON error for err. Errors
// that are not *Error are logged and shown as a generic internal error, so
// internals never leak to the browser.
func (s *Base) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	var e *Error
	if !errors.As(err, &e) {
		if e = s.StoreUnavailable(w, r, err); e == nil { // store_errors.go: locked or full database → 503
			e = &Error{Code: CodeInternal, Message: "internal error; see the server log", Err: err}
		}
	}
	if e.Code == CodeInternal {
		s.Log.Error("request failed", "req", middleware.GetReqID(r.Context()), "path", r.URL.Path, "err", err)
	}
	var body ErrorBody
	body.Error.Code = e.Code
	body.Error.Message = e.Message
	WriteJSON(w, e.Code.Status(), body)
}

// IsAPI reports whether the request is for the JSON API, which gets JSON
// errors instead of HTML pages.
func IsAPI(r *http.Request) bool {
	return r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/")
}

// NotFound is the 404 for every unknown path and unknown lesson.
func (s *Base) NotFound(w http.ResponseWriter, r *http.Request) {
	if IsAPI(r) {
		s.WriteError(w, r, Errorf(CodeNotFound, "no such resource: "+r.URL.Path))
		return
	}
	s.ErrorPage(w, r, http.StatusNotFound)
}

// MethodNotAllowed is the 405 for a path that exists with other methods.
func (s *Base) MethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	if IsAPI(r) {
		s.WriteError(w, r, Errorf(CodeMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path))
		return
	}
	s.ErrorPage(w, r, http.StatusMethodNotAllowed)
}

// InternalError logs err and answers 500 (JSON for the API, a page otherwise).
func (s *Base) InternalError(w http.ResponseWriter, r *http.Request, err error) {
	if IsAPI(r) {
		s.WriteError(w, r, err)
		return
	}
	s.PageError(w, r, err)
}

// PageError answers a failed request with a page, whatever its path (the
// no-JavaScript quiz form posts to /api/quiz/… and must still get a page):
// a database that cannot take the write now gets the "busy, nothing was
// saved" page (503, Retry-After); anything else is logged and gets the
// generic 500 page.
func (s *Base) PageError(w http.ResponseWriter, r *http.Request, err error) {
	if e := s.StoreUnavailable(w, r, err); e != nil {
		t := s.Strings.Tr(LangOf(r))
		s.Render(w, r, e.Code.Status(), views.ErrorView(views.ErrorPage{
			Chrome: s.Chrome(r, t("error.503.title")), Status: e.Code.Status(), Heading: t("error.503.title"), Message: e.Message,
		}))
		return
	}
	s.Log.Error("request failed", "req", middleware.GetReqID(r.Context()), "path", r.URL.Path, "err", err)
	s.ErrorPage(w, r, http.StatusInternalServerError)
}
