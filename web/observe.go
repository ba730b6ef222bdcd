package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// Observer is told what the web tier serves, for the lab's metrics
// (internal/metrics implements it; Config.Observer nil: nothing is told).
type Observer interface {
	// Request is one answered request: its chi route pattern ("" when no
	// route matched), method, status and time to answer. A stream is
	// told once it ends, with took < 0: it lasted as long as its page
	// was open, which says nothing of how fast the lab answers.
	Request(route, method string, status int, took time.Duration)
	// Stream is a long-lived connection opening (+1) or closing (-1):
	// kind "sse" or "websocket".
	Stream(kind string, delta int)
	// TerminalRefused is a learner's terminal refused (every machine in
	// use and the queue full, or their address over its share).
	TerminalRefused()
	// ProgramRun is a learner's program run ended (program.go) at stage:
	// peer, compile or check as the guest said, "lab" when the lab could
	// not run it; passed is the check's verdict.
	ProgramRun(stage string, passed bool, took time.Duration)
}

// streamKind is what long-lived connection r asks for, "" for none:
// EventSource sends Accept: text/event-stream, a WebSocket asks to upgrade.
func streamKind(r *http.Request) string {
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return "websocket"
	}
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		return "sse"
	}
	return ""
}

// observeStart tells the observer a stream opens; the returned kind goes
// to observeEnd.
func (s *Server) observeStart(r *http.Request) string {
	if s.cfg.Observer == nil {
		return ""
	}
	kind := streamKind(r)
	if kind != "" {
		s.cfg.Observer.Stream(kind, 1)
	}
	return kind
}

// observeEnd tells the observer r was answered (logRequests calls it after
// the router ran, so the route pattern is known).
func (s *Server) observeEnd(r *http.Request, kind string, status int, took time.Duration) {
	if s.cfg.Observer == nil {
		return
	}
	route := ""
	if rc := chi.RouteContext(r.Context()); rc != nil {
		route = rc.RoutePattern()
	}
	if kind != "" {
		s.cfg.Observer.Stream(kind, -1)
		took = -1
	}
	s.cfg.Observer.Request(route, r.Method, status, took)
}

// terminalRefused tells the observer a terminal was refused.
func (s *Server) terminalRefused() {
	if s.cfg.Observer != nil {
		s.cfg.Observer.TerminalRefused()
	}
}

// programDone tells the observer a program run ended.
func (s *Server) programDone(stage string, passed bool, took time.Duration) {
	if s.cfg.Observer != nil {
		s.cfg.Observer.ProgramRun(stage, passed, took)
	}
}
