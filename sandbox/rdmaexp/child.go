package rdmaexp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rdmalab/rdmalab/internal/lineio"
	"github.com/rdmalab/rdmalab/internal/textclip"
	"github.com/rdmalab/rdmalab/machines/agentproc"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// child is a helper process (a re-executed agent) the experiment talks to
// with JSON lines: requests on its stdin, replies on its stdout. Its stderr
// (where libibverbs prints warnings) is forwarded as "stderr" log events.
type child struct {
	name    string
	p       *agentproc.Proc
	lines   chan []byte
	done    chan struct{} // closed when stdout ends
	stop    context.CancelFunc
	watched chan struct{} // closed when the helper is gone and its pipes drained
	res     agentproc.Result

	mu     sync.Mutex
	stderr []string
}

// startChild starts helper name and sends it req as the first line.
func startChild(ctx context.Context, name string, req any, emit sandbox.Emitter) (*child, error) {
	spec, err := agentproc.Helper(name)
	if err != nil {
		return nil, err
	}
	p, err := agentproc.Start(spec)
	if err != nil {
		return nil, fmt.Errorf("start helper %s: %w", name, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	c := &child{name: name, p: p, lines: make(chan []byte, 64), done: make(chan struct{}), stop: cancel, watched: make(chan struct{})}
	go func() {
		defer close(c.watched)
		c.res = p.Watch(cctx, agentproc.Output{
			Stdout: func(r io.Reader) error {
				defer close(c.done)
				br := bufio.NewReaderSize(r, 64<<10)
				for {
					line, err := lineio.Read(br, 1<<20)
					if err != nil {
						return err
					}
					select {
					case c.lines <- line:
					case <-cctx.Done():
						return cctx.Err()
					}
				}
			},
			Stderr: func(line string) {
				c.mu.Lock()
				if len(c.stderr) < 50 {
					c.stderr = append(c.stderr, line)
				}
				c.mu.Unlock()
				if emit != nil {
					emit.Emit(sandbox.Event{Type: sandbox.EvLog, Level: "stderr", Message: line})
				}
			},
		})
	}()
	if err := c.send(req); err != nil {
		c.kill()
		return nil, err
	}
	return c, nil
}

// Pid is the helper's process id (for /proc).
func (c *child) Pid() int { return c.p.Pid() }

func (c *child) send(v any) error {
	if err := c.p.Send(v); err != nil {
		return fmt.Errorf("helper %s: %w", c.name, err)
	}
	return nil
}

// helperMsg is one line from a helper: exactly one field is set.
type helperMsg struct {
	Error string          `json:"error,omitempty"`
	Call  string          `json:"call,omitempty"`  // with Error: the failed verbs call
	Errno int             `json:"errno,omitempty"` // with Call
	Data  json.RawMessage `json:"data,omitempty"`
}

// recv waits up to timeout for the helper's next reply and decodes its data
// into v. A helper that reports an error, exits or stays silent is an error.
func (c *child) recv(ctx context.Context, timeout time.Duration, v any) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line := <-c.lines:
		var m helperMsg
		if err := json.Unmarshal(line, &m); err != nil {
			return fmt.Errorf("helper %s printed %q: %w", c.name, textclip.BytesOf(line, 160), err)
		}
		if m.Error != "" {
			return helperError(m)
		}
		if v == nil {
			return nil
		}
		return json.Unmarshal(m.Data, v)
	case <-c.done:
		// drain a reply that raced with the end of stdout
		select {
		case line := <-c.lines:
			c.lines <- line
			return c.recv(ctx, timeout, v)
		default:
		}
		return fmt.Errorf("helper %s exited early%s", c.name, c.stderrTail())
	case <-t.C:
		return fmt.Errorf("helper %s said nothing for %s%s", c.name, timeout, c.stderrTail())
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *child) stderrTail() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.stderr) == 0 {
		return ""
	}
	return ": " + strings.Join(c.stderr[max(0, len(c.stderr)-3):], " | ")
}

// wait closes stdin and waits for the helper to exit.
func (c *child) wait() error {
	c.p.CloseInput()
	<-c.watched
	c.stop()
	c.p.Close()
	if err := c.res.Exit; err != nil {
		return fmt.Errorf("helper %s: %s%s", c.name, agentproc.Describe(err), c.stderrTail())
	}
	return nil
}

// kill ends the helper now (every error path; idempotent).
func (c *child) kill() {
	c.stop()
	c.p.CloseInput()
	<-c.watched
	c.p.Close()
}

// helperError turns a helper's error line back into an error; a failed
// verbs call stays a *verbs.Error so it is reported like one of ours.
func helperError(m helperMsg) error {
	if m.Call != "" && m.Errno != 0 {
		return fmt.Errorf("in the peer process: %w", &verbs.Error{Call: m.Call, Errno: syscall.Errno(m.Errno)})
	}
	return fmt.Errorf("in the peer process: %s", m.Error)
}

// helperIO is the helper's side of the line protocol.
type helperIO struct {
	dec *json.Decoder
	enc *json.Encoder
}

func newHelperIO(in io.Reader, out io.Writer) *helperIO {
	return &helperIO{dec: json.NewDecoder(in), enc: json.NewEncoder(out)}
}

// read blocks in read(2) on stdin until the parent's next line.
func (h *helperIO) read(v any) error {
	if err := h.dec.Decode(v); err != nil {
		return fmt.Errorf("read from the experiment: %w", err)
	}
	return nil
}

func (h *helperIO) reply(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return h.enc.Encode(helperMsg{Data: b})
}

// fail reports err to the parent (keeping a verbs call and errno) and
// returns it.
func (h *helperIO) fail(err error) error {
	m := helperMsg{Error: err.Error()}
	var ve *verbs.Error
	if errors.As(err, &ve) {
		m.Call, m.Errno = ve.Call, int(ve.Errno)
	}
	_ = h.enc.Encode(m)
	return err
}
