package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmalab/rdmalab/internal/lineio"
	"github.com/rdmalab/rdmalab/internal/textclip"
)

// The agent protocol, spoken on an agent child's stdin and stdout. It is
// the same on the host (the host backend's child) and in the Soft-RoCE
// guest (the guest server's child: the request reaches the guest server
// inside a vmproto envelope over virtio-serial, and the server hands the
// same Request to its agent child on stdin):
//
//   - the backend writes one Request as a single JSON line;
//   - the agent validates it again, runs the experiment and writes each
//     Event as one JSON line (no Seq: the runner numbers events);
//   - the agent ends the run with an end line, `{"end":{}}` when done or
//     `{"end":{"kind":"failed","error":REASON}}` (End, the one encoding of
//     a run's end on every hop); a failure is preceded by an error Event
//     (the experiment's own when it returned a Reported error, else a
//     generic one built from the error). That final line is protocol, not
//     forwarded: the runner emits the run's own final status.
//
// ServeAgent handles exactly one request and never reads past its newline
// (an interactive run's commands follow it on the same stream); every run
// gets a fresh agent process, on the host and in the guest alike.

// EnvHelper, when set in the environment, turns the agent binary into the
// named hidden helper (see HelperFunc and agentproc.Helper).
const EnvHelper = "RDMALAB_AGENT_HELPER"

// DefaultMaxLine caps one JSON line of the protocol. An event larger than
// this is a broken agent, not data.
const DefaultMaxLine = 1 << 20

// AgentFailure is a run the agent finished as failed. The reason has
// already been emitted as an error event.
type AgentFailure struct {
	Message string
	// Reason is the failure in both languages when the agent had it so.
	Reason *Reason
}

func (e *AgentFailure) Error() string { return e.Message }

// Unwrap is the Reason, if any.
func (e *AgentFailure) Unwrap() error {
	if e.Reason == nil {
		return nil
	}
	return e.Reason
}

// ProtocolError is agent output that does not follow the protocol
// (garbage, an oversized line, a stream that ends early).
type ProtocolError struct {
	Reason string
}

func (e *ProtocolError) Error() string { return e.Reason }

// ServeAgent reads one Request from in, runs it with the experiment from
// reg and writes the events to out. It returns io.EOF when in has no more
// requests, an *AgentFailure when the run failed (already reported on out),
// or a write error. If EnvHelper is set it runs that helper instead.
func ServeAgent(ctx context.Context, reg *Registry, in io.Reader, out io.Writer) error {
	if name := os.Getenv(EnvHelper); name != "" {
		return RunHelper(ctx, reg, name, in, out)
	}
	line, err := readLine(in, DefaultMaxLine)
	if err != nil {
		return err
	}
	w := &agentWriter{out: out}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		return w.finish(fmt.Errorf("agent: the request is not valid JSON: %w", err))
	}
	exp := reg.Get(req.Experiment)
	if exp == nil {
		return w.finish(fmt.Errorf("agent: %w %q", ErrUnknownExperiment, req.Experiment))
	}
	// Validate again: the agent trusts nothing that crossed a process or
	// VM boundary.
	params, err := exp.Validate(map[string]any(req.Params))
	if err != nil {
		return w.finish(fmt.Errorf("agent: %w", err))
	}
	if exp.Timeout > 0 {
		// The runner enforces the limit by killing us; this is the backstop
		// for an agent whose parent went away.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, exp.Timeout)
		defer cancel()
	}
	if exp.Interactive() {
		ctx = WithCommands(ctx, agentCommands(ctx, exp, in, w))
	}
	return w.finish(runExperiment(ctx, exp, params, w))
}

func runExperiment(ctx context.Context, exp *Experiment, p Params, em Emitter) (err error) {
	defer func() {
		if v := recover(); v != nil {
			slog.Error("experiment panicked", "experiment", exp.ID, "panic", v, "stack", string(debug.Stack()))
			err = &Reason{Kind: "crashed", Text: Detail("experiment "+exp.ID+" crashed", "实验 "+exp.ID+" 崩溃了", fmt.Sprint(v))}
		}
	}()
	if err := exp.Run(ctx, p, em); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			zh := "实验 " + exp.ID + " 已停止：运行被取消"
			if errors.Is(err, context.DeadlineExceeded) {
				zh = "实验 " + exp.ID + " 已停止：到了时间上限"
			}
			return &Reason{Kind: "stopped", Text: Text{"en": fmt.Sprintf("experiment %s stopped: %v", exp.ID, err), "zh": zh}}
		}
		return err
	}
	return nil
}

// agentWriter writes events as JSON lines; safe for concurrent use.
type agentWriter struct {
	mu  sync.Mutex
	out io.Writer
	err error
}

// Emit implements Emitter. Experiments do not emit status events (the
// runner owns the lifecycle), so those are turned into log lines.
func (w *agentWriter) Emit(ev Event) {
	if ev.Type == EvStatus {
		ev = Event{Type: EvLog, Level: "warn", Message: "experiment tried to emit a status event: " + string(ev.Status)}
	}
	w.write(ev)
}

