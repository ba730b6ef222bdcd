package vm

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/machines/vmproto"
	"github.com/rdmalab/rdmalab/sandbox"
)

// These tests play a hostile guest (issue 28: a learner who took over their
// guest's agent) against the host's real client over a pipe: whatever it
// sends, the host's memory and log stay bounded, and a guest that breaks a
// bound is cut off.

// countingLog counts the log records written through it.
type countingLog struct {
	mu    sync.Mutex
	lines int
	bytes int
}

func (l *countingLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines += bytes.Count(p, []byte("\n"))
	l.bytes += len(p)
	return len(p), nil
}

func (l *countingLog) counts() (int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines, l.bytes
}

// hostileGuest is a guest end of the port that may write lines until the
// host stops reading: net.Pipe is synchronous, so every line that returns
// from write was read by the host.
type hostileGuest struct {
	*fakeGuest
	log *countingLog
}

func newHostileGuest(t *testing.T, o clientOpts) (*client, *hostileGuest) {
	hostEnd, guestEnd := net.Pipe()
	log := &countingLog{}
	c := newClient(hostEnd, slog.New(slog.NewTextHandler(log, nil)), nil, o)
	t.Cleanup(func() { c.close(errors.New("test over")); guestEnd.Close() })
	// The host's requests are read (and dropped) so its writes never block.
	g := &hostileGuest{fakeGuest: &fakeGuest{conn: guestEnd}, log: log}
	return c, g
}

// flood writes line n times (or until the host stops reading) and returns
// how many the host took.
func (g *hostileGuest) flood(line string, n int) int {
	b := []byte(line + "\n")
	for i := range n {
		_ = g.conn.SetWriteDeadline(time.Now().Add(20 * time.Second))
		if _, err := g.conn.Write(b); err != nil {
			return i
		}
	}
	return n
}

// readRequests reads the host's lines into a channel.
func (g *hostileGuest) readRequests() <-chan string {
	ch := make(chan string, 1024)
	go func() {
		defer close(ch)
		buf := make([]byte, 64<<10)
		var pending []byte
		for {
			n, err := g.conn.Read(buf)
			pending = append(pending, buf[:n]...)
			for {
				i := bytes.IndexByte(pending, '\n')
				if i < 0 {
					break
				}
				select {
				case ch <- string(pending[:i]):
				default:
				}
				pending = pending[i+1:]
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// verify runs a check on guest as package terminal does: a verify
// channel that keeps at most what a check may print.
func verify(guest *Guest) ([]byte, error) {
	var mu sync.Mutex
	var out []byte
	ch, err := guest.Open(vmproto.HostMsg{Op: vmproto.OpVerify, Data: []byte("true"), Lang: "en"},
		ChannelOpts{Data: func(b []byte) { mu.Lock(); out = append(out, b...); mu.Unlock() }, DataMax: vmproto.VerifyOutputMax})
	if err != nil {
		return nil, err
	}
	err = <-ch.End()
	mu.Lock()
	defer mu.Unlock()
	return out, err
}

// openTerm opens a shell's channel on guest as package terminal does.
func openTerm(t *testing.T, guest *Guest, out func([]byte)) *Channel {
	t.Helper()
	ch, err := guest.Open(vmproto.HostMsg{Op: vmproto.OpTerm, Rows: 24, Cols: 80}, ChannelOpts{Data: out, Rated: true})
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func dataLine(id uint64, n int) string {
	return fmt.Sprintf(`{"id":%d,"data":"%s"}`, id, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("A"), n)))
}

// A check answered with 1 MB data lines (what took labserver to 2.13 GB:
// the host appended every line): the host keeps at most the 4 KiB a check
// may print, reads no more than one such line, and discards the guest.
func TestHostileGuestCheckOutput(t *testing.T) {
	c, g := newHostileGuest(t, clientOpts{})
	reqs := g.readRequests()
	guest := &Guest{client: c}
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := verify(guest)
		done <- result{out, err}
	}()
	req := <-reqs
	if !strings.Contains(req, `"op":"verify"`) {
		t.Fatalf("the host sent %s", req)
	}
	took := g.flood(dataLine(1, 750_000), 200) // 200 lines of 1 MB
	g.flood(`{"id":1,"end":{}}`, 1)
	r := <-done
	t.Logf("host took %d of 200 1 MB lines; verify: %d bytes, err %v", took, len(r.out), r.err)
	if took > 2 {
		t.Errorf("the host read %d lines of 1 MB for one check (want the guest cut off at the first)", took)
	}
	if len(r.out) > vmproto.VerifyOutputMax {
		t.Errorf("the host kept %d bytes of check output (the cap is %d)", len(r.out), vmproto.VerifyOutputMax)
	}
	var pe *sandbox.ProtocolError
	if !errors.As(r.err, &pe) || !strings.Contains(pe.Reason, "broke a bound") {
		t.Errorf("verify: %v, want the guest discarded for a broken bound", r.err)
	}
	if !closedSoon(c.done) {
		t.Error("the channel to a guest that broke a bound is still open")
	}

	// Many small data lines add up the same way: 4 KiB in all, then cut off.
	c, g = newHostileGuest(t, clientOpts{})
	reqs = g.readRequests()
	guest = &Guest{client: c}
	go func() {
		out, err := verify(guest)
		done <- result{out, err}
	}()
	<-reqs
	took = g.flood(dataLine(1, 1000), 10_000)
	g.flood(`{"id":1,"end":{}}`, 1)
	r = <-done
	if took > 6 || len(r.out) > vmproto.VerifyOutputMax || r.err == nil {
		t.Errorf("small lines: the host took %d lines, kept %d bytes, err %v", took, len(r.out), r.err)
	}
}

// A flood of malformed lines (7.6 M warnings, 813 MB of log in 19 s) and
// of lines over the length cap: a few log lines, then the guest is cut off.
func TestHostileGuestMalformedFlood(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		n          int
	}{
		{"garbage", "this is not json {{{", 200_000},
		{"1 MB lines", strings.Repeat("x", 2<<20), 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, g := newHostileGuest(t, clientOpts{})
			go func() { _, _ = io.Copy(io.Discard, g.conn) }()
			took := g.flood(tc.line, tc.n)
			lines, size := g.log.counts()
			t.Logf("host took %d of %d lines; logged %d lines, %d bytes", took, tc.n, lines, size)
			if lines > 4 || size > 4<<10 {
				t.Errorf("the log took %d lines (%d bytes) for one guest's garbage", lines, size)
			}
			if took >= tc.n || !closedSoon(c.done) {
				t.Errorf("the host read all %d malformed lines and kept the channel", took)
			}
		})
	}
}

