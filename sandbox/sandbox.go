// Package sandbox is what the agent that performs a run and the backends
// that carry it share: the registry of experiments and their params, the
// event model, the session a backend receives, the agent protocol, how a
// run ended and the reasons in both languages. The queue that orders runs
// is package runs/runner, which the agent binary does not link. It never
// imports web or store.
package sandbox

import (
	"context"
	"time"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/i18n"
)

// Need says what an experiment requires from the machine.
type Need string

// Needs.
const (
	NeedHost Need = "host" // runs on the host kernel, no RDMA device required
	NeedRDMA Need = "rdma" // needs RDMA devices (host with rxe, or the vm backend)
)

// Sharing says whether an experiment's figures depend on having the
// machine's CPUs to itself. The runner starts shareable runs side by side
// (in a pool of guests, on workers); a timing run starts only when nothing
// else runs, and nothing else starts until it ends, so what it measures is
// its own cost and not its neighbours'.
type Sharing string

// Sharing classes. An experiment that leaves Sharing empty is treated as
// timing (the safe choice); every built-in experiment says which it is.
const (
	Timing    Sharing = "timing"    // measures time or CPU: pingpong, perftest, tcp-cost, loss sweeps
	Shareable Sharing = "shareable" // shows semantics (errnos, states, counts): may run beside others
)

// The record of a run (its info, params, status and events, the tables
// and captures they carry) lives in the domain package at the module's
// root (package rdmalab), so the store depends on plain types, not on the
// runner; the names here are the sandbox's vocabulary for it.
type (
	Status    = rdmalab.Status
	EventType = rdmalab.EventType
	Event     = rdmalab.Event
	Capture   = rdmalab.Capture
	Table     = rdmalab.Table
	TableText = rdmalab.TableText
	Params    = rdmalab.Params
	RunInfo   = rdmalab.RunInfo
)

// Run states (rdmalab.Status).
const (
	StatusQueued      = rdmalab.StatusQueued
	StatusRunning     = rdmalab.StatusRunning
	StatusDone        = rdmalab.StatusDone
	StatusFailed      = rdmalab.StatusFailed
	StatusCancelled   = rdmalab.StatusCancelled
	StatusTimedOut    = rdmalab.StatusTimedOut
	StatusInterrupted = rdmalab.StatusInterrupted
)

// Event types (rdmalab.EventType).
const (
	EvStatus  = rdmalab.EvStatus
	EvPhase   = rdmalab.EvPhase
	EvLog     = rdmalab.EvLog
	EvMetric  = rdmalab.EvMetric
	EvTable   = rdmalab.EvTable
	EvResult  = rdmalab.EvResult
	EvError   = rdmalab.EvError
	EvCommand = rdmalab.EvCommand
	EvStep    = rdmalab.EvStep
	EvCapture = rdmalab.EvCapture
)

// Same is text that reads the same in every language (rdmalab.Same).
func Same(s string) Text { return rdmalab.Same(s) }

// NewTable starts a table a learner reads (rdmalab.NewTable).
func NewTable(title Text, columns ...Text) *Table { return rdmalab.NewTable(title, columns...) }

// Emitter is how a running experiment reports events. It is safe for
// concurrent use.
type Emitter interface {
	Emit(Event)
}

// Text is the shared localized text (internal/i18n): Get picks the
// requested language, then English, then any.
type Text = i18n.Text

// ParamKind is the type of an experiment parameter.
type ParamKind string

// Param kinds. Values travel as JSON numbers (int, bytes), strings (enum) or booleans.
const (
	ParamInt   ParamKind = "int"
	ParamBytes ParamKind = "bytes" // an int64 count of bytes; Min/Max in bytes
	ParamEnum  ParamKind = "enum"
	ParamBool  ParamKind = "bool"
)

// Choice is one value of an enum param.
type Choice struct {
	Value string `json:"value"`
	Title Text   `json:"title"`
}

// Param describes one experiment parameter with its bounds.
type Param struct {
	Name    string    `json:"name"`
	Kind    ParamKind `json:"kind"`
	Title   Text      `json:"title"`
	Help    Text      `json:"help,omitempty"`
	Min     int64     `json:"min,omitempty"`
	Max     int64     `json:"max,omitempty"`
	Unit    string    `json:"unit,omitempty"`
	Default any       `json:"default"`
	Choices []Choice  `json:"choices,omitempty"`
}

// Preset is a named set of param values ("fails", "the fix", …).
type Preset struct {
	ID     string         `json:"id"`
	Title  Text           `json:"title"`
	Values map[string]any `json:"values"`
}

