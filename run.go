// Package rdmalab is the lab's domain, at the root of the module (in the
// spirit of benbjohnson/wtf): the record of a run — its info and params, its
// status, the events it emits with the tables and captures they carry — and
// the figures that cross from one experiment to a lesson page. It is a leaf:
// it starts nothing and imports nothing of the lab but internal/i18n, so the
// runner (package sandbox), the agents, the store and the web all speak it
// without depending on each other. Package sandbox names the run types by
// alias (sandbox.Event, sandbox.Status…).
package rdmalab

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/rdmalab/rdmalab/internal/i18n"
)

// Text is the shared localized text.
type Text = i18n.Text

// Params are validated param values, keyed by name (int64, string or bool).
type Params map[string]any

// RunInfo is a run as the runner's Submit sees it and the store records it.
type RunInfo struct {
	ID         string    `json:"id"`
	Learner    string    `json:"-"`
	Experiment string    `json:"experiment"`
	Params     Params    `json:"params"`
	Status     Status    `json:"status"`
	Position   int       `json:"position,omitempty"` // 1 = next to start
	Backend    string    `json:"backend,omitempty"`
	Created    time.Time `json:"created"`
	Started    time.Time `json:"started,omitzero"` // when it began to run; zero while queued
}

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

// RunEventsMax and RunBytesMax bound one run's events where they enter
// the lab server from something it does not trust — a guest
// (machines/vm/bounds.go) or a worker (runs/fleet/bounds.go) — in events
// and in bytes of their encoded lines; past either the run fails. Every
// byte of a run is paid several times (the server's memory while it is
// stored and streamed, the database, the replay page that shows it), so
// the bound is what the largest legitimate run needs with room to spare:
// a capture event is at most about 350 KB (256 KiB of packets in base64),
// a program's output 64 KiB, the busiest sweep a few thousand small
// events. At 64 MiB one hostile run cost the server 237 MB of memory,
// the database 104 MB and its replay page 67 MB (issue 43).
const (
	RunEventsMax = 20_000
	RunBytesMax  = 8 << 20
)

