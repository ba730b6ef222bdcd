package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// routes is the whole URL space of the lab (see docs/architecture.md, "HTTP
// interface"). Features add their routes here, one handler file each.
func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.RequestID)
	r.Use(securityHeaders)  // CSP, no framing, nosniff, referrer policy (security_headers.go)
	r.Use(s.withClientAddr) // the real client address, behind a trusted proxy too (client_addr.go)
	r.Use(s.logRequests)
	r.Use(s.recoverPanics)
	r.Use(middleware.GetHead)      // HEAD is answered by the GET route (monitors, link checkers)
	r.Use(s.crossOriginProtection) // every POST/PUT/DELETE: refuse cross-site browser requests
	r.Use(s.limitBodies)           // every body read up front, at most maxBody (body_limit.go)
	if !s.cfg.NoCompress {
		// text/event-stream is deliberately absent: SSE must not be buffered.
		r.Use(middleware.Compress(5, "text/html", "text/css", "text/plain", "text/javascript",
			"application/javascript", "application/json", "image/svg+xml"))
	}

	r.Get("/healthz", s.healthz)
	r.Get("/favicon.ico", s.favicon)
	r.Handle(staticPrefix+"*", s.staticHandler())
	s.instructorRoutes(r) // /instructor/*, /api/reload, /me

	r.Group(func(r chi.Router) {
		r.Use(s.withLearner)
		r.Use(s.withLang)
		r.Use(s.guardWrites) // per-address write and new-learner limits (write_guard.go)

		r.Get("/", s.home)
		r.Get("/lessons/{slug}", s.lessonShow)
		r.Get("/lessons/{slug}/assets/*", s.lessonAsset)
		r.Post("/lessons/{slug}/complete", s.lessonComplete)
		s.runRoutes(r)
		s.labRoutes(r)
		s.terminalRoutes(r)                  // GET /api/terminal, a learner's own shell (terminal.go)
		s.taskRoutes(r)                      // POST /api/lessons/{slug}/tasks/{id}/check (task_check.go)
		r.Post("/api/quiz/*", s.quizAttempt) // POST /api/quiz/{questionID...}/attempts
	})
	// Unknown paths still get a learner and a language: the 404 page is a
	// real page in the learner's language.
	r.NotFound(s.withLearner(s.withLang(http.HandlerFunc(s.notFound))).ServeHTTP)
	r.MethodNotAllowed(s.withLearner(s.withLang(http.HandlerFunc(s.methodNotAllowed))).ServeHTTP)
	return r
}
