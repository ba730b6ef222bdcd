package vmguest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vmproto"
	"github.com/rdmalab/rdmalab/sandbox"
)

// hostSide drives a GuestServer as the host does: lines in, lines out.
type hostSide struct {
	t   *testing.T
	in  *io.PipeWriter // to the guest
	out *bufio.Reader  // from the guest
}

func (h *hostSide) send(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

func (h *hostSide) sendMsg(m vmproto.HostMsg) {
	h.t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		h.t.Fatal(err)
	}
	h.send(string(b))
}

func (h *hostSide) next() vmproto.GuestMsg {
	h.t.Helper()
	line, err := h.out.ReadBytes('\n')
	if err != nil {
		h.t.Fatalf("reading the guest: %v", err)
	}
	var m vmproto.GuestMsg
	if err := json.Unmarshal(line, &m); err != nil {
		h.t.Fatalf("the guest wrote %q: %v", line, err)
	}
	return m
}

// closeAndWait closes the host's end and waits for Serve to return nil.
func (h *hostSide) closeAndWait(done <-chan error) {
	h.t.Helper()
	h.in.Close()
	select {
	case err := <-done:
		if err != nil {
			h.t.Errorf("Serve at the host's EOF: %v, want nil", err)
		}
	case <-time.After(time.Minute):
		h.t.Fatal("Serve did not return at EOF")
	}
}

// serve starts s on a pipe pair; Serve's error arrives on the channel when
// the host closes its end.
func serve(t *testing.T, s *GuestServer) (*hostSide, <-chan error) {
	toGuestR, toGuestW := io.Pipe()
	fromGuestR, fromGuestW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- s.Serve(context.Background(), struct {
			io.Reader
			io.Writer
		}{toGuestR, fromGuestW})
		fromGuestW.Close()
	}()
	t.Cleanup(func() { toGuestW.Close(); fromGuestR.Close() })
	return &hostSide{t: t, in: toGuestW, out: bufio.NewReader(fromGuestR)}, done
}

// TestGuestServerProtocol: the guest's port server says hello first,
// answers what the host may send and refuses what it may not — a line that
// is not JSON, an unknown op, a run without a request, an overlong line, a
// second run while one runs — with a bad-op or busy end, and keeps serving;
// a run gets the request's bytes as they came and is cancelled by id.
func TestGuestServerProtocol(t *testing.T) {
	started := make(chan *sandbox.Session, 1)
	s := &GuestServer{
		Hello: vmproto.Hello{Kernel: "6.1.0-test"},
		Lab: func(context.Context) sandbox.Lab {
			return sandbox.Lab{Backend: "vm", State: sandbox.LabReady}
		},
		Run: func(ctx context.Context, s *sandbox.Session) error {
			started <- s // first: the pipe to the host holds nothing unread
			s.Emit(sandbox.Event{Type: sandbox.EvLog, Message: "started"})
			<-ctx.Done()
			return ctx.Err()
		},
	}
	h, done := serve(t, s)
	if m := h.next(); m.Hello == nil || m.Hello.Kernel != "6.1.0-test" {
		t.Fatalf("first line %+v, want the hello", m)
	}
	badOp := func(what, wantErr string) {
		t.Helper()
		m := h.next()
		if m.End == nil || m.End.Kind != vmproto.EndBadOp || !strings.Contains(m.End.Error, wantErr) {
			t.Fatalf("%s: answered %+v, want a bad-op end saying %q", what, m, wantErr)
		}
	}
	h.sendMsg(vmproto.HostMsg{ID: 1, Op: vmproto.OpPing})
	if m := h.next(); m.ID != 1 || m.End == nil || m.End.Kind != "" {
		t.Fatalf("ping: %+v", m)
	}
	h.send(`{"id": 2, "op": `)
	badOp("a broken line", "not a request")
	h.sendMsg(vmproto.HostMsg{ID: 3, Op: "format-disk"})
	badOp("an unknown op", `unknown op "format-disk"`)
	h.sendMsg(vmproto.HostMsg{ID: 4, Op: vmproto.OpRun})
	badOp("a run without its request", "run without a request")
	h.send(strings.Repeat("x", sandbox.DefaultMaxLine+10))
	badOp("an overlong line", "")
	h.sendMsg(vmproto.HostMsg{ID: 5, Op: vmproto.OpLab})
	if m := h.next(); m.ID != 5 || m.Lab == nil || m.Lab.State != sandbox.LabReady {
		t.Fatalf("lab: %+v", m)
	}
	if m := h.next(); m.ID != 5 || m.End == nil {
		t.Fatalf("lab's end: %+v", m)
	}

	req := `{"experiment":"pingpong","params":{"iters":9007199254740993}}`
	h.sendMsg(vmproto.HostMsg{ID: 6, Op: vmproto.OpRun, Req: json.RawMessage(req)})
	var sess *sandbox.Session
	select {
	case sess = <-started:
	case <-time.After(time.Minute):
		t.Fatal("the run did not start")
	}
	if string(sess.Request) != req {
		t.Errorf("the run got %s; want the request's bytes as they came (an int64 beyond 2^53 intact)", sess.Request)
	}
	if m := h.next(); m.ID != 6 || m.Event == nil || m.Event.Message != "started" {
		t.Fatalf("the run's event: %+v", m)
	}
	h.sendMsg(vmproto.HostMsg{ID: 7, Op: vmproto.OpRun, Req: json.RawMessage(req)})
	if m := h.next(); m.ID != 7 || m.End == nil || m.End.Kind != vmproto.EndBusy {
		t.Fatalf("a second run while one runs: %+v, want busy", m)
	}
	h.sendMsg(vmproto.HostMsg{ID: 8, Op: vmproto.OpCancel, Target: 6})
	ends := map[uint64]sandbox.End{}
	for len(ends) < 2 {
		m := h.next()
		if m.End == nil {
			t.Fatalf("while cancelling: %+v", m)
		}
		ends[m.ID] = *m.End
	}
	if ends[6].Kind != sandbox.EndCancelled || ends[8].Kind != "" {
		t.Fatalf("cancel: run ended %+v, cancel answered %+v", ends[6], ends[8])
	}
	h.closeAndWait(done)
}

