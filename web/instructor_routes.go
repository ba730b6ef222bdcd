package web

import "github.com/go-chi/chi/v5"

// instructorRoutes adds the instructor area, the live-reload stream and the
// learner's display-name page (routes.go calls it once).
func (s *Server) instructorRoutes(r chi.Router) {
	r.Get("/api/reload", s.reloadEvents)

	r.Group(func(r chi.Router) {
		r.Use(s.withLang)
		r.Get("/instructor/login", s.instructorLoginForm)
		r.Post("/instructor/login", s.instructorLogin)
		r.Post("/instructor/logout", s.instructorLogout)
		r.Get("/instructor/setup", s.instructorSetupForm)
		r.Post("/instructor/setup", s.instructorSetup)
		r.Get("/instructor/invite", s.inviteForm)
		r.Post("/instructor/invite", s.inviteAccept)

		r.Group(func(r chi.Router) {
			r.Use(s.requireInstructor)
			r.Get("/instructor", s.instructorDashboard)
			r.Get("/instructor/export/progress.csv", s.exportProgress)
			r.Get("/instructor/export/attempts.csv", s.exportAttempts)
			r.Get("/instructor/export/runs.csv", s.exportRuns)
			r.Get("/instructor/account", s.accountShow)
			r.Post("/instructor/account/invite", s.accountInvite)
			r.Post("/instructor/account/password", s.accountPassword)
			r.Get("/instructor/classes", s.cohortsShow)
			r.Get("/instructor/gradebook", s.gradebookShow)
			r.Get("/instructor/answers", s.answerKey)
			r.Get("/instructor/drafts", s.draftsIndex)                // drafts.go
			r.Get("/instructor/drafts/{slug}", s.draftShow)           // drafts.go
			r.Get("/instructor/drafts/{slug}/assets/*", s.draftAsset) // drafts.go
			r.Get("/instructor/export/gradebook.csv", s.exportGradebook)
			r.Post("/instructor/classes", s.cohortCreate)
			r.Post("/instructor/classes/{id}/archive", s.cohortArchive)
			// Any other instructor URL is guarded too (403/redirect before 404).
			r.HandleFunc("/instructor/*", s.notFound)
		})
	})

	r.Group(func(r chi.Router) {
		r.Use(s.withLearner)
		r.Use(s.withLang)
		r.Use(s.guardWrites)
		r.Get("/me", s.meShow)
		r.Post("/me", s.meUpdate)
		r.Get("/join", s.joinShow)
		r.Get("/join/{code}", s.joinShow)
		r.Post("/join", s.joinPost)
	})
}
