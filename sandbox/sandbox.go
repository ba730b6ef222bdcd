// Package sandbox runs experiments: the registry of experiments and their
// params, the run lifecycle, a queue with limits, the event model, and the
// backends (host child process, Soft-RoCE guest) that run `labserver agent`.
// It never imports web or store: events leave through a Sink.
package sandbox

import (
	"context"
	"time"

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

// Status is a run's lifecycle state.
type Status string

// Run states: queued → running → done | failed | cancelled | timed-out;
// interrupted marks runs found unfinished when the server starts.
const (
	StatusQueued      Status = "queued"
	StatusRunning     Status = "running"
	StatusDone        Status = "done"
	StatusFailed      Status = "failed"
	StatusCancelled   Status = "cancelled"
	StatusTimedOut    Status = "timed-out"
	StatusInterrupted Status = "interrupted"
)

// Final reports whether s is a terminal state.
func (s Status) Final() bool {
	return s != StatusQueued && s != StatusRunning
}

// EventType names the kind of an Event.
type EventType string

// Event types. "status" is emitted by the runner (queue position, state
// changes); the others by experiments.
const (
	EvStatus EventType = "status"
	EvPhase  EventType = "phase"
	EvLog    EventType = "log"
	EvMetric EventType = "metric"
	EvTable  EventType = "table"
	EvResult EventType = "result"
	EvError  EventType = "error"
	// EvCommand is a learner's command to an interactive run, emitted by
	// the runner when it accepts one (Name = the command), so the replay
	// shows what the learner asked before what the run answered.
	EvCommand EventType = "command"
	// EvStep is one step of an interactive run: the call made (Call, Code),
	// what came back (Table, OK, ErrnoName), why (Detail) and which
	// commands the run accepts next (Offers).
	EvStep EventType = "step"
	// EvCapture carries the packets a run captured (package
	// sandbox/capture): a bounded .pcap kept with the run's events.
	EvCapture EventType = "capture"
)

// Event is one thing that happened in a run. It is a JSON line on the agent's
// stdout, a row in the store and the data of one SSE message.
type Event struct {
	Seq  int64     `json:"seq"`  // 1-based order within the run, set by the runner
	Time time.Time `json:"time"` // when it was emitted
	Type EventType `json:"type"`

	// status
	Status   Status `json:"status,omitempty"`
	Position int    `json:"position,omitempty"` // queue position, 1 = next
	// Wait is the estimated wait in seconds before a queued run starts,
	// played forward from how long recent runs of each experiment took and
	// the scheduling rules (0: not known yet).
	Wait    float64 `json:"wait_s,omitempty"`
	Backend string  `json:"backend,omitempty"`

	// phase, log, result (verdict), error (message)
	Name    string `json:"name,omitempty"` // phase id, e.g. "register"
	Message string `json:"message,omitempty"`
	Level   string `json:"level,omitempty"` // log: info|warn|stderr
	// Messages is Message per language ("zh", "en") for text a learner
	// reads (phase titles, verdicts, explanations). Message stays the
	// English (or only) text, so a client that knows no language still has
	// something to show; the widget prefers Messages[lang].
	Messages Text `json:"messages,omitempty"`

	// metric: one point of a live series
	Series string  `json:"series,omitempty"`
	X      float64 `json:"x,omitempty"`
	Y      float64 `json:"y,omitempty"`
	Unit   string  `json:"unit,omitempty"`

	// table
	Table *Table `json:"table,omitempty"`

	// result: verdict plus named figures the lesson can refer to
	OK      *bool              `json:"ok,omitempty"`
	Figures map[string]float64 `json:"figures,omitempty"`

	// error
	Errno     int    `json:"errno,omitempty"`
	ErrnoName string `json:"errno_name,omitempty"` // e.g. "ENOMEM"
	Call      string `json:"call,omitempty"`       // e.g. "mlock", "ibv_reg_mr"

	// step (interactive runs)
	Code   string   `json:"code,omitempty"`   // the C code of the call, with the values used
	Detail Text     `json:"detail,omitempty"` // what the result means, per language
	Offers []string `json:"offers,omitempty"` // commands the run accepts next

	// capture
	Capture *Capture `json:"capture,omitempty"`
}

// Capture is a bounded packet capture made during a run (sandbox/capture
// makes and decodes it). Pcap is a classic pcap file; Hosts names the IP
// addresses in it ("10.0.0.2" → "rxe1 (requester)").
type Capture struct {
	Iface   string            `json:"iface"`
	Packets int               `json:"packets"`
	Dropped int               `json:"dropped,omitempty"` // seen but over the limits, not kept
	Hosts   map[string]string `json:"hosts,omitempty"`
	Pcap    []byte            `json:"pcap"`
}

// Table is a small result table. Title, Columns and Rows are English (or
// language-free); I18n holds the same table in other languages ("zh"),
// built with NewTable/AddRow (table.go). Readers pick In(lang).
type Table struct {
	Title   string                `json:"title,omitempty"`
	Columns []string              `json:"columns"`
	Rows    [][]string            `json:"rows"`
	I18n    map[string]*TableText `json:"i18n,omitempty"`
}

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

// Params are validated param values, keyed by name (int64, string or bool).
type Params map[string]any

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
	Timeout time.Duration `json:"-"` // hard limit of one run, enforced by the runner

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

// Class is e's sharing class: Sharing, or Timing when it is not set.
func (e *Experiment) Class() Sharing {
	if e.Sharing == Shareable {
		return Shareable
	}
	return Timing
}

// Request is what a backend hands to `labserver agent`: one run of one experiment.
type Request struct {
	RunID      string `json:"run_id"`
	Experiment string `json:"experiment"`
	Params     Params `json:"params"`
}

// Backend runs agent requests somewhere: "host" (a child process), "vm"
// (the Soft-RoCE guest) or "none".
type Backend interface {
	// Name is "host", "vm" or "none".
	Name() string
	// Lab describes the backend's current state for GET /api/lab.
	Lab(ctx context.Context) Lab
	// Exec runs one request to completion, passing every event to emit.
	// Cancelling ctx must stop the run and kill everything it started.
	Exec(ctx context.Context, req Request, emit func(Event)) error
}

// Unavailable is the capability of a backend that can run nothing on this
// machine (NoBackend): the runner fails its runs at once with the reason
// Unavailable returns, without calling Exec.
type Unavailable interface {
	Unavailable() string
}

// Lab is the state of a backend, the body of GET /api/lab.
type Lab struct {
	Backend string   `json:"backend"`
	State   LabState `json:"state"`
	Reason  string   `json:"reason,omitempty"`
	Kernel  string   `json:"kernel,omitempty"`
	Accel   string   `json:"accel,omitempty"` // kvm|tcg (vm backend)
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

// Sink receives everything the runner decides and everything a run emits, in
// order per run. The web layer implements it: it stores, then fans out.
type Sink interface {
	RunEvent(runID string, ev Event)
}