// echoOps claims the op "echo": it sends the request's data back and ends
// it from a goroutine of the server's; Cancel reports its target.
type echoOps struct{ cancelled chan uint64 }

func (o *echoOps) Handle(ctx context.Context, m vmproto.HostMsg, ch Channel) bool {
	if m.Op != "echo" {
		return false
	}
	ch.Go(func() {
		_ = ch.Data(m.Data)
		_ = ch.End(sandbox.End{})
	})
	return true
}

func (o *echoOps) Cancel(target uint64) { o.cancelled <- target }

// TestGuestServerOps: an op the server does not serve goes to its Ops,
// whose lines carry the request's id; an op Ops does not claim either is
// refused as unknown; a cancel reaches Ops with its target; Serve waits
// for what Ops started.
func TestGuestServerOps(t *testing.T) {
	ops := &echoOps{cancelled: make(chan uint64, 1)}
	h, done := serve(t, &GuestServer{Hello: vmproto.Hello{Kernel: "k"}, Ops: ops})
	if m := h.next(); m.Hello == nil {
		t.Fatalf("first line %+v, want the hello", m)
	}
	h.sendMsg(vmproto.HostMsg{ID: 5, Op: "echo", Data: []byte("hi")})
	if m := h.next(); m.ID != 5 || string(m.Data) != "hi" {
		t.Fatalf("echo's data: %+v", m)
	}
	if m := h.next(); m.ID != 5 || m.End == nil || m.End.Kind != "" {
		t.Fatalf("echo's end: %+v", m)
	}
	h.sendMsg(vmproto.HostMsg{ID: 6, Op: "format-disk"})
	if m := h.next(); m.ID != 6 || m.End == nil || m.End.Kind != vmproto.EndBadOp {
		t.Fatalf("an op nobody claims: %+v, want bad-op", m)
	}
	h.sendMsg(vmproto.HostMsg{ID: 7, Op: vmproto.OpCancel, Target: 5})
	select {
	case got := <-ops.cancelled:
		if got != 5 {
			t.Errorf("Ops was asked to cancel %d, want 5", got)
		}
	case <-time.After(time.Minute):
		t.Fatal("the cancel did not reach Ops")
	}
	if m := h.next(); m.ID != 7 || m.End == nil {
		t.Fatalf("cancel's answer: %+v", m)
	}
	h.closeAndWait(done)
}
