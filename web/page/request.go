package page

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/web/views"
)

// MaxBody is the one limit on a request body, for every route (web's
// limitBodies reads each body up front; a roster upload is held to it too).
const MaxBody = 64 << 10

// SecureRequest reports whether the client reached us over TLS, directly or
// through a TLS-terminating proxy, so cookies get the Secure flag. A spoofed
// header only makes the spoofer's own cookie stricter.
func SecureRequest(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// BaseURL is the lab's address as the browser reached it.
func BaseURL(r *http.Request) string {
	scheme := "http"
	if SecureRequest(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// lessonHref is the URL of a lesson page.
func LessonHref(slug string) string { return "/lessons/" + slug }

// RetryAfter sets Retry-After to d rounded up to whole seconds (at least 1)
// and returns the seconds.
func RetryAfter(w http.ResponseWriter, d time.Duration) int {
	secs := max(1, int(math.Ceil(d.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	return secs
}

// ParseForm parses a form post and answers 400 when it is malformed: a
// body that fails to parse must not look like an empty form (which would,
// say, clear a display name).
func (s *Base) ParseForm(w http.ResponseWriter, r *http.Request) bool {
	if err := r.ParseForm(); err != nil {
		s.Log.Warn("malformed form", "path", r.URL.Path, "err", err)
		s.ErrorPage(w, r, http.StatusBadRequest)
		return false
	}
	return true
}

// Refused shows why a form post was refused (a run that did not start, a
// class or an invitation the instructor area could not make): err's
// message on an error page with its status.
func (s *Base) Refused(w http.ResponseWriter, r *http.Request, err error) {
	var e *Error
	if !errors.As(err, &e) {
		s.InternalError(w, r, err)
		return
	}
	t := s.Strings.Tr(LangOf(r))
	s.Render(w, r, e.Code.Status(), views.ErrorView(views.ErrorPage{
		Chrome: s.Chrome(r, t("run.refused")), Status: e.Code.Status(), Heading: t("run.refused"), Message: e.Message,
	}))
}
