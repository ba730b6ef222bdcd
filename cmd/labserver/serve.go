package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/asynclog"
	"github.com/rdmalab/rdmalab/internal/metrics"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/terminals/terminal"
	"github.com/rdmalab/rdmalab/web"
)

// Config is what `labserver serve` is told by flags and the environment.
type Config struct {
	Addr       string // LAB_ADDR
	DBPath     string // LAB_DB
	LessonsDir string // LAB_LESSONS; "" = the built-in course
	Sandbox    sandboxConfig
	Limits     limitsConfig
	Terminals  int           // LAB_TERMINALS: learner terminals at once, TerminalsAuto = from the machine (terminal.go)
	Keep       keepConfig    // kept learner machines (terminal_keep.go)
	Spares     int           // LAB_SPARES: the class paused spare guests are kept for; -1 none (terminal_spares.go)
	IdlePause  time.Duration // LAB_IDLE_PAUSE: a learner's guest with no keystroke this long is paused; 0 never (terminal_idle.go)
	Reclaim    time.Duration // LAB_TERMINAL_IDLE: a learner's machine with no keystroke this long is reclaimed (terminal_idle.go)
	Metrics    metricsConfig // who may read /metrics (serve_metrics.go)
	PublicURL  string        // LAB_PUBLIC_URL: the lab's address as browsers and an LMS reach it (LTI)
}

// Main is one serve process, split into steps so a test can run it end to
// end: ParseFlags, Run (returns once listening), then Close.
type Main struct {
	Config Config
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string // os.Getenv unless a test says otherwise
	Log    *slog.Logger

	DB      *store.DB
	Sandbox *labSandbox
	Terms   *terminal.Terminals // learner terminals; nil when off
	Metrics *metrics.Lab        // the registry /metrics serves (serve_metrics.go)
	Course  atomic.Pointer[lessons.Course]
	watch   liveCourse // --lessons DIR: live reload (serve_watch.go)
	lti     ltiRun     // the LTI score deliverer (serve_lti.go)
	HTTP    *http.Server
	logw    *asynclog.Writer // the log's output, flushed by Close; nil when the caller gave Log
	ln      net.Listener
	served  chan error
}

// NewMain returns a Main writing to the process's stdout/stderr.
func NewMain() *Main {
	return &Main{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
}

// envOr returns the environment value of key, or def when it is unset or empty.
func (m *Main) envOr(key, def string) string {
	if v := m.Getenv(key); v != "" {
		return v
	}
	return def
}

// ParseFlags reads the serve flags; each defaults to its LAB_* environment
// variable, then to the built-in default.
func (m *Main) ParseFlags(args []string) error {
	fset := serveFlagSet(m, m.Stderr)
	fset.Usage = func() {
		fmt.Fprint(m.Stderr, usage)
		fmt.Fprintln(m.Stderr, "\nserve flags (each defaults to the LAB_* variable in brackets):")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fset.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fset.Args())
	}
	return nil
}

// serveFlagSet is every serve flag, filling m.Config; help prints it.
func serveFlagSet(m *Main, out io.Writer) *flag.FlagSet {
	fset := flag.NewFlagSet("labserver serve", flag.ContinueOnError)
	fset.SetOutput(out)
	fset.StringVar(&m.Config.Addr, "addr", m.envOr("LAB_ADDR", "127.0.0.1:8080"), "listen address [LAB_ADDR]")
	fset.StringVar(&m.Config.DBPath, "db", m.envOr("LAB_DB", "./rdmalab.db"), "SQLite database file [LAB_DB]")
	fset.StringVar(&m.Config.PublicURL, "public-url", m.envOr("LAB_PUBLIC_URL", ""), "the lab's address as browsers and an LMS reach it, e.g. https://lab.example.edu (LTI URLs; default: the address each request reached, never a Host header that names another) [LAB_PUBLIC_URL]")
	fset.StringVar(&m.Config.LessonsDir, "lessons", m.envOr("LAB_LESSONS", ""), "course folder, watched: saving a file reloads open pages (default: the built-in course) [LAB_LESSONS]")
	sandboxFlags(fset, &m.Config.Sandbox, m.envOr)
	limitFlags(fset, &m.Config.Limits, m.envOr)
	terminalFlags(fset, &m.Config.Terminals, m.envOr)
	keepFlags(fset, &m.Config.Keep, m.envOr)
	spareFlags(fset, &m.Config.Spares, m.envOr)
	idlePauseFlags(fset, &m.Config.IdlePause, m.envOr)
	reclaimFlags(fset, &m.Config.Reclaim, m.envOr)
	metricsFlags(fset, &m.Config.Metrics, m.envOr)
	return fset
}

