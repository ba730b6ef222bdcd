package vm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"

	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vmguest"
	"github.com/rdmalab/rdmalab/machines/vmproto"
	"github.com/rdmalab/rdmalab/sandbox"
)

// These tests drive the host's client and the guest's server over an
// in-memory pipe: the real protocol code on both ends, without QEMU.

// pair connects a client to a GuestServer with the given run function.
func pair(t *testing.T, run func(ctx context.Context, s *sandbox.Session) error) (*client, func()) {
	t.Helper()
	hostEnd, guestEnd := net.Pipe()
	srv := &vmguest.GuestServer{
		Run: run,
		Lab: func(context.Context) sandbox.Lab {
			return sandbox.Lab{State: sandbox.LabReady, Devices: []sandbox.Device{{Name: "rxe0"}}}
		},
		Hello: vmproto.Hello{Kernel: "test"},
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, guestEnd) }()
	c := newClient(hostEnd, newTestLogger(t), nil, clientOpts{})
	select {
	case h := <-c.hello:
		if h.Kernel != "test" {
			t.Fatalf("hello %+v", h)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no hello")
	}
	return c, func() {
		cancel()
		c.close(errors.New("test over"))
		guestEnd.Close()
		<-served
	}
}

func TestProtocolRunLabPing(t *testing.T) {
	c, done := pair(t, func(ctx context.Context, s *sandbox.Session) error {
		var req sandbox.Request
		if err := json.Unmarshal(s.Request, &req); err != nil {
			return err
		}
		s.Emit(sandbox.Event{Type: sandbox.EvLog, Message: "hello " + req.Experiment})
		if req.Experiment == "bad" {
			return &sandbox.AgentFailure{Message: "it failed"}
		}
		return nil
	})
	defer done()
	ctx := context.Background()
	var got []string
	err := c.call(ctx, vmproto.HostMsg{Op: vmproto.OpRun, Req: reqJSON(sandbox.Request{Experiment: "x"})}, func(ev sandbox.Event) { got = append(got, ev.Message) }, nil)
	if err != nil || len(got) != 1 || got[0] != "hello x" {
		t.Fatalf("run: err=%v events=%v", err, got)
	}
	err = c.call(ctx, vmproto.HostMsg{Op: vmproto.OpRun, Req: reqJSON(sandbox.Request{Experiment: "bad"})}, func(sandbox.Event) {}, nil)
	var af *sandbox.AgentFailure
	if !errors.As(err, &af) || af.Message != "it failed" {
		t.Fatalf("failed run: %v", err)
	}
	var lab sandbox.Lab
	if err := c.call(ctx, vmproto.HostMsg{Op: vmproto.OpLab}, nil, func(l sandbox.Lab) { lab = l }); err != nil || len(lab.Devices) != 1 {
		t.Fatalf("lab: %v %+v", err, lab)
	}
	if err := c.call(ctx, vmproto.HostMsg{Op: vmproto.OpPing}, nil, nil); err != nil {
		t.Fatalf("ping: %v", err)
	}
}

func reqJSON(req sandbox.Request) json.RawMessage { return sandbox.NewSession(req, nil, nil).Request }

// The run's request crosses the host client and the guest server as the
// runner encoded it: a params value no float64 holds (2^62+1) reaches the
// guest's agent child unchanged (the guest server once decoded params into
// float64s and encoded them again), and the commands of an interactive run
// follow it.
func TestProtocolRequestBytesUnchanged(t *testing.T) {
	got := make(chan []byte, 1)
	var cmds []string
	c, done := pair(t, func(ctx context.Context, s *sandbox.Session) error {
		got <- append([]byte(nil), s.Request...)
		for cmd := range s.Commands {
			cmds = append(cmds, cmd.Cmd)
		}
		return nil
	})
	defer done()
	ch := make(chan sandbox.Command, 2)
	ch <- sandbox.Command{Cmd: "next"}
	ch <- sandbox.Command{Cmd: "finish"}
	close(ch)
	ses := sandbox.NewSession(sandbox.Request{RunID: "r1", Experiment: "x", Params: sandbox.Params{"size": int64(1<<62 + 1), "mode": "a"}}, ch, nil)
	g := &Guest{client: c}
	if err := g.Run(context.Background(), ses); err != nil {
		t.Fatal(err)
	}
	b := <-got
	if string(b) != string(ses.Request) {
		t.Fatalf("the guest's agent got %s, the runner sent %s", b, ses.Request)
	}
	if !strings.Contains(string(b), "4611686018427387905") {
		t.Fatalf("request %s lost the int64", b)
	}
	if strings.Join(cmds, ",") != "next,finish" {
		t.Fatalf("commands in the guest %v, want next,finish", cmds)
	}
}

