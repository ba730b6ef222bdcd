package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/rdmalab/rdmalab/web/page"
)

// everyResponse is the middleware every response of the lab passes, in
// order: the page benchmarks put their http.ServeContent baseline behind
// the same chain, so a ratio compares the page with serving its bytes from
// this server, not from a bare handler.
func (s *Server) everyResponse() []func(http.Handler) http.Handler {
	mw := []func(http.Handler) http.Handler{
		s.requestDeadline, // a request's body has one deadline, refused or not (body_limit.go)
		middleware.RequestID,
		s.securityHeaders,           // CSP, no framing, nosniff, referrer policy (security_headers.go)
		s.cfg.ClientAddr.Middleware, // the real client address, behind a trusted proxy too (web/page/client_addr.go)
		s.logRequests,
		s.recoverPanics,
		redirectTrailingSlash,   // /lessons/x/ → /lessons/x (trailing_slash.go)
		middleware.GetHead,      // HEAD is answered by the GET route (monitors, link checkers)
		s.crossOriginProtection, // every POST/PUT/DELETE: refuse cross-site browser requests
		s.limitBodies,           // every body read up front, at most page.MaxBody (body_limit.go)
	}
	if !s.cfg.NoCompress {
		mw = append(mw, compressor()) // gzip, deflate; never SSE (compress.go)
	}
	return mw
}

// routes is the whole URL space of the lab (see docs/architecture.md, "HTTP
// interface"): every route is registered here, with a comment naming the
// handler file when its name does not say it. Handlers live one user action
// per file.
func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(s.everyResponse()...)

	r.Get("/healthz", s.healthz)
	if s.cfg.Metrics != nil {
		r.Get("/metrics", s.cfg.Metrics.ServeHTTP) // internal/metrics: token, or a direct loopback client
	}
	r.Get("/favicon.ico", s.favicon) // static.go
	r.Handle(staticPrefix+"*", s.staticHandler())
	r.Get("/api/reload", s.reloadEvents) // live_reload.go: the live-reload stream

	// LTI 1.3 (lti_*.go): the tool's endpoints an LMS calls. Login and
	// launch are cross-site by design (cross_origin.go lets them through;
	// the launch is trusted only once its signed id_token verifies).
	r.Group(func(r chi.Router) {
		r.Use(page.WithLang)
		r.Get("/lti/jwks", s.ltiJWKS)
		r.Get("/lti/login", s.ltiLogin)
		r.Post("/lti/login", s.ltiLogin)
		r.Post("/lti/launch", s.ltiLaunch)
		r.Get("/lti/deep-link/{token}", s.ltiDeepLinkShow) // lti_deeplink.go
		r.Post("/lti/deep-link/{token}", s.ltiDeepLinkPost)
	})

	// The instructor area (web/instructor: routes.go), mounted here so every
	// middleware above applies to it alike.
	s.instructors.Routes(r)

	r.Group(func(r chi.Router) {
		r.Use(s.withLearner)
		r.Use(page.WithLang)
		r.Use(s.guardWrites) // per-address write and new-learner limits (write_guard.go)

		r.Get("/", s.home)
		r.Get("/lessons/{slug}", s.lessonShow)
		r.Get("/lessons/{slug}/assets/*", s.lessonAsset)
		r.Post("/lessons/{slug}/complete", s.lessonComplete)
		r.Post("/api/quiz/*", s.quizAttempt) // POST /api/quiz/{questionID...}/attempts (quiz_attempt.go)

		r.Get("/me", s.meShow) // learner_name.go: a learner's display name
		r.Post("/me", s.meUpdate)
		r.Post("/me/signout", s.meSignOut)
		r.Get("/join", s.joinShow) // join.go: joining a class
		r.Get("/join/{code}", s.joinShow)
		r.Post("/join", s.joinPost)

		// Experiments and runs; both submit routes are rate-limited per learner
		// and per address (run_ratelimit.go).
		r.Get("/api/experiments", s.experimentList)
		r.With(s.limitRuns).Post("/api/runs", s.runCreate)
		r.Get("/api/runs/live", s.runLive) // the learner's queued or running run
		r.Get("/api/runs/{id}", s.runShow)
		r.Get("/api/runs/{id}/events", s.runEvents)
		r.Post("/api/runs/{id}/cancel", s.runCancel)
		r.Get("/api/runs/{id}/capture", s.runCapture)          // run_capture.go
		r.Get("/api/runs/{id}/capture.pcap", s.runCapturePcap) // run_capture.go
		r.Post("/api/runs/{id}/commands", s.runCommand)        // run_command.go: interactive runs
		r.Get("/runs", s.runList)
		r.With(s.limitRuns).Post("/runs", s.runCreateForm)
		r.Get("/runs/{id}", s.runPage)
		r.Post("/runs/{id}/cancel", s.runCancelForm)

		r.Get("/api/lab", s.labJSON) // lab_show.go: the Soft-RoCE lab state
		r.Get("/lab", s.labPage)
		r.Get("/api/terminal", s.terminal)             // terminal.go: a learner's own shell (WebSocket)
		r.Post("/api/terminal/reset", s.terminalReset) // terminal.go: "reset my machine"
		// task_check.go: Check on a lesson's :::task, run in the learner's own terminal guest
		r.Post("/api/lessons/{slug}/tasks/{id}/check", s.taskCheck)
		// program.go: a lesson's :::program, the learner's code saved and run in their own guest
		r.Get("/api/lessons/{slug}/programs/{id}", s.programShow)
		r.Put("/api/lessons/{slug}/programs/{id}/code", s.programSave)
		r.Post("/api/lessons/{slug}/programs/{id}/run", s.programRun)
		r.Post("/api/lessons/{slug}/programs/{id}/solution", s.programSolution)
		r.Post("/api/lessons/{slug}/programs/{id}/hint", s.programHint)
		r.Post("/api/lessons/{slug}/programs/{id}/reset", s.programReset)
		// leaderboard.go: a program's opt-in class leaderboard
		r.Get("/lessons/{slug}/programs/{id}/leaderboard", s.boardShow)
		r.Post("/lessons/{slug}/programs/{id}/leaderboard", s.boardPost)
	})
	// Unknown paths still get a learner and a language: the 404 page is a
	// real page in the learner's language.
	r.NotFound(s.withLearner(page.WithLang(http.HandlerFunc(s.NotFound))).ServeHTTP)
	r.MethodNotAllowed(s.withLearner(page.WithLang(http.HandlerFunc(s.MethodNotAllowed))).ServeHTTP)
	return r
}
