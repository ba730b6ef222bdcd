// Package metrics is the lab's Prometheus instrumentation: it owns the
// registry, the collectors every subsystem reports to, and the /metrics
// handler with its access rule (handler.go). The subsystems do not import
// it: each says what happened through a small interface or func of its
// own (web.Observer, runner.Observer, store.WriteObserver), and the lab's
// wiring (cmd/labserver) hands them a *Lab; the states that already exist
// as counts (terminals in use, workers, the LTI outbox) are read at each
// scrape by the functions the wiring adds with Gauges.
//
// Every name starts with lab_; docs/operations.md ("Metrics") lists them,
// and deploy/ holds a Grafana dashboard and alert rules over them that a
// test keeps in step with a real scrape.
package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Lab is the lab's registry and its collectors. A nil *Lab is valid and
// records nothing, so the hooks need no "metrics off" branch.
type Lab struct {
	reg *prometheus.Registry

	requests *prometheus.CounterVec
	reqTime  *prometheus.HistogramVec
	streams  *prometheus.GaugeVec

	runsQueued   *prometheus.CounterVec
	runsFinished *prometheus.CounterVec
	runTime      *prometheus.HistogramVec
	runWait      *prometheus.HistogramVec

	termRefused prometheus.Counter

	programs    *prometheus.CounterVec
	programTime *prometheus.HistogramVec

	storeWrite  prometheus.Histogram
	storeCommit prometheus.Histogram
	storeBatch  prometheus.Histogram
}

// runBuckets span the lab's runs: a host experiment takes a second or
// two, a guest's under TCG a minute, an interactive run up to its limit.
var runBuckets = []float64{0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200}

// New returns a Lab with the Go runtime and process collectors registered.
func New() *Lab {
	l := &Lab{reg: prometheus.NewRegistry()}
	l.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	l.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lab_http_requests_total",
		Help: "HTTP requests answered, by chi route pattern (\"unmatched\" for a 404 outside every route), method and status code.",
	}, []string{"route", "method", "code"})
	l.reqTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "lab_http_request_duration_seconds",
		Help:    "Time to answer an HTTP request, by route pattern (streams, SSE and WebSocket, are left out: they last as long as the page is open).",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"route"})
	l.streams = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "lab_http_streams",
		Help: "Open long-lived connections: kind sse (run events, live reload) or websocket (learner terminals).",
	}, []string{"kind"})
	for _, k := range []string{"sse", "websocket"} {
		l.streams.WithLabelValues(k) // present at 0 before the first one
	}

	l.runsQueued = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lab_runs_submitted_total",
		Help: "Experiment runs accepted into the queue, by experiment.",
	}, []string{"experiment"})
	l.runsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lab_runs_finished_total",
		Help: "Experiment runs ended, by experiment and outcome (done, failed, cancelled, timed-out, interrupted).",
	}, []string{"experiment", "outcome"})
	l.runTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "lab_run_duration_seconds",
		Help:    "How long a started run took, start to end, by experiment.",
		Buckets: runBuckets,
	}, []string{"experiment"})
	l.runWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "lab_run_queue_wait_seconds",
		Help:    "How long a run waited in the queue before it started, by experiment.",
		Buckets: append([]float64{0.01, 0.1}, runBuckets...),
	}, []string{"experiment"})

	l.termRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "lab_terminals_refused_total",
		Help: "Learner terminals refused: every machine in use and the queue full, or the learner's address over its share.",
	})

	l.programs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lab_program_runs_total",
		Help: "Learners' program runs ended, by the stage they reached (peer, compile, check; lab: the lab could not run it) and outcome (passed, failed).",
	}, []string{"stage", "outcome"})
	l.programTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "lab_program_run_seconds",
		Help:    "A learner's program run, Run pressed to its verdict (the guest's start when it had none, the compile, the peer, the check), by the stage it reached.",
		Buckets: runBuckets,
	}, []string{"stage"})
	l.storeWrite = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "lab_store_write_seconds",
		Help:    "One database write, from queued for the writer to its transaction committed.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	})
	l.storeCommit = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "lab_store_commit_seconds",
		Help:    "One group-commit transaction of the database writer, begin to commit.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	})
	l.storeBatch = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "lab_store_commit_writes",
		Help:    "Writes that shared one group-commit transaction.",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64},
	})
	l.reg.MustRegister(l.requests, l.reqTime, l.streams, l.runsQueued, l.runsFinished, l.runTime, l.runWait,
		l.termRefused, l.programs, l.programTime, l.storeWrite, l.storeCommit, l.storeBatch)
	return l
}

// Registry is where the lab's collectors are; Gauges adds to it.
func (l *Lab) Registry() *prometheus.Registry { return l.reg }

// Request records one answered HTTP request (web.Observer).
func (l *Lab) Request(route, method string, status int, took time.Duration) {
	if l == nil {
		return
	}
	if route == "" {
		route = "unmatched"
	}
	l.requests.WithLabelValues(route, methodLabel(method), strconv.Itoa(status)).Inc()
	if took >= 0 { // a stream's (< 0) lasted as long as its page was open
		l.reqTime.WithLabelValues(route).Observe(took.Seconds())
	}
}

// Stream counts a long-lived connection opening (+1) or closing (-1)
// (web.Observer); kind is "sse" or "websocket".
func (l *Lab) Stream(kind string, delta int) {
	if l == nil {
		return
	}
	l.streams.WithLabelValues(kind).Add(float64(delta))
}

// TerminalRefused counts a learner's terminal refused (web.Observer).
func (l *Lab) TerminalRefused() {
	if l == nil {
		return
	}
	l.termRefused.Inc()
}

// ProgramRun records a learner's program run ended (web.Observer).
func (l *Lab) ProgramRun(stage string, passed bool, took time.Duration) {
	if l == nil {
		return
	}
	outcome := "failed"
	if passed {
		outcome = "passed"
	}
	l.programs.WithLabelValues(stage, outcome).Inc()
	l.programTime.WithLabelValues(stage).Observe(took.Seconds())
}

// RunQueued records a run accepted (runner.Observer).
func (l *Lab) RunQueued(experiment string) {
	if l == nil {
		return
	}
	l.runsQueued.WithLabelValues(experiment).Inc()
}

// RunStarted records how long a run waited (runner.Observer).
func (l *Lab) RunStarted(experiment string, waited time.Duration) {
	if l == nil {
		return
	}
	l.runWait.WithLabelValues(experiment).Observe(waited.Seconds())
}

// RunFinished records a run's end; ran is how long it ran, 0 for a run
// that ended before it started (runner.Observer).
func (l *Lab) RunFinished(experiment, outcome string, ran time.Duration) {
	if l == nil {
		return
	}
	l.runsFinished.WithLabelValues(experiment, outcome).Inc()
	if ran > 0 {
		l.runTime.WithLabelValues(experiment).Observe(ran.Seconds())
	}
}

// Wrote records one database write, queued to committed (store.WriteObserver).
func (l *Lab) Wrote(took time.Duration) {
	if l == nil {
		return
	}
	l.storeWrite.Observe(took.Seconds())
}

// Committed records one group-commit transaction (store.WriteObserver).
func (l *Lab) Committed(writes int, took time.Duration) {
	if l == nil {
		return
	}
	l.storeBatch.Observe(float64(writes))
	l.storeCommit.Observe(took.Seconds())
}

// methodLabel is method as a label value: the methods HTTP defines, else
// "other", so a client inventing a method per request cannot mint a new
// series each time (the route is already bounded: a pattern or "unmatched").
func methodLabel(method string) string {
	switch method {
	case "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE":
		return method
	}
	return "other"
}