// A ping is answered while a run is in flight, and cancelling the run
// stops it in the guest.
func TestProtocolPingDuringRunAndCancel(t *testing.T) {
	started := make(chan struct{})
	stopped := make(chan error, 1)
	c, done := pair(t, func(ctx context.Context, s *sandbox.Session) error {
		s.Emit(sandbox.Event{Type: sandbox.EvPhase, Name: "start"})
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return ctx.Err()
	})
	defer done()
	rctx, rcancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() {
		runErr <- c.call(rctx, vmproto.HostMsg{Op: vmproto.OpRun, Req: reqJSON(sandbox.Request{Experiment: "long"})}, func(sandbox.Event) {}, nil)
	}()
	<-started
	if err := c.call(context.Background(), vmproto.HostMsg{Op: vmproto.OpPing}, nil, nil); err != nil {
		t.Fatalf("ping during a run: %v", err)
	}
	// A second run while one is in flight is refused, not queued.
	err := c.call(context.Background(), vmproto.HostMsg{Op: vmproto.OpRun, Req: reqJSON(sandbox.Request{Experiment: "x"})}, func(sandbox.Event) {}, nil)
	if err == nil || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("second run: %v", err)
	}
	rcancel()
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("guest run ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the guest did not stop the cancelled run")
	}
}

// fakeGuest is the guest end of the port driven line by line by a test.
type fakeGuest struct {
	conn net.Conn
	in   *bufio.Reader
}

func newFakeGuest(t *testing.T) (*client, *fakeGuest) {
	hostEnd, guestEnd := net.Pipe()
	c := newClient(hostEnd, newTestLogger(t), nil, clientOpts{})
	t.Cleanup(func() { c.close(errors.New("test over")); guestEnd.Close() })
	return c, &fakeGuest{conn: guestEnd, in: bufio.NewReader(guestEnd)}
}

func (g *fakeGuest) request(t *testing.T) vmproto.HostMsg {
	t.Helper()
	line, err := g.in.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var m vmproto.HostMsg
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func (g *fakeGuest) say(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(g.conn, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// A malformed line from the guest fails the run in flight with a protocol
// error; the connection and later calls keep working.
func TestProtocolMalformedLineFailsRun(t *testing.T) {
	c, g := newFakeGuest(t)
	runErr := make(chan error, 1)
	go func() {
		runErr <- c.call(context.Background(), vmproto.HostMsg{Op: vmproto.OpRun, Req: reqJSON(sandbox.Request{Experiment: "x"})}, func(sandbox.Event) {}, nil)
	}()
	req := g.request(t)
	g.say(t, `{"id":`+jsonID(req.ID)+`,"event":{"type":"log","message":"ok"}}`)
	g.say(t, `{"id":`+jsonID(req.ID)+`,"event":{"type":"log","mess`) // cut short
	var pe *sandbox.ProtocolError
	if err := <-runErr; !errors.As(err, &pe) || !strings.Contains(pe.Reason, "malformed") {
		t.Fatalf("run: %v, want a malformed-line protocol error", err)
	}
	if cancel := g.request(t); cancel.Op != vmproto.OpCancel || cancel.Target != req.ID {
		t.Fatalf("after a malformed line the host sent %+v, want a cancel of %d", cancel, req.ID)
	}
	pingErr := make(chan error, 1)
	go func() { pingErr <- c.call(context.Background(), vmproto.HostMsg{Op: vmproto.OpPing}, nil, nil) }()
	ping := g.request(t)
	g.say(t, `{"id":`+jsonID(req.ID)+`,"end":{}}`) // late end of the failed run: ignored
	g.say(t, `{"id":`+jsonID(ping.ID)+`,"end":{}}`)
	if err := <-pingErr; err != nil {
		t.Fatalf("ping after a malformed line: %v", err)
	}
}

// When the connection drops, every call in flight fails with the reason.
func TestProtocolConnectionLost(t *testing.T) {
	c, g := newFakeGuest(t)
	c.why = func(error) error { return errors.New("the Soft-RoCE guest died: test") }
	runErr := make(chan error, 1)
	go func() {
		runErr <- c.call(context.Background(), vmproto.HostMsg{Op: vmproto.OpRun, Req: reqJSON(sandbox.Request{})}, func(sandbox.Event) {}, nil)
	}()
	g.request(t)
	g.conn.Close()
	if err := <-runErr; err == nil || !strings.Contains(err.Error(), "died") {
		t.Fatalf("run: %v", err)
	}
	if err := c.call(context.Background(), vmproto.HostMsg{Op: vmproto.OpPing}, nil, nil); err == nil {
		t.Fatal("call on a lost connection succeeded")
	}
}

func jsonID(id uint64) string {
	b, _ := json.Marshal(id)
	return string(b)
}
