package vm

import (
	"errors"

	"github.com/rdmalab/rdmalab/sandbox"
)

// The guest protocol runs over one virtio-serial port, a byte stream in both
// directions. Every message is one JSON line. It wraps the agent protocol of
// package sandbox (Request in, Event lines out, per run) in envelopes with an
// id, so that on one stream the host can also ask for device info, health
// pings and cancellation while a run is in flight, and so that late lines of
// a cancelled run are never mistaken for the next run's.
//
//	host → guest  {"id":7,"op":"run","req":{…sandbox.Request…}}
//	              {"id":8,"op":"lab"}   {"id":9,"op":"ping"}
//	              {"id":10,"op":"cancel","target":7}
//	guest → host  {"hello":{…}}                       once, when the agent opens the port
//	              {"id":7,"event":{…sandbox.Event…}}  zero or more per run
//	              {"id":8,"lab":{…sandbox.Lab…}}
//	              {"id":7,"end":true}                 exactly one per request, last
//	              {"id":7,"end":true,"kind":"failed","error":"…"}
//
// Only one run is in flight at a time (the guest answers "busy" otherwise);
// lab and ping are answered at any time.

// Operations the host may ask for.
const (
	opRun    = "run"
	opLab    = "lab"
	opPing   = "ping"
	opCancel = "cancel"
	// opCommand carries a learner's command to the interactive run Target;
	// without Cmd it says no more commands will come (the guest closes the
	// run's command stream, the agent's stdin reaches EOF).
	opCommand = "command"
)

// End kinds: why a request ended without success.
const (
	endFailed    = "failed"    // the experiment failed; the reason was emitted as an error event
	endBroken    = "broken"    // the agent did not follow the protocol or died
	endBusy      = "busy"      // another run is in flight
	endCancelled = "cancelled" // the host cancelled it
	endBadOp     = "bad-op"    // unknown operation or missing request
)

// hostMsg is a line from the host to the guest.
type hostMsg struct {
	ID     uint64           `json:"id"`
	Op     string           `json:"op"`
	Req    *sandbox.Request `json:"req,omitempty"`
	Target uint64           `json:"target,omitempty"` // cancel, command: the run meant
	// run: the run is interactive, commands will follow (op command)
	Commands bool             `json:"commands,omitempty"`
	Cmd      *sandbox.Command `json:"cmd,omitempty"` // command
}

// guestMsg is a line from the guest to the host.
type guestMsg struct {
	ID    uint64         `json:"id,omitempty"`
	Hello *Hello         `json:"hello,omitempty"`
	Event *sandbox.Event `json:"event,omitempty"`
	Lab   *sandbox.Lab   `json:"lab,omitempty"`
	End   bool           `json:"end,omitempty"`
	Kind  string         `json:"kind,omitempty"`
	Error string         `json:"error,omitempty"`
}

// Hello is what the guest agent says when it opens the port: the agent is
// ready to serve, or setup failed and it says why.
type Hello struct {
	Kernel   string  `json:"kernel"`                // guest kernel release
	Uptime   float64 `json:"uptime"`                // guest seconds since boot
	SetupErr string  `json:"setup_error,omitempty"` // Soft-RoCE setup failed: runs would fail
}

// endError turns an end line into the error Exec returns.
func endError(m guestMsg) error {
	switch m.Kind {
	case "":
		return nil
	case endFailed:
		return &sandbox.AgentFailure{Message: m.Error}
	case endBroken:
		return &sandbox.ProtocolError{Reason: m.Error}
	default:
		return errors.New(m.Error)
	}
}
