package web

import "github.com/go-chi/chi/v5"

// runRoutes are the experiment and run URLs (docs/architecture.md, "HTTP
// interface"). They need a learner and a language, like the pages.
func (s *Server) runRoutes(r chi.Router) {
	limit := s.limitRuns // run_ratelimit.go: per learner and per address, both submit routes
	r.Get("/api/experiments", s.experimentList)
	r.With(limit).Post("/api/runs", s.runCreate)
	r.Get("/api/runs/live", s.runLive) // run_live.go: the learner's queued or running run
	r.Get("/api/runs/{id}", s.runShow)
	r.Get("/api/runs/{id}/events", s.runEvents)
	r.Post("/api/runs/{id}/cancel", s.runCancel)
	r.Get("/api/runs/{id}/capture", s.runCapture)          // run_capture.go
	r.Get("/api/runs/{id}/capture.pcap", s.runCapturePcap) // run_capture.go
	r.Post("/api/runs/{id}/commands", s.runCommand)        // run_command.go: interactive runs
	r.Get("/runs", s.runList)
	r.With(limit).Post("/runs", s.runCreateForm)
	r.Get("/runs/{id}", s.runPage)
	r.Post("/runs/{id}/cancel", s.runCancelForm)
}