// Experiment is one runnable experiment.
type Experiment struct {
	ID      string `json:"id"`
	Title   Text   `json:"title"`
	Summary Text   `json:"summary"`
	Needs   Need   `json:"needs"`
	// Sharing: Timing (runs alone) or Shareable (runs beside others).
	Sharing Sharing       `json:"sharing"`
	Params  []Param       `json:"params"`
	Presets []Preset      `json:"presets"`
	Timeout time.Duration `json:"-"` // hard limit of one run (DefaultTimeout when 0), enforced by the runner

	// Commands makes the experiment interactive: while it runs, the learner
	// may send these commands (and no others) to it; see command.go.
	Commands []CommandSpec `json:"commands,omitempty"`
	// Idle ends an interactive run that received no command for this long
	// (DefaultIdle when 0); its status is then timed-out.
	Idle time.Duration `json:"-"`

	// Run performs the experiment inside `labserver agent`. It returns a
	// non-nil error when the experiment could not do its job (the run fails);
	// an expected failure that the experiment demonstrates (ENOMEM) is an
	// event, not an error.
	Run func(ctx context.Context, p Params, emit Emitter) error `json:"-"`
}

// DefaultTimeout limits an experiment that does not set its own Timeout.
const DefaultTimeout = time.Minute

// TimeLimit is e.Timeout, or DefaultTimeout when it is not set.
func (e *Experiment) TimeLimit() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return DefaultTimeout
}

// Class is e's sharing class: Sharing, or Timing when it is not set.
func (e *Experiment) Class() Sharing {
	if e.Sharing == Shareable {
		return Shareable
	}
	return Timing
}

// Request is what `labserver agent` reads: one run of one experiment. The
// runner encodes it once (NewSession); the hops in between forward the bytes.
type Request struct {
	RunID      string `json:"run_id"`
	Experiment string `json:"experiment"`
	Params     Params `json:"params"`
}

// Backend runs agent requests somewhere: "host" (a child process), "vm"
// (the Soft-RoCE guest), "workers" (other machines, runs/fleet.Mix when
// none of its own can) or "none".
type Backend interface {
	// Name is "host", "vm", "workers" or "none".
	Name() string
	// Lab describes the backend's current state for GET /api/lab.
	Lab(ctx context.Context) Lab
	// Exec runs one session to completion, passing every event to
	// s.Emit and an interactive run's commands (s.Commands) to the agent.
	// It returns End.Err of how the run ended. Cancelling ctx must stop the
	// run and kill everything it started.
	Exec(ctx context.Context, s *Session) error
}

// Slotted is a Backend that takes several runs at once (a pool of guests,
// a fleet's workers); the runner gives it that many at once.
type Slotted interface {
	Slots() int
}

// GuestPool is a backend whose runs go to guests of its own (machines/vm's
// Pool): learner terminals, guests of the same kind, can live beside it.
// A backend that wraps another (fleet.Mix) answers for the one it wraps.
type GuestPool interface {
	// Guests is how many guests the pool keeps for runs (0: none, this
	// backend is not a guest pool).
	Guests() int
}

// Unavailable is the capability of a backend that can run nothing on this
// machine (NoBackend): the runner fails its runs at once with the reason
// Unavailable returns, without calling Exec.
type Unavailable interface {
	Unavailable() Text
}

// Lab is the state of a backend, the body of GET /api/lab.
type Lab struct {
	Backend string   `json:"backend"`
	State   LabState `json:"state"`
	// Reason says why the lab is in its state (or, when ready, anything
	// worth knowing), in both languages from where it is known.
	Reason Text   `json:"reasons,omitempty"`
	Kernel string `json:"kernel,omitempty"`
	Accel  string `json:"accel,omitempty"` // kvm|tcg (vm backend)
	// Guests is the size of the vm backend's pool, GuestsReady how many
	// of them are up.
	Guests      int      `json:"guests,omitempty"`
	GuestsReady int      `json:"guests_ready,omitempty"`
	Devices     []Device `json:"devices"`
	// Workers are the other machines running experiments for this lab
	// (labserver worker), as they last reported.
	Workers []WorkerInfo `json:"workers,omitempty"`
}

// WorkerInfo is one worker as /lab lists it.
type WorkerInfo struct {
	Name    string   `json:"name"`
	Backend string   `json:"backend"` // host|vm|none: where its RDMA runs go
	Accel   string   `json:"accel,omitempty"`
	Devices []string `json:"devices,omitempty"`
	Slots   int      `json:"slots"`   // runs it takes at once
	Running int      `json:"running"` // runs it has now
	Load1   float64  `json:"load1"`   // its load average
	CPUs    int      `json:"cpus"`
}

// Device is one RDMA device as reported by the agent.
type Device struct {
	Name     string           `json:"name"`
	Netdev   string           `json:"netdev"`
	GID      string           `json:"gid"`
	GIDIndex int              `json:"gid_index"` // index of GID in port 1's table (-1: none); tools need it (-x/-g)
	Counters map[string]int64 `json:"counters,omitempty"`
}
