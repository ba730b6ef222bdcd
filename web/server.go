// Package web is rdmalab's HTTP interface: the chi router, middleware
// (request id, logging, recovery, gzip, learner cookie, language), one file
// per user action, and the JSON error convention of /api/*.
package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/instructor"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/runhub"
)

// Config is what the server needs. Features add fields here (runner, lab
// status…); zero values must keep the pages working.
type Config struct {
	// Course returns the current content load. It is called on every
	// request so a live reload can swap the course (e.g. an atomic.Pointer's Load).
	Course func() *lessons.Course
	Store  *store.DB
	Logger *slog.Logger // nil discards
	// NoCompress turns gzip off (benchmarks compare like with like).
	NoCompress bool
	// LearnerKey, when set, signs the lab_learner cookie (HMAC-SHA256,
	// learner_sign.go): knowing a learner's id (CSV exports show it) is
	// then not enough to act as them. serve sets it from a key kept in the
	// database; nil keeps plain ids (tests that read the cookie as the id).
	LearnerKey []byte

	// The sandbox (run_*.go, experiment_*.go): the experiment registry, the
	// runner that queues runs, and the hub that stores and streams their
	// events (the runner's Sink). Nil Runner or Runs: the experiment API
	// answers 503 and widgets say experiments are off.
	Experiments *sandbox.Registry
	Runner      Runner
	Runs        *runhub.Hub

	// Lab is the RDMA backend's state for GET /api/lab and /lab (lab_*.go);
	// nil: the lab says no backend was started.
	Lab LabSource

	// Live is the watched course of `serve --lessons DIR` (nil otherwise):
	// /api/reload streams its changes to open pages and its errors to
	// instructors. Course should then be Live.Course.
	Live *lessons.Live

	// ClientAddr says how to find a request's real client address behind
	// a proxy (web/page/client_addr.go); Limits bounds what one address may do
	// (limits.go). Zero values: the TCP peer, and DefaultLimits.
	ClientAddr page.ClientAddrConfig
	Limits     Limits

	// Terminals gives each learner a shell in a guest of their own
	// (terminal.go); nil: the terminal widget says terminals are off.
	Terminals rdmalab.TermHost
	// Programs runs lessons' :::program exercises in learners' guests;
	// nil: programs are off (they also need Runs).
	Programs rdmalab.ProgramRunner
	// TermInfo says what only the lab server knows of the terminals
	// (sizing, spares, kept machines) for /lab and the widget; nil: none.
	TermInfo TerminalInfo

	// LTI makes the lab an LTI 1.3 tool (lti_*.go); nil: off.
	LTI *LTI

	// Now is the time graded lessons' open and close dates are judged
	// against (graded.go); nil: time.Now. Tests move it past a close date.
	Now func() time.Time

	// Observer is told every request, stream and terminal refusal for the
	// lab's metrics (observe.go); nil: nothing is told.
	Observer Observer
	// Metrics, when set, is served at /metrics (internal/metrics: the
	// handler checks who may read it).
	Metrics http.Handler
}

// Server serves the lab. It is safe for concurrent use.
type Server struct {
	page.Base // render, chrome, error pages, JSON errors (web/page)

	cfg     Config
	log     *slog.Logger
	handler http.Handler

	skeletons   skeletonCache  // lesson pages, rendered once per content load
	limits      *limiters      // per-address and per-learner limits (limits.go)
	termClients termClients    // who holds terminals, per address (terminal_fair.go)
	crowd       addrCrowd      // learners per client address, for /lab (lab_class.go)
	deepLinks   deepLinks      // deep-linking pickers waiting for a choice (lti_deeplink.go)
	frames      frameAncestors // LMS origins that may frame the lab (security_headers.go)
	hostWarn    hostWarnings   // untrusted Host headers, logged at most once a minute (host_trust.go)

	instructors *instructor.Area // the instructor area, mounted by routes (web/instructor)
}

// New checks cfg and builds the router.
func New(cfg Config) (*Server, error) {
	if cfg.Course == nil {
		return nil, errors.New("web: Config.Course is required")
	}
	if cfg.Store == nil {
		return nil, errors.New("web: Config.Store is required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg.Limits = cfg.Limits.withDefaults()
	s := &Server{cfg: cfg, log: log, limits: newLimiters(cfg.Limits)}
	if cfg.Programs != nil {
		// A program run's machine is remembered with its admission's
		// address, as a terminal's is (terminal_fair.go).
		s.cfg.Programs = clientRunner{cfg.Programs, s.termClients.clientOf}
	}
	s.Base = page.Base{Log: log, Strings: ui, Live: cfg.Live != nil}
	ic := instructor.Config{Base: s.Base, Course: cfg.Course, Store: cfg.Store, Logger: log,
		Experiments: cfg.Experiments, Live: cfg.Live, Learners: learnerSide{s}, Now: cfg.Now,
		PlatformsChanged: s.frames.forget}
	if cfg.LTI != nil && cfg.LTI.Tool != nil {
		ic.LTI, ic.LTIBase = cfg.LTI.Tool, s.ltiBase
	}
	s.instructors = instructor.New(ic)
	s.handler = s.routes()
	if cfg.LTI != nil && cfg.LTI.Background != nil {
		cfg.LTI.Background(s.RunLTICloses)
	}
	return s, nil
}

// Handler is the root HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// course is the current content load.
func (s *Server) course() *lessons.Course { return s.cfg.Course() }

// now is the time graded mode judges by (Config.Now).
func (s *Server) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}

// learnerSide is what the instructor area asks of the learner's pages
// (instructor.LearnerSide).
type learnerSide struct{ s *Server }

func (l learnerSide) CookieLearner(r *http.Request) string {
	c, err := r.Cookie(learnerCookie)
	if err != nil {
		return ""
	}
	return l.s.cookieLearner(c.Value) // learner_sign.go: "" unless valid (and signed, with a key)
}

func (l learnerSide) HasLearnerCookie(r *http.Request) bool {
	c, err := r.Cookie(learnerCookie)
	return err == nil && store.ValidLearnerID(cookieIDPart(c.Value))
}

func (l learnerSide) LearnerID(r *http.Request) string { return learnerID(r) }

func (l learnerSide) DraftShow(w http.ResponseWriter, r *http.Request) { l.s.draftShow(w, r) }

func (l learnerSide) DraftAsset(w http.ResponseWriter, r *http.Request) { l.s.draftAsset(w, r) }

func (l learnerSide) RescoreLTI(ctx context.Context, cohort int64, lesson string) (int, error) {
	return l.s.RescoreLTI(ctx, cohort, lesson)
}
