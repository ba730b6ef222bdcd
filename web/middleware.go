package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
)

type ctxKey int

const learnerKey ctxKey = iota

// learnerCookie holds the anonymous learner id.
const learnerCookie = "lab_learner"

// learnerCookieAge keeps a learner's progress for a year of inactivity.
const learnerCookieAge = 365 * 24 * time.Hour

// withLearner gives every request a learner id: the one in the lab_learner
// cookie, or a new random one that is set as the cookie. The learner row is
// only written at the learner's first write (see store.EnsureLearner).
func (s *Server) withLearner(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := ""
		if c, err := r.Cookie(learnerCookie); err == nil {
			id = s.cookieLearner(c.Value) // learner_sign.go: "" unless valid (and signed, with a key)
		}
		if id == "" {
			id = store.NewLearnerID()
			s.setLearnerCookie(w, r, id)
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), learnerKey, id)))
	})
}

// setLearnerCookie makes id the browser's learner (a new visitor, a
// claimed roster seat, a sign-out).
func (s *Server) setLearnerCookie(w http.ResponseWriter, r *http.Request, id string) {
	http.SetCookie(w, &http.Cookie{
		Name:     learnerCookie,
		Value:    s.learnerCookieValue(id),
		Path:     "/",
		MaxAge:   int(learnerCookieAge / time.Second),
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
		Secure:   page.SecureRequest(r), // also behind a TLS-terminating proxy (X-Forwarded-Proto)
	})
}

// learnerID is the request's learner (set by withLearner).
func learnerID(r *http.Request) string {
	id, _ := r.Context().Value(learnerKey).(string)
	return id
}

// logRequests logs one line per request with slog, bounded
// (request_log.go).
func (s *Server) logRequests(next http.Handler) http.Handler {
	rl := newRequestLog()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		stream := s.observeStart(r) // metrics: observe.go
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		s.observeEnd(r, stream, status, time.Since(start))
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		s.logRequest(rl, r, level, status, ww.BytesWritten(), time.Since(start))
	})
}

// recoverPanics turns a handler panic into a logged 500 instead of a dropped
// connection. http.ErrAbortHandler is re-raised: it is net/http's way to
// abort a response on purpose.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic", "req", middleware.GetReqID(r.Context()), "path", r.URL.Path,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if r.Header.Get("Connection") != "Upgrade" {
				s.InternalError(w, r, fmt.Errorf("panic: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}
