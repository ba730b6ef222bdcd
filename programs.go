package rdmalab

import "context"

// A lesson's :::program as every package speaks of it: web sends a
// learner's source to a ProgramRunner, terminal runs it in the learner's
// guest, and the guest's wire (vmproto) carries these same types by alias.

// ProgramOutputMax bounds the program's stdout+stderr that is sent back;
// beyond it the program is killed (ProgramEnd.Capped).
const ProgramOutputMax = 64 << 10

// Program is a learner's program to compile and run in their own guest.
type Program struct {
	Source   []byte   `json:"source"`
	Libs     []string `json:"libs,omitempty"` // -l names: ibverbs, rdmacm, m
	Args     []string `json:"args,omitempty"`
	TimeoutS int      `json:"timeout_s"`
	Peer     []byte   `json:"peer,omitempty"` // the lab's peer, C source
	PeerArgs []string `json:"peer_args,omitempty"`
	// Ranks is how many copies of the program run at once (a collective's
	// ranks, each told LAB_RANK and LAB_SIZE); 0 or 1 is one.
	Ranks int    `json:"ranks,omitempty"`
	Check []byte `json:"check"` // run with /bin/sh after the program
	// CheckTimeoutS bounds the check in seconds; 0 is the guest's default
	// for every script (vmproto.VerifyTimeoutS).
	CheckTimeoutS int `json:"check_timeout_s,omitempty"`
}

// ProgramEnd is how a program run ended.
type ProgramEnd struct {
	// Stage is where it stopped: "peer" (the lab's peer did not start:
	// the lab's fault), "compile" (it did not compile), "check" (it ran
	// and was checked).
	Stage    string `json:"stage"`
	Compiler []byte `json:"compiler,omitempty"` // the compiler's output (bounded)
	Exit     int    `json:"exit"`               // the program's exit status; -1 when a signal ended it (with ranks: the first rank that failed)
	Signal   string `json:"signal,omitempty"`   // e.g. "killed"
	TimedOut bool   `json:"timed_out,omitempty"`
	Capped   bool   `json:"capped,omitempty"` // killed for printing more than ProgramOutputMax
	Passed   bool   `json:"passed"`
	Check    []byte `json:"check_output,omitempty"` // the check script's output (bounded)
	Detail   string `json:"detail,omitempty"`       // the check's "exit status 1", or what went wrong
	Millis   struct {
		Compile int64 `json:"compile"`
		Run     int64 `json:"run"`
	} `json:"ms"`
}

// ProgramRunner runs a lesson's program in learner's own guest, telling
// emit its progress (phase and log events) as it goes. A learner with no
// guest yet gets one as their terminal would (the same queue and limits).
type ProgramRunner interface {
	RunProgram(ctx context.Context, learner string, prog Program, lang string, emit func(Event)) (ProgramEnd, error)
}