// courseFS is the course source: the folder given, or the built-in course.
func courseFS(dir string) (fs.FS, string) {
	if dir == "" {
		return lessons.Builtin, "built-in course"
	}
	return os.DirFS(dir), dir
}

// lessonOptions wires the lesson loader to the rest of the lab (the
// sandbox registry checks experiment directives once it exists).
func lessonOptions() lessons.Options {
	return lessons.Options{CheckExperiment: experimentRegistry().CheckParams, CheckScript: shellSyntax}
}

// Run loads the course, opens the database and starts serving. It returns
// once the listener is up (or with the reason it could not start: content
// errors, a bad database, a busy port); serving continues until Close.
func (m *Main) Run(ctx context.Context) error {
	if m.Log == nil {
		// Every request logs a line: through asynclog, none waits on a
		// slow reader of stderr (journald, a pipe).
		m.logw = asynclog.New(m.Stderr, 4096)
		m.Log = slog.New(slog.NewTextHandler(m.logw, nil))
	}
	if addr := os.Getenv("LAB_DEBUG_ADDR"); addr != "" {
		if err := startDebug(addr, m.Log); err != nil {
			return err
		}
	}
	fsys, where := courseFS(m.Config.LessonsDir)
	course, err := lessons.Load(fsys, lessonOptions())
	if err != nil {
		// The same file:line lines `labserver check` prints.
		return fmt.Errorf("the course (%s) has errors; fix them (see `labserver check`):\n%w", where, err)
	}
	for _, d := range course.Warnings {
		m.Log.Warn("course", "finding", d.String())
	}
	m.Course.Store(course)
	if err := m.watch.start(ctx, m.Config.LessonsDir, course, m.Log); err != nil {
		return err
	}

	db, err := store.Open(m.Config.DBPath)
	if err != nil {
		return err
	}
	m.DB = db
	followAliases(ctx, db, m.courseNow, m.watch.live, m.Log) // serve_aliases.go
	sb, err := startSandbox(ctx, m.Config.Sandbox, db, m.Log)
	if err != nil {
		return err
	}
	m.Sandbox = sb
	var sizing web.TermSizing
	m.Terms, sizing = learnerTerminals(m.Config.Terminals, m.Config.Sandbox, sb.RDMA, m.Log)
	if m.Terms != nil {
		m.Terms.Keep = m.Config.Keep.keep(m.Config.DBPath, m.Log)
		m.Terms.Spares = m.Config.Spares
		m.Terms.IdlePause = idlePause(m.Config.IdlePause)
		m.Terms.Idle = m.Config.Reclaim
		if m.Config.Spares > 1 {
			// A class's guests are restored before it comes; a single
			// spare waits for the first terminal, as it always did.
			m.Terms.Warm()
		}
	}
	// Each is nil (off) unless there are terminals: an interface holding
	// a nil pointer would not be.
	var (
		terms    rdmalab.TermHost
		programs rdmalab.ProgramRunner
		info     web.TerminalInfo
	)
	if m.Terms != nil || sb.Fleet != nil && m.Config.Terminals != 0 {
		// Placed here while this machine has room, else on the workers
		// that host terminals (`labserver worker --terminals`).
		wt := newWebTerminals(m.Terms, sb.Fleet, sizing)
		terms, programs, info = wt.Placement, wt, wt
	}

	// Learner cookies are signed with a key kept in the database, so a
	// learner id seen in a CSV export cannot be used as a cookie.
	learnerKey, err := db.Secret(ctx, "learner-cookie", 32)
	if err != nil {
		return err
	}
	clientAddr, limits, err := m.Config.Limits.webLimits()
	if err != nil {
		return err
	}
	mx := labMetrics{db: db, dbPath: m.Config.DBPath, sb: sb, local: m.Terms}
	if terms != nil {
		mx.terms = terms
	}
	if m.Terms != nil {
		mx.keep = m.Terms.Keep
	}
	m.Metrics = startMetrics(mx)
	srv, err := web.New(web.Config{Course: m.courseNow, Live: m.watch.live, Store: db, Logger: m.Log,
		Experiments: sb.Registry, Runner: sb.Runner, Runs: sb.Hub, LearnerKey: learnerKey, Lab: sb.RDMA,
		ClientAddr: clientAddr, Limits: limits, Terminals: terms, Programs: programs, TermInfo: info, LTI: m.lti.start(ctx, m),
		Observer: m.Metrics, Metrics: m.Metrics.Handler(metrics.Access{Token: m.Config.Metrics.Token, ProxyHeader: clientAddr.Header})})
	if err != nil {
		return err
	}
	// The first class after a start must not wait while its pages are built.
	warmStart := time.Now()
	if err := srv.WarmPages(); err != nil {
		m.Log.Warn("lesson pages not all prepared at start: each is built when first asked for", "err", err)
	} else {
		m.Log.Info("lesson pages prepared", "took", time.Since(warmStart).Round(time.Millisecond))
	}
	ln, err := net.Listen("tcp", m.Config.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", m.Config.Addr, err)
	}
	// Connections per client address are capped where they are accepted;
	// the trusted proxies carry everyone's connections and are exempt.
	var exempt []netip.Prefix
	if clientAddr.Header != "" {
		exempt = clientAddr.Proxies
		if len(exempt) == 0 {
			exempt = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
		}
	}
	ln = web.LimitListener(ln, srv.Limits().ConnsPerAddr, exempt)
	m.ln = ln
	m.HTTP = &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    web.MaxHeaderBytes, // a few KiB are real; net/http's default is 1 MiB
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(m.Log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	m.served = make(chan error, 1)
	go func() { m.served <- m.HTTP.Serve(ln) }()
	if err := m.announceInstructorSetup(ctx); err != nil {
		return err
	}
	// Last, so "serving" in the log means start-up is complete.
	m.Log.Info("serving", "url", "http://"+ln.Addr().String()+"/", "db", m.Config.DBPath,
		"course", where, "lessons", len(course.Lessons))
	return nil
}

// Addr is the address the server listens on (useful with port 0).
func (m *Main) Addr() string {
	if m.ln == nil {
		return ""
	}
	return m.ln.Addr().String()
}

// Served yields Serve's result if the server stops on its own.
func (m *Main) Served() <-chan error { return m.served }

// Close stops accepting connections, lets requests in flight finish (up
// to 10 s), then closes the database.
func (m *Main) Close() error {
	var errs []error
	m.watch.stop() // ends live-reload streams before the HTTP shutdown waits on them
	// Runs first: their event streams end with an interrupted status, so
	// the HTTP shutdown below does not wait on open streams.
	if m.Terms != nil {
		errs = append(errs, m.closeTerminals())
		m.Terms = nil
	}
	if m.Sandbox != nil {
		errs = append(errs, m.Sandbox.Close())
		m.Sandbox = nil
	}
	m.lti.stop() // pending scores stay in the outbox for the next start
	if m.HTTP != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.HTTP.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shutdown: %w", err))
		}
		if err := <-m.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
		m.HTTP = nil
	}
	if m.DB != nil {
		errs = append(errs, m.DB.Close())
		m.DB = nil
	}
	if m.logw != nil {
		m.logw.Close() // every line out before the process ends
	}
	return errors.Join(errs...)
}

// runServe is `labserver serve`: run until SIGINT/SIGTERM, then shut down gracefully.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	m := NewMain()
	m.Stdout, m.Stderr = stdout, stderr
	if err := m.ParseFlags(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "labserver:", err)
		return exitCode(err)
	}
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(stderr, "labserver:", err)
		m.Close()
		return 1
	}
	var served error
	select {
	case <-ctx.Done():
		m.Log.Info("shutting down", "reason", context.Cause(ctx))
	case served = <-m.served:
		m.served <- served // Close reads it again
	}
	if err := m.Close(); err != nil {
		fmt.Fprintln(stderr, "labserver:", err)
		return 1
	}
	if served != nil && !errors.Is(served, http.ErrServerClosed) {
		return 1
	}
	return 0
}
