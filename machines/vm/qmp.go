package vm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// qmp is a minimal client of QEMU's machine protocol (QMP): one command at
// a time, asynchronous events skipped. The guest's snapshot and restore use
// it (stop, migrate, query-migrate, cont).
type qmp struct {
	conn net.Conn
	r    *bufio.Reader
}

// dialQMP connects to QEMU's QMP socket (retrying until QEMU has made it)
// and negotiates capabilities.
func dialQMP(ctx context.Context, path string, exited <-chan struct{}) (*qmp, error) {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "unix", path)
		if err == nil {
			q := &qmp{conn: c, r: bufio.NewReaderSize(c, 64<<10)}
			if _, err := q.read(ctx); err != nil { // the greeting
				c.Close()
				return nil, fmt.Errorf("qmp greeting: %w", err)
			}
			if _, err := q.do(ctx, "qmp_capabilities", nil); err != nil {
				c.Close()
				return nil, err
			}
			return q, nil
		}
		select {
		case <-exited:
			return nil, errors.New("qemu exited before its QMP socket answered")
		case <-ctx.Done():
			return nil, fmt.Errorf("qmp socket: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

type qmpReply struct {
	Return json.RawMessage `json:"return"`
	Error  *struct {
		Class string `json:"class"`
		Desc  string `json:"desc"`
	} `json:"error"`
	Event string          `json:"event"`
	QMP   json.RawMessage `json:"QMP"`
}

func (q *qmp) read(ctx context.Context) (qmpReply, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = q.conn.SetReadDeadline(dl)
	} else {
		_ = q.conn.SetReadDeadline(time.Time{})
	}
	line, err := q.r.ReadBytes('\n')
	if err != nil {
		return qmpReply{}, err
	}
	var r qmpReply
	if err := json.Unmarshal(line, &r); err != nil {
		return qmpReply{}, fmt.Errorf("qmp: %q: %w", qmpClip(line, 120), err)
	}
	return r, nil
}

// do runs one command and returns its "return" value.
func (q *qmp) do(ctx context.Context, cmd string, args any) (json.RawMessage, error) {
	m := map[string]any{"execute": cmd}
	if args != nil {
		m["arguments"] = args
	}
	b, _ := json.Marshal(m)
	_ = q.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := q.conn.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("qmp %s: %w", cmd, err)
	}
	for {
		r, err := q.read(ctx)
		if err != nil {
			return nil, fmt.Errorf("qmp %s: %w", cmd, err)
		}
		if r.Event != "" {
			continue
		}
		if r.Error != nil {
			return nil, fmt.Errorf("qmp %s: %s: %s", cmd, r.Error.Class, r.Error.Desc)
		}
		return r.Return, nil
	}
}

// status is the VM's run state: running, paused, inmigrate, postmigrate…
func (q *qmp) status(ctx context.Context) (string, error) {
	raw, err := q.do(ctx, "query-status", nil)
	if err != nil {
		return "", err
	}
	var s struct {
		Status string `json:"status"`
	}
	err = json.Unmarshal(raw, &s)
	return s.Status, err
}

func (q *qmp) close() { q.conn.Close() }

func qmpClip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// setCapability sets one migration capability (migrate-set-capabilities).
func (q *qmp) setCapability(ctx context.Context, name string, on bool) error {
	_, err := q.do(ctx, "migrate-set-capabilities", map[string]any{
		"capabilities": []map[string]any{{"capability": name, "state": on}}})
	return err
}
