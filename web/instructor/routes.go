package instructor

import (
	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/web/page"
)

// Routes registers the whole instructor area on r, the learner server's
// router (see docs/architecture.md, "HTTP interface"), with a comment
// naming the handler file when its name does not say it.
func (s *Area) Routes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(page.WithLang)
		r.Get("/instructor/login", s.instructorLoginForm)
		r.Post("/instructor/login", s.instructorLogin)
		r.Post("/instructor/logout", s.instructorLogout)
		r.Get("/instructor/setup", s.linkForm(setupLink)) // account.go: the setup link and invitations, one mechanism
		r.Post("/instructor/setup", s.linkAccept(setupLink))
		r.Get("/instructor/invite", s.linkForm(inviteLink))
		r.Post("/instructor/invite", s.linkAccept(inviteLink))

		r.Group(func(r chi.Router) {
			r.Use(s.requireInstructor)
			r.Get("/instructor", s.instructorDashboard)
			r.Get("/instructor/export/progress.csv", s.exportProgress)
			r.Get("/instructor/export/attempts.csv", s.exportAttempts)
			r.Get("/instructor/export/runs.csv", s.exportRuns)
			// A TA reaches these, limited to their classes (roles.go).
			r.Get("/instructor/account", s.accountShow)
			r.Post("/instructor/account/password", s.accountPassword)
			r.Get("/instructor/classes", s.cohortsShow)
			r.Get("/instructor/gradebook", s.gradebookShow)
			r.Get("/instructor/answers", s.answerKey)
			r.Get("/instructor/export/gradebook.csv", s.exportGradebook)
			// learner_programs.go: one learner's program records and last submissions
			r.Get("/instructor/learners/{learner}/programs", s.learnerPrograms)
			r.Get("/instructor/classes/{id}/roster", s.rosterShow) // roster.go: rosters and claim codes
			r.Get("/instructor/classes/{id}/roster/codes.csv", s.rosterCodes)
			r.Get("/instructor/classes/{id}/graded", s.gradedShow) // graded_settings.go: graded mode per lesson
			// Instructors only: accounts, invitations, classes, rosters, drafts.
			r.Group(func(r chi.Router) {
				r.Use(s.instructorsOnly)
				r.Post("/instructor/account/invite", s.invitationCreate) // roles.go
				r.Get("/instructor/invitations", s.invitationsShow)
				r.Post("/instructor/invitations", s.invitationCreate)
				r.Post("/instructor/invitations/{id}/revoke", s.invitationRevoke)
				r.Get("/instructor/drafts", s.draftsIndex)                   // drafts.go: previews of _drafts/
				r.Get("/instructor/drafts/{slug}", s.cfg.Learners.DraftShow) // web/draft_preview.go: rendered by the learner pages
				r.Get("/instructor/drafts/{slug}/assets/*", s.cfg.Learners.DraftAsset)
				r.Post("/instructor/classes", s.cohortCreate)
				r.Post("/instructor/classes/{id}/archive", s.cohortArchive)
				r.Post("/instructor/classes/{id}/leaderboard", s.cohortBoard) // classes.go: hide the class's leaderboards
				r.Post("/instructor/classes/{id}/tas", s.cohortTA)
				r.Post("/instructor/classes/{id}/roster", s.rosterImport)
				r.Post("/instructor/classes/{id}/graded", s.gradedSet)
				r.Post("/instructor/classes/{id}/graded/zone", s.gradedZone)
				r.Post("/instructor/classes/{id}/graded/lti-resend", s.gradedResend)
				r.Post("/instructor/classes/{id}/roster/{seat}/code", s.rosterSeatAction(false))
				r.Post("/instructor/classes/{id}/roster/{seat}/remove", s.rosterSeatAction(true))
				r.Post("/instructor/classes/{id}/roster/members/remove", s.rosterRemoveMember)
				r.Post("/instructor/classes/{id}/roster/merge", s.rosterMerge)
				r.Post("/instructor/classes/{id}/roster/lti-sync", s.rosterLTISync)
				r.Get("/instructor/lti", s.ltiAdmin) // lti_admin.go: LMS platforms, the tool's URLs, scores not delivered
				r.Post("/instructor/lti", s.ltiPlatformAdd)
				r.Post("/instructor/lti/{id}/remove", s.ltiPlatformRemove)
			})
			// Any other instructor URL is guarded too (403/redirect before 404).
			r.HandleFunc("/instructor/*", s.NotFound)
		})
	})
}
