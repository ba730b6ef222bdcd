// Package vmproto is what the host and the lab guest agree on: the image
// layout (layout.go; the guest's /init is package vmguest/initscript) and
// the message envelopes on the virtio-serial port (proto.go). Both sides
// import it; it imports only package sandbox and the domain.
package vmproto

import (
	"encoding/json"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/sandbox"
)

// The guest protocol runs over one virtio-serial port, a byte stream in both
// directions. Every message is one JSON line. It wraps the agent protocol of
// package sandbox (Request in, Event lines out, per run) in envelopes with an
// id, so that on one stream the host can also ask for device info, health
// pings and cancellation while a run is in flight, and so that late lines of
// a cancelled run are never mistaken for the next run's.
//
//	host → guest  {"id":7,"op":"run","req":{…sandbox.Request…}}  req: the runner's bytes, passed on undecoded
//	              {"id":11,"op":"command","target":7,"cmd":{"cmd":"next"}}
//	              {"id":8,"op":"lab"}   {"id":9,"op":"ping"}
//	              {"id":10,"op":"cancel","target":7}   target: a run, or a terminal to close
//	              {"id":12,"op":"term","rows":24,"cols":80}
//	              {"id":13,"op":"term-in","target":12,"data":"bHMK"}  keystrokes; with rows, cols: a resize; no answer
//	              {"id":14,"op":"verify","data":"…script…","lang":"zh"}
//	guest → host  {"hello":{…}}                       once, when the agent opens the port
//	              {"id":7,"event":{…sandbox.Event…}}  zero or more per run
//	              {"id":8,"lab":{…sandbox.Lab…}}
//	              {"id":12,"data":"…"}                 a terminal's output; once, a verify script's
//	              {"id":7,"end":{}}                   exactly one per request (but term-in), last
//	              {"id":7,"end":{"kind":"failed","error":"…"}}  (sandbox.End, as the agent and a worker end a run)
//
// data is base64 ([]byte in JSON). Only one run is in flight at a time (the
// guest answers "busy" otherwise); the other operations are answered at any
// time.

// Operations the host may ask for.
const (
	OpRun    = "run"
	OpLab    = "lab"
	OpPing   = "ping"
	OpCancel = "cancel"
	// OpCommand carries a learner's command to the interactive run Target;
	// without Cmd it says no more commands will come (the guest closes the
	// run's command stream, the agent's stdin reaches EOF).
	OpCommand = "command"
	// OpTerm opens a learner's shell on a PTY in the guest (Rows, Cols);
	// its output comes back as Data lines with the request's id, and its
	// end line when the shell exits or is closed (OpCancel with Target).
	OpTerm = "term"
	// OpTermIn writes Data to terminal Target's PTY; with Rows and Cols it
	// resizes it instead.
	OpTermIn = "term-in"
	// KeysDropped names the log event a terminal's channel carries when
	// the guest dropped keystrokes (the shell was not reading its input
	// and its queue was full), once per such spell.
	KeysDropped = "keys-dropped"
	// OpVerify runs a lesson task's verify script (Data, run with
	// /bin/sh) in this guest, beside the learner's terminals: the script
	// sees LAB_TERM_PIDS, the pids of every process of the open terminals'
	// sessions, and LAB_LANG, the learner's language (Lang). Its output (at most VerifyOutputMax bytes, stdout and
	// stderr together) comes back as one Data line, then the end line:
	// no kind when it exited 0, EndFailed with "exit status N" otherwise,
	// EndFailed with "timed out" after VerifyTimeout.
	OpVerify = "verify"
	// OpProgram compiles and runs a learner's C program (Program) in this
	// guest, the learner's own: the lab's peer first (if any), then the
	// compiler and the program under the learner cgroup's limits, then the
	// exercise's check script. Progress comes back as Event lines (phase
	// and log events: compiler output, the program's output, the peer's
	// report), then the end line carrying ProgramEnd. OpCancel with Target
	// ends it.
	OpProgram = "program"
)

// Bounds of a program run (OpProgram).
const (
	ProgramSourceMax  = 64 << 10                 // the learner's source
	ProgramCompileMax = 16 << 10                 // compiler output kept and sent
	ProgramOutputMax  = rdmalab.ProgramOutputMax // the program's stdout+stderr sent; beyond it the program is killed
	ProgramPeerMax    = 8 << 10                  // the peer's report
	ProgramTimeoutMax = 30                       // seconds a program may run
	ProgramRanksMax   = 8                        // copies of one program run at once (Program.Ranks)
	ProgramCheckMaxS  = 90                       // seconds a program's check may take (Program.CheckTimeoutS)
	// ProgramEvents bounds the event lines of one program run: output is
	// sent in chunks of at least ProgramChunk bytes or every 50 ms.
	ProgramEvents = 2048
	ProgramChunk  = 4 << 10
)

// Program is a learner's program to compile and run (OpProgram): the
// domain's type, carried as it is.
type Program = rdmalab.Program

// ProgramEnd is how a program run ended: the domain's type.
type ProgramEnd = rdmalab.ProgramEnd

// Bounds of a verify script (OpVerify).
const (
	VerifyOutputMax = 4 << 10
	VerifyTimeoutS  = 30
)

// End kinds: why a request ended without success (sandbox.End, the one
// encoding of an end on every hop).
const (
	EndFailed    = sandbox.EndFailed    // the experiment failed; the reason was emitted as an error event
	EndBroken    = sandbox.EndBroken    // the agent did not follow the protocol or died
	EndBusy      = sandbox.EndBusy      // another run is in flight
	EndCancelled = sandbox.EndCancelled // the host cancelled it
	EndBadOp     = sandbox.EndBadOp     // unknown operation or missing request
)

// HostMsg is a line from the host to the guest.
type HostMsg struct {
	ID uint64 `json:"id"`
	Op string `json:"op"`
	// run: the sandbox.Request as the runner encoded it, forwarded as bytes
	Req    json.RawMessage `json:"req,omitempty"`
	Target uint64          `json:"target,omitempty"` // cancel, command: the run meant
	// run: the run is interactive, commands will follow (op command)
	Commands bool             `json:"commands,omitempty"`
	Cmd      *sandbox.Command `json:"cmd,omitempty"` // command
	// term, term-in: keystrokes (term-in) and the window size
	Data []byte `json:"data,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
	Cols uint16 `json:"cols,omitempty"`
	// verify: the learner's page language (zh, en), LAB_LANG for the script
	Lang string `json:"lang,omitempty"`
	// program
	Program *Program `json:"program,omitempty"`
}

// GuestMsg is a line from the guest to the host.
type GuestMsg struct {
	ID    uint64         `json:"id,omitempty"`
	Hello *Hello         `json:"hello,omitempty"`
	Event *sandbox.Event `json:"event,omitempty"`
	Lab   *sandbox.Lab   `json:"lab,omitempty"`
	End   *sandbox.End   `json:"end,omitempty"`  // the request's last line: how it ended
	Data  []byte         `json:"data,omitempty"` // a terminal's output
	// Program is how a program run ended, on its end line.
	Program *ProgramEnd `json:"program,omitempty"`
}

// Hello is what the guest agent says when it opens the port: the agent is
// ready to serve, or setup failed and it says why.
type Hello struct {
	Kernel   string  `json:"kernel"`                // guest kernel release
	Uptime   float64 `json:"uptime"`                // guest seconds since boot
	SetupErr string  `json:"setup_error,omitempty"` // Soft-RoCE setup failed: runs would fail
}