func (w *agentWriter) write(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	ev.Seq = 0
	b, err := json.Marshal(ev)
	if err != nil {
		b, _ = json.Marshal(Event{Type: EvLog, Level: "warn", Time: ev.Time, Message: "unencodable event: " + err.Error()})
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	_, w.err = w.out.Write(b)
}

// finish writes the run's end line (after the error event for a failure)
// and returns what ServeAgent returns.
func (w *agentWriter) finish(runErr error) error {
	end := End{}
	if runErr != nil {
		if !IsReported(runErr) {
			w.write(ErrorEvent("", runErr))
		}
		end = EndOf(runErr, false)
		end.Kind = EndFailed
	}
	b, _ := json.Marshal(Frame{End: &end})
	w.mu.Lock()
	if w.err == nil {
		_, w.err = w.out.Write(append(b, '\n'))
	}
	w.mu.Unlock()
	w.mu.Lock()
	werr := w.err
	w.mu.Unlock()
	if werr != nil {
		return fmt.Errorf("agent: write events: %w", werr)
	}
	if runErr != nil {
		return &AgentFailure{Message: runErr.Error()}
	}
	return nil
}

// Reported marks err as already explained to the learner: the experiment
// emitted its own (bilingual) error event before returning it, so the agent
// must not add a second, generic one. The run still fails with err's
// message. Reported(nil) is nil.
func Reported(err error) error {
	if err == nil {
		return nil
	}
	return &reportedError{err: err}
}

// IsReported reports whether err, or an error it wraps, came from Reported.
func IsReported(err error) bool {
	var r *reportedError
	return errors.As(err, &r)
}

type reportedError struct{ err error }

func (r *reportedError) Error() string { return r.err.Error() }
func (r *reportedError) Unwrap() error { return r.err }

// ErrorEvent builds an error event from err, filling Errno, ErrnoName and
// Call when err wraps a system call error. call overrides the call name.
func ErrorEvent(call string, err error) Event {
	ev := Event{Type: EvError, Message: err.Error(), Call: call}
	var r *Reason
	if errors.As(err, &r) { // written in both languages where it was known
		ev.Messages = FailureText(err)
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		ev.Errno = int(errno)
		ev.ErrnoName = unix.ErrnoName(errno)
	}
	if ev.Call == "" {
		var se *os.SyscallError
		var pe *os.PathError
		switch {
		case errors.As(err, &se):
			ev.Call = se.Syscall
		case errors.As(err, &pe):
			ev.Call = pe.Op
		}
	}
	return ev
}

// readLine reads one '\n'-terminated line without reading past it, so the
// caller's stream stays positioned at the next request.
func readLine(in io.Reader, max int) ([]byte, error) {
	br, ok := in.(io.ByteReader)
	if !ok {
		br = &byteReader{r: in}
	}
	var line []byte
	for {
		c, err := br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && len(bytes.TrimSpace(line)) > 0 {
				return line, nil
			}
			return nil, err
		}
		if c == '\n' {
			if len(bytes.TrimSpace(line)) == 0 {
				line = line[:0]
				continue // blank lines between requests are harmless
			}
			return line, nil
		}
		if len(line) >= max {
			return nil, fmt.Errorf("agent: request line longer than %d bytes", max)
		}
		line = append(line, c)
	}
}

type byteReader struct {
	r   io.Reader
	buf [1]byte
}

func (b *byteReader) ReadByte() (byte, error) {
	for {
		n, err := b.r.Read(b.buf[:])
		if n == 1 {
			return b.buf[0], nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// AgentReader decodes an agent's output stream (agentproc.Agent and
// InProcess make one per run).
type AgentReader struct {
	br  *bufio.Reader
	max int
}

// NewAgentReader reads events from r, refusing lines over maxLine bytes
// (DefaultMaxLine when maxLine <= 0).
func NewAgentReader(r io.Reader, maxLine int) *AgentReader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &AgentReader{br: bufio.NewReaderSize(r, 64<<10), max: maxLine}
}

// ReadRun forwards every event of one run to emit until the agent's end
// line. It returns nil when the run is done, an *AgentFailure when the
// agent reported failure, a *ProtocolError for output that is not the
// protocol (including a stream that ends first), or the read error.
func (a *AgentReader) ReadRun(emit func(Event)) error {
	for {
		line, err := a.line()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return &ProtocolError{Reason: "the agent stopped before finishing the run"}
			}
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var ev Event
		err = json.Unmarshal(line, &ev)
		if err == nil && ev.Type == "" {
			var f Frame
			if json.Unmarshal(line, &f) == nil && f.End != nil {
				if k := f.End.Kind; k != EndDone && k != EndFailed {
					return &ProtocolError{Reason: fmt.Sprintf("the agent ended the run with kind %q", textclip.Bytes(string(k), 40))}
				}
				return f.End.Err()
			}
		}
		if err != nil || ev.Type == "" {
			return &ProtocolError{Reason: fmt.Sprintf("the agent printed something that is not an event: %q", textclip.BytesOf(line, 120))}
		}
		if ev.Type == EvStatus {
			continue // the runner owns the lifecycle
		}
		ev.Seq = 0
		if ev.Time.IsZero() {
			ev.Time = time.Now()
		}
		emit(ev)
	}
}

func (a *AgentReader) line() ([]byte, error) {
	line, err := lineio.Read(a.br, a.max)
	if errors.Is(err, lineio.ErrLongLine) {
		return nil, &ProtocolError{Reason: fmt.Sprintf("the agent printed a line longer than %d bytes", a.max)}
	}
	return line, err
}

// RunHelper runs the hidden helper name (see HelperFunc).
func RunHelper(ctx context.Context, reg *Registry, name string, in io.Reader, out io.Writer) error {
	fn := reg.helper(name)
	if fn == nil {
		return fmt.Errorf("agent: unknown helper %q", name)
	}
	return fn(ctx, in, out)
}