// EventCost is what an event's line counts against RunBytesMax: its
// length, plus what the lab's own encoding of it adds. The lab server
// stores and streams each event as encoding/json writes it, which escapes
// <, > and & as \u003c (6 bytes for 1), U+2028 and U+2029 likewise (6 for
// 3) and writes each invalid byte as \ufffd (6 for 1); a hostile agent
// may send them raw (valid JSON), and counted raw, 8 MiB of '<' became
// 46 MiB in the database and the replay and 97 MiB of the server's heap.
func EventCost(line []byte) int {
	n := len(line)
	for i := 0; i < len(line); {
		c := line[i]
		if c < utf8.RuneSelf {
			if c == '<' || c == '>' || c == '&' {
				n += 5
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(line[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 5
		case r == '\u2028' || r == '\u2029':
			n += 3
		}
		i += size
	}
	return n
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
	// Expected marks an error the experiment provoked on purpose (an
	// inline post above the threshold): the page shows it as the intended
	// outcome, not as a failure of the run.
	Expected bool   `json:"expected,omitempty"`
	Call     string `json:"call,omitempty"` // e.g. "mlock", "ibv_reg_mr"

	// step (interactive runs)
	Code   string   `json:"code,omitempty"`   // the C code of the call, with the values used
	Detail Text     `json:"detail,omitempty"` // what the result means, per language
	Offers []string `json:"offers,omitempty"` // commands the run accepts next

	// capture
	Capture *Capture `json:"capture,omitempty"`
}

// Capture is a bounded packet capture made during a run (sandbox/capture
// makes and decodes it). Pcap is a classic pcap file; Hosts names the IP
// addresses in it ("10.0.0.2" → "rxe1 (requester)"), in English; HostsI18n
// names them in other languages ("zh" → "10.0.0.2" → "rxe1（请求方）").
type Capture struct {
	Iface     string                       `json:"iface"`
	Packets   int                          `json:"packets"`
	Dropped   int                          `json:"dropped,omitempty"` // seen but over the limits, not kept
	Hosts     map[string]string            `json:"hosts,omitempty"`
	HostsI18n map[string]map[string]string `json:"hosts_i18n,omitempty"`
	Pcap      []byte                       `json:"pcap"`
}

// HostsIn is Hosts in lang (English where lang has no names).
func (c *Capture) HostsIn(lang string) map[string]string {
	if h, ok := c.HostsI18n[lang]; ok && len(h) > 0 {
		return h
	}
	return c.Hosts
}

// Table is a small result table. Title, Columns and Rows are English (or
// language-free); I18n holds the same table in other languages ("zh"),
// built with NewTable/AddRow. Readers pick In(lang).
type Table struct {
	Title   string                `json:"title,omitempty"`
	Columns []string              `json:"columns"`
	Rows    [][]string            `json:"rows"`
	I18n    map[string]*TableText `json:"i18n,omitempty"`
}

// MarshalJSON writes a metric's x and y even when they are 0: a flat line at
// zero (the receiver's CPU during RDMA WRITEs) is the measurement a chart
// exists to show, and `omitempty` would drop every such point. Other event
// types keep their compact form.
func (ev Event) MarshalJSON() ([]byte, error) {
	type plain Event // no methods: no recursion
	if ev.Type != EvMetric {
		return json.Marshal(plain(ev))
	}
	return json.Marshal(struct {
		plain
		X float64 `json:"x"`
		Y float64 `json:"y"`
	}{plain(ev), ev.X, ev.Y})
}

// TableText is a table's words in one language, the same shape as the
// Table it belongs to. An empty part falls back to the English one.
type TableText struct {
	Title   string     `json:"title,omitempty"`
	Columns []string   `json:"columns,omitempty"`
	Rows    [][]string `json:"rows,omitempty"`
}

// Same is text that reads the same in every language: figures, units,
// device and counter names, code.
func Same(s string) Text { return Text{"en": s, "zh": s} }

// NewTable starts a table whose title and column headers a learner reads,
// one Text per language. Add rows with AddRow. The languages are those of
// the title.
//
//	t := sandbox.NewTable(sandbox.Text{"en": "mlock attempts", "zh": "mlock 尝试"},
//		sandbox.Text{"en": "attempt", "zh": "尝试"}, sandbox.Same("RLIMIT_MEMLOCK"))
//	t.AddRow(sandbox.Same("1"), sandbox.Text{"en": "refused", "zh": "被拒绝"})
func NewTable(title Text, columns ...Text) *Table {
	t := &Table{Title: title["en"], Columns: make([]string, len(columns)), Rows: [][]string{}}
	for i, c := range columns {
		t.Columns[i] = c["en"]
	}
	for lang, s := range title {
		if lang == "en" {
			continue
		}
		tt := &TableText{Title: s, Columns: make([]string, len(columns))}
		for i, c := range columns {
			tt.Columns[i] = c.Get(lang)
		}
		if t.I18n == nil {
			t.I18n = map[string]*TableText{}
		}
		t.I18n[lang] = tt
	}
	return t
}

// AddRow appends one row, a Text per cell (Same for language-free cells).
func (t *Table) AddRow(cells ...Text) {
	en := make([]string, len(cells))
	for i, c := range cells {
		en[i] = c["en"]
	}
	t.Rows = append(t.Rows, en)
	for lang, tt := range t.I18n {
		row := make([]string, len(cells))
		for i, c := range cells {
			row[i] = c.Get(lang)
		}
		tt.Rows = append(tt.Rows, row)
	}
}

// In returns the table in lang: its I18n version where there is one (part
// by part), else the table itself.
func (t *Table) In(lang string) *Table {
	if t == nil || t.I18n[lang] == nil {
		return t
	}
	tt := t.I18n[lang]
	out := &Table{Title: t.Title, Columns: t.Columns, Rows: t.Rows}
	if tt.Title != "" {
		out.Title = tt.Title
	}
	if len(tt.Columns) == len(t.Columns) {
		out.Columns = tt.Columns
	}
	if len(tt.Rows) == len(t.Rows) {
		out.Rows = tt.Rows
	}
	return out
}
