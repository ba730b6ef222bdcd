package fleet

import (
	"time"
)

// Learner terminals on workers. A worker started with --terminals hosts
// learner guests as the lab server does (package terminal); the
// server places each new terminal (place.go) and relays its bytes over
// the worker's NATS connection — the one it already holds, authenticated
// by its own credential, with subjects that carry its name:
//
//	lab.tin.<w>.<id>.<op>   server → worker: open, in (keystrokes, raw),
//	                        size, detach (a terminal's id), verify, reset
//	                        (a request's id)
//	lab.tout.<w>.<id>.<op>  worker → server: ready (the attach's answer),
//	                        out (shell output, raw), end (the shell ended),
//	                        result (a verify's or reset's answer)
//
// Keystrokes and output travel as raw bytes (no JSON, no base64): one NATS
// hop each way beside the local path. The worker learns no learner id,
// only a key the server derives from it with a secret of its own
// (Server.termKey). The server bounds everything a worker sends back
// (termBounds); a worker's credential lets it hear and answer only its own
// subjects (auth.go). A worker that stops sending heartbeats ends its
// terminals with a reason the learner's page words (TermLost).
const (
	subjTermIn  = "lab.tin."
	subjTermOut = "lab.tout."
)

// What the server accepts from a worker's terminals (the guest's own
// bounds, machines/vm/bounds.go, are the same figures: a guest holds a
// shell at 256 KiB/s in 4 KiB chunks).
const (
	termChunk   = 32 << 10  // one out message
	termRate    = 512 << 10 // a terminal's output, bytes per second …
	termBurst   = 1 << 20   // … and how far ahead of that rate it may get
	termTotal   = 1 << 30   // one attach's output in all
	termRecent  = 64 << 10  // the scrollback an attach starts with
	termResult  = 16 << 10  // a verify's answer (its output is at most 4 KiB)
	termPerHost = 64        // terminals a worker may say it hosts
	termOutBuf  = 256       // out messages waiting for the learner's tab
)

// termOpenWait bounds the wait for a worker's answer to an open: its
// guest's start (a local one has 5 minutes, terminal.Terminals.open).
var termOpenWait = 6 * time.Minute

// termOpen asks a worker for a learner's shell (op open).
type termOpen struct {
	Key  string `json:"key"`
	Rows uint16 `json:"rows,omitempty"`
	Cols uint16 `json:"cols,omitempty"`
	// Client is the admission's client (rdmalab.ClientOf), keyed as the
	// learner is (the worker never learns an address): the machine kept
	// on the worker counts against that client's share (terminal.Keep).
	Client string `json:"client,omitempty"`
}

// termSize resizes a shell (op size).
type termSize struct {
	Rows, Cols uint16
}

// termReady answers an open: the scrollback and the kept-machine note, or
// why there is no shell.
type termReady struct {
	Recent []byte `json:"recent,omitempty"`
	Note   string `json:"note,omitempty"`
	Err    string `json:"err,omitempty"`
}

// termCall is a verify or a reset (the op says which).
type termCall struct {
	Key    string `json:"key"`
	Script []byte `json:"script,omitempty"`
	Lang   string `json:"lang,omitempty"`
}

// termResultMsg answers a termCall.
type termResultMsg struct {
	Passed bool   `json:"passed,omitempty"`
	Output []byte `json:"output,omitempty"`
	Detail string `json:"detail,omitempty"`
	NoTerm bool   `json:"noterm,omitempty"` // the learner has no shell there
	Err    string `json:"err,omitempty"`
}

// TermLost is why a worker's terminal ended without its shell exiting:
// the worker stopped answering, or broke a bound. The learner's page says
// so in their language and opens a new machine elsewhere.
type TermLost struct {
	Worker string
	Broken string // the bound the worker broke; "" when it died
}

func (e *TermLost) Error() string {
	if e.Broken != "" {
		return "worker " + e.Worker + " broke a bound: " + e.Broken
	}
	return "worker " + e.Worker + " stopped answering"
}
