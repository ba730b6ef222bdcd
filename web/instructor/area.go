// Package instructor is the instructor area of the lab: accounts and
// sessions (one invitation mechanism for the first account and every
// later one), classes and their TAs, rosters, the dashboard and gradebook,
// graded settings, CSV exports, the answer key, draft previews and the
// LTI platforms page. The learner's
// server (package web) mounts it (Routes) on its router, so every
// middleware — language, limits, cross-origin refusal, security headers —
// applies alike; the area never imports the learner side, and reaches it
// only through LearnerSide.
package instructor

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/lti"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// Config is what the area needs; the learner's server fills it from its
// own configuration.
type Config struct {
	// Base renders pages: the server's, so the layout, error pages and
	// the one merged string set (Tables is in it) are the same as the
	// learner's pages.
	Base page.Base
	// Course returns the current content load (called on every request).
	Course func() *lessons.Course
	Store  *store.DB
	Logger *slog.Logger
	// Experiments names the experiments the dashboard lists (nil: ids).
	Experiments *sandbox.Registry
	// Live is the watched course of `serve --lessons DIR` (nil otherwise):
	// the dashboard shows its errors.
	Live *lessons.Live
	// LTI is the lab's LTI 1.3 tool (nil: off); LTIBase is its base URL for
	// a request, and PlatformsChanged is called after a platform is added
	// or removed (the server's framing origins follow).
	LTI              *lti.Tool
	LTIBase          func(*http.Request) string
	PlatformsChanged func()
	// Learners is what the area asks of the learner side.
	Learners LearnerSide
	// Now is the time graded dates are judged against (nil: time.Now).
	Now func() time.Time
}

// LearnerSide is what the instructor area needs from the learner's
// pages: who the browser is as a learner, and a draft lesson rendered as
// a lesson page.
type LearnerSide interface {
	// CookieLearner is the learner id of r's learner cookie when it is
	// valid (signed, when the server signs them), else "".
	CookieLearner(r *http.Request) string
	// HasLearnerCookie reports whether r carries what looks like a
	// learner's cookie (signed or not): the browser has been a learner here.
	HasLearnerCookie(r *http.Request) bool
	// LearnerID is the learner of a request that went through the
	// learner middleware ("" elsewhere).
	LearnerID(r *http.Request) string
	// DraftShow and DraftAsset serve /instructor/drafts/{slug} and its
	// assets: a _drafts/ lesson rendered like a lesson page.
	DraftShow(w http.ResponseWriter, r *http.Request)
	DraftAsset(w http.ResponseWriter, r *http.Request)
	// RescoreLTI queues again the LMS scores of the class's learners on
	// lesson ("" every lesson) and says how many learners it looked at: a
	// graded setting changed, or the instructor asked.
	RescoreLTI(ctx context.Context, cohort int64, lesson string) (int, error)
}

// Area serves the instructor pages. It is safe for concurrent use.
type Area struct {
	page.Base
	cfg Config
	log *slog.Logger
}

// New checks cfg and returns the area.
func New(cfg Config) *Area {
	log := cfg.Logger
	if log == nil {
		log = cfg.Base.Log
	}
	return &Area{Base: cfg.Base, cfg: cfg, log: log}
}

// Tables are the area's UI string tables, for the server's one merged set.
var Tables = []page.Table{
	accountStrings, answerKeyStrings, cohortStrings, draftStrings,
	gradebookStrings, instructorStrings, rosterStrings, roleStrings,
	learnerProgramsStrings,
}

// course is the current content load.
func (s *Area) course() *lessons.Course { return s.cfg.Course() }

// now is the time graded mode judges by (Config.Now).
func (s *Area) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}

// tr returns the translator for lang.
func (s *Area) tr(lang string) views.Tr { return s.Strings.Tr(lang) }

// trf formats the string key with args.
func (s *Area) trf(lang, key string, args ...any) string { return s.Strings.Trf(lang, key, args...) }

// ctxKey keys what the area puts in a request's context.
type ctxKey int
