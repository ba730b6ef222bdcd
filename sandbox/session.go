package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Session is one run as a backend receives it: the request already encoded
// (the one JSON form the agent reads), the interactive run's command
// stream, and where its events go. Every hop between the runner and the
// agent — the host backend, the vm client, the guest's server, the fleet
// server and its workers — forwards Request as bytes and Commands as a
// stream; none decodes params it never reads, so a value reaches the agent
// as the runner encoded it (an int64 stays an int64), and a backend that
// forwards a Session is interactive by construction.
type Session struct {
	// RunID and Experiment name the run for the hops that route or
	// schedule it (a worker's subjects, the pool's timing rule); they are
	// the same as inside Request.
	RunID      string
	Experiment string
	// Request is the Request as one JSON object on one line (no newline),
	// encoded once by the runner from the validated params.
	Request json.RawMessage
	// Commands is an interactive run's command stream, nil for other runs.
	// It closes when no more commands will come (the run went idle); the
	// agent's stdin then reaches EOF and the experiment cleans up.
	Commands <-chan Command
	// Emit receives the run's events in order (never the agent's end line:
	// Exec returns that as its error).
	Emit func(Event)
}

// NewSession encodes req once and returns its session; cmds is nil unless
// the run is interactive, emit receives its events.
func NewSession(req Request, cmds <-chan Command, emit func(Event)) *Session {
	b, err := json.Marshal(req)
	if err != nil {
		// Params come from Validate: strings, int64s and bools only.
		panic(fmt.Sprintf("sandbox: encode request %s: %v", req.RunID, err))
	}
	if emit == nil {
		emit = func(Event) {}
	}
	return &Session{RunID: req.RunID, Experiment: req.Experiment, Request: b, Commands: cmds, Emit: emit}
}

// Interactive reports whether the run takes commands.
func (s *Session) Interactive() bool { return s.Commands != nil }

// Line is Request as the agent reads it: one compact JSON line ending in a
// newline (bytes that came over a wire may have been re-indented).
func (s *Session) Line() ([]byte, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, s.Request); err != nil {
		return nil, fmt.Errorf("the run's request is not JSON: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// EndKind says how a run ended; empty is done.
type EndKind string

// End kinds. The agent's last line, the guest's end envelope and a
// worker's last message all carry one of these (End).
const (
	EndDone      EndKind = ""
	EndFailed    EndKind = "failed"    // the experiment failed; the reason was already emitted as an error event
	EndBroken    EndKind = "broken"    // the agent did not follow the protocol or died
	EndBusy      EndKind = "busy"      // another run is in flight (a guest runs one at a time)
	EndCancelled EndKind = "cancelled" // the run was cancelled
	EndBadOp     EndKind = "bad-op"    // unknown operation or missing request
	EndError     EndKind = "error"     // anything else, with its reason
)

// End is how a run ended, in the one encoding every hop uses:
// `{"end":{"kind":"failed","error":"…"}}` (`{"end":{}}` for done) is the
// agent's last line, the guest's last envelope of a request (with its id)
// and a worker's last message of a run.
type End struct {
	Kind  EndKind `json:"kind,omitempty"`
	Error string  `json:"error,omitempty"`
	// Zh is Error in Chinese when the cause was a Reason (written in both
	// languages where it was known), so it crosses every hop untranslated.
	Zh string `json:"zh,omitempty"`
}

// EndOf is the End of a run that returned err: done for nil, failed for an
// *AgentFailure, broken for a *ProtocolError, cancelled when cancelled is
// true, error otherwise.
func EndOf(err error, cancelled bool) End {
	if err == nil {
		return End{}
	}
	e := End{Kind: EndError, Error: err.Error()}
	if r := (*Reason)(nil); errors.As(err, &r) {
		e.Zh = r.Text.Get("zh")
	}
	switch {
	case errors.As(err, new(*AgentFailure)):
		e.Kind = EndFailed
	case errors.As(err, new(*ProtocolError)):
		e.Kind = EndBroken
	case cancelled:
		e.Kind = EndCancelled
	}
	return e
}

// Err is the error Exec returns for e: nil when done, an *AgentFailure
// (already reported as an event) when failed, a *ProtocolError when
// broken, a plain error otherwise; with Zh, the error also carries the
// Reason (errors.As) it was made from.
func (e End) Err() error {
	var why *Reason
	if e.Zh != "" {
		why = &Reason{Kind: string(e.Kind), Text: Text{"en": e.Error, "zh": e.Zh}}
	}
	switch e.Kind {
	case EndDone:
		return nil
	case EndFailed:
		return &AgentFailure{Message: e.Error, Reason: why}
	case EndBroken:
		return &ProtocolError{Reason: e.Error}
	default:
		if why != nil {
			return why
		}
		if e.Error == "" {
			return errors.New(string(e.Kind))
		}
		return errors.New(e.Error)
	}
}

// Frame is one message of a run's output on a hop that carries both kinds
// (a worker's messages): an event, or the end.
type Frame struct {
	Event *Event `json:"event,omitempty"`
	End   *End   `json:"end,omitempty"`
}