// A terminal's output in 1 MB lines (past the 256 KiB/s bound) or faster
// than its rate: the guest is cut off, the terminal ends with the reason.
func TestHostileGuestTerminalFlood(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
	}{{"1 MB lines", 750_000}, {"4 KiB lines, too fast", 4 << 10}} {
		t.Run(tc.name, func(t *testing.T) {
			c, g := newHostileGuest(t, clientOpts{})
			reqs := g.readRequests()
			var mu sync.Mutex
			got := 0
			term := openTerm(t, &Guest{client: c}, func(b []byte) { mu.Lock(); got += len(b); mu.Unlock() })
			<-reqs
			took := g.flood(dataLine(term.ID(), tc.size), 2000)
			g.flood(fmt.Sprintf(`{"id":%d,"end":{}}`, term.ID()), 1)
			var ended error
			select {
			case ended = <-term.End():
			case <-time.After(30 * time.Second):
				t.Fatal("the terminal did not end")
			}
			mu.Lock()
			defer mu.Unlock()
			t.Logf("host took %d lines, passed on %d bytes; terminal: %v", took, got, ended)
			if got > 2<<20 {
				t.Errorf("the host passed on %d bytes of a flooded terminal", got)
			}
			if !strings.Contains(fmt.Sprint(ended), "broke a bound") {
				t.Errorf("terminal ended with %v", ended)
			}
		})
	}
}

// An agent restart in a guest restored from a snapshot (its first hello
// was before the snapshot) is seen: the open terminal ends at once instead
// of hanging blank; in a learner's guest the guest is discarded.
func TestRestoredGuestAgentRestart(t *testing.T) {
	for _, learner := range []bool{false, true} {
		c, g := newHostileGuest(t, clientOpts{restored: true, restartBreaks: learner})
		reqs := g.readRequests()
		term := openTerm(t, &Guest{client: c}, func([]byte) {})
		<-reqs
		g.flood(`{"hello":{"kernel":"evil"}}`, 1)
		var ended error
		select {
		case ended = <-term.End():
		case <-time.After(10 * time.Second):
			t.Fatalf("learner guest %v: the terminal hangs after the agent restarted", learner)
		}
		if closed := learner && closedSoon(c.done) || !learner && c.err() != nil; closed != learner {
			t.Errorf("learner guest %v: channel closed %v", learner, closed)
		}
		t.Logf("learner guest %v: %v", learner, ended)
	}
}

// A run's events are bounded in number.
func TestHostileGuestRunEvents(t *testing.T) {
	b := defaultBounds
	b.RunEvents = 1000
	c, g := newHostileGuest(t, clientOpts{bounds: b})
	reqs := g.readRequests()
	n := 0
	done := make(chan error, 1)
	go func() {
		done <- c.call(context.Background(), vmproto.HostMsg{Op: vmproto.OpRun, Req: reqJSON(sandbox.Request{})}, func(sandbox.Event) { n++ }, nil)
	}()
	<-reqs
	took := g.flood(`{"id":1,"event":{"type":"log","message":"x"}}`, 5000)
	err := <-done
	if n > 1000 || took >= 5000 || err == nil {
		t.Errorf("events: %d delivered, %d read, err %v", n, took, err)
	}
}

// closedSoon reports whether ch is closed within a few seconds: the host
// closes the connection (the guest's next write fails) a moment before
// it marks the channel done.
func closedSoon(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}
