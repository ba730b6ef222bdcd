package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/attackcost"
	"github.com/rdmalab/rdmalab/internal/syncbuf"
	"github.com/rdmalab/rdmalab/terminals/placement"
)

// handWorker is a worker's side of terminals driven by hand over a real
// NATS connection with the worker's credential: the hostile worker of
// these tests. It says it hosts max terminals and answers each open with
// ready, then calls onOpen with the terminal's id.
func handWorker(t *testing.T, r *rogue, name string, max int, onOpen func(id string)) {
	t.Helper()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			b, _ := json.Marshal(Worker{Name: name, Backends: map[string]int{}, Terms: &rdmalab.TermLoad{Max: max}})
			_ = r.nc.Publish(subjHeartbeat+name, b)
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	_, err := r.nc.Subscribe(subjTermIn+name+".>", func(m *nats.Msg) {
		id, op, _ := strings.Cut(m.Subject[len(subjTermIn)+len(name)+1:], ".")
		if op != "open" {
			return
		}
		b, _ := json.Marshal(termReady{Recent: []byte("$ ")})
		_ = r.nc.Publish(subjTermOut+name+"."+id+".ready", b)
		go onOpen(id)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRogueWorkerCannotTouchOthersTerminals: a worker's credential (its
// own nkey, or the shared token) cannot hear another worker's terminal
// keystrokes, send output into its terminals, or act as the server
// toward it (send it keystrokes or opens, hear its output); output a
// rogue sends on its own subject for a terminal opened on another worker
// is dropped, and the learner's shell sees only its worker's bytes.
func TestRogueWorkerCannotTouchOthersTerminals(t *testing.T) {
	seed1, k1 := newKey(t, "w1")
	seedR, kR := newKey(t, "rogue")
	var logs syncbuf.Buffer
	s, err := Start(ServerConfig{Listen: "127.0.0.1:0", Workers: []WorkerKey{k1, kR}, Token: token, StoreDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w1 := connectRogue(t, s.Addr(), "w1", nkeyOpt(t, seed1))
	opened := make(chan string, 1)
	handWorker(t, w1, "w1", 1, func(id string) { opened <- id })
	var keys atomic.Int64 // keystrokes w1 received
	_, _ = w1.nc.Subscribe(subjTermIn+"w1.*.in", func(m *nats.Msg) { keys.Add(int64(len(m.Data))) })
	waitTermWorker(t, s, "w1")
	p := &placement.Placement{Fleet: s}
	c, err := p.Attach(t.Context(), "ann", 24, 80, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Detach()
	id := <-opened
	sc := watch(c)

	byKey := connectRogue(t, s.Addr(), "rogue", nkeyOpt(t, seedR))
	byToken := connectRogue(t, s.Addr(), "w1", nats.UserInfo(tokenUser, token))
	var heard atomic.Int64
	for _, rg := range []*rogue{byKey, byToken} {
		// hear w1's keystrokes, or the output of anyone's terminals (as the server does)
		_, _ = rg.nc.Subscribe(subjTermIn+"w1.>", func(*nats.Msg) { heard.Add(1) })
		_, _ = rg.nc.Subscribe(subjTermOut+"w1.>", func(*nats.Msg) { heard.Add(1) })
		// write into w1's terminal as w1, or as the server toward w1
		_ = rg.nc.Publish(subjTermOut+"w1."+id+".out", []byte("FORGED-OUT"))
		_ = rg.nc.Publish(subjTermIn+"w1."+id+".in", []byte("FORGED-KEYS"))
		_ = rg.nc.Publish(subjTermIn+"w1.x.open", []byte(`{"key":"k"}`))
	}
	// allowed on its own subject, but the terminal is not the rogue's
	_ = byKey.nc.Publish(subjTermOut+"rogue."+id+".out", []byte("FORGED-OWN"))
	_ = byKey.nc.Publish(subjTermOut+"rogue."+id+".end", nil)
	for name, rg := range map[string]*rogue{"nkey": byKey, "token": byToken} {
		if n := rg.refusals(); n < 5 {
			t.Fatalf("%s rogue: %d publishes/subscriptions refused, want 5: %v", name, n, rg.denied)
		}
	}
	// The real path still works both ways.
	if err := c.Write([]byte("ls\r")); err != nil {
		t.Fatal(err)
	}
	_ = w1.nc.Publish(subjTermOut+"w1."+id+".out", []byte("REAL-OUT"))
	sc.waitFor(t, "REAL-OUT")
	for i := 0; keys.Load() != 3; i++ {
		if i > 100 {
			t.Fatalf("w1 got %d bytes of keystrokes, want the learner's 3", keys.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(sc.buf.String(), "FORGED") {
		t.Fatalf("forged output reached the learner: %q", sc.buf.String())
	}
	if heard.Load() != 0 {
		t.Fatalf("a rogue heard %d terminal messages", heard.Load())
	}
	if c.(*RemoteTerm).Lost() || !strings.Contains(logs.String(), "output for another worker's terminal") {
		t.Fatalf("the rogue's own-subject output: lost %v, log:\n%s", c.(*RemoteTerm).Lost(), logs.String())
	}
}

// TestWorkerTerminalFloodBounded: a worker that floods a terminal's
// output (far past its rate), sends a chunk over the size bound, or
// answers an open with an oversized scrollback ends that terminal as lost
// (the bound named), is logged once per burst of abuse, gets no more
// terminals, and does not grow the server's heap with what it sent.
func TestWorkerTerminalFloodBounded(t *testing.T) {
	for _, tc := range []struct {
		name, bound string
		send        func(r *rogue, id string)
	}{
		{"rate", "output faster than", func(r *rogue, id string) {
			chunk := make([]byte, termChunk)
			for range 8000 { // 256 MiB
				if r.nc.Publish(subjTermOut+"evil."+id+".out", chunk) != nil {
					return
				}
			}
			_ = r.nc.Flush()
		}},
		{"size", "an output message over", func(r *rogue, id string) {
			_ = r.nc.Publish(subjTermOut+"evil."+id+".out", make([]byte, termChunk+1))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed, k := newKey(t, "evil")
			var logs syncbuf.Buffer
			s, err := Start(ServerConfig{Listen: "127.0.0.1:0", Workers: []WorkerKey{k}, StoreDir: t.TempDir(),
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			evil := connectRogue(t, s.Addr(), "evil", nkeyOpt(t, seed))
			handWorker(t, evil, "evil", 4, func(id string) { tc.send(evil, id) })
			waitTermWorker(t, s, "evil")
			p := &placement.Placement{Fleet: s}
			var c rdmalab.TermConn
			grew := heapPeak(func() {
				c, err = p.Attach(t.Context(), "ann", 24, 80, nil)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for b := range c.Output() {
					n += len(b)
				}
				t.Logf("the learner's tab got %d bytes before the terminal ended", n)
			})
			if !c.(*RemoteTerm).Lost() {
				t.Fatal("the flooded terminal ended, but not as lost")
			}
			if got := strings.Count(logs.String(), "broke a terminal bound"); got != 1 || !strings.Contains(logs.String(), tc.bound) {
				t.Fatalf("logged %d times, want once naming %q:\n%s", got, tc.bound, logs.String())
			}
			if grew > 200<<20 { // less than the 256 MiB it sent: not kept
				t.Fatalf("the server's heap grew %d MiB under the flood", grew>>20)
			}
			if _, ok := s.TermWorkers()["evil"]; ok {
				t.Fatal("a worker that broke a bound is still offered terminals")
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			if _, err := p.Attach(ctx, "bob", 24, 80, nil); !errors.As(err, new(*rdmalab.TermsFullError)) {
				t.Fatalf("a new terminal with only the bad worker: %v, want rdmalab.TermsFullError", err)
			}
		})
	}
}

// TestSilentWorkerGetsNoMoreTerminals: a worker that says it has room but
// never answers an open holds the learner only until termOpenWait, then
// gets no more terminals.
func TestSilentWorkerGetsNoMoreTerminals(t *testing.T) {
	defer func(d time.Duration) { termOpenWait = d }(termOpenWait)
	termOpenWait = time.Second
	seed, k := newKey(t, "mute")
	s, err := Start(ServerConfig{Listen: "127.0.0.1:0", Workers: []WorkerKey{k}, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mute := connectRogue(t, s.Addr(), "mute", nkeyOpt(t, seed))
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			b, _ := json.Marshal(Worker{Name: "mute", Backends: map[string]int{}, Terms: &rdmalab.TermLoad{Max: 8}})
			_ = mute.nc.Publish(subjHeartbeat+"mute", b)
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	waitTermWorker(t, s, "mute")
	p := &placement.Placement{Fleet: s}
	_, err = p.Attach(t.Context(), "ann", 24, 80, nil)
	var lost *TermLost
	if !errors.As(err, &lost) || lost.Worker != "mute" {
		t.Fatalf("attach on a silent worker: %v, want it lost", err)
	}
	if _, ok := s.TermWorkers()["mute"]; ok {
		t.Fatal("the silent worker is still offered terminals")
	}
}

// TestRogueWorkerPlacesCapped: a worker that says it hosts 64 terminals
// (issue 43: to draw learners to shells it fakes and checks it answers)
// is offered termTrustStart places until learners have held shells there
// for termProbation, then twice the most held at once, never more than
// it says. A class of eight opening terminals at once beside an honest
// worker of 4 gives the rogue at most termTrustStart (before: seven or
// eight, it being the roomiest); once the shells it got were held, it is
// offered twice as many, and the honest worker reaches its 4 and no more.
// Both are real NATS clients with their own nkeys.
func TestRogueWorkerPlacesCapped(t *testing.T) {
	defer func(d time.Duration) { termProbation = d }(termProbation)
	termProbation = time.Second
	seedE, kE := newKey(t, "evil")
	seedH, kH := newKey(t, "honest")
	var logs syncbuf.Buffer
	s, err := Start(ServerConfig{Listen: "127.0.0.1:0", Workers: []WorkerKey{kE, kH}, StoreDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cost := attackcost.WatchSelf(logs.Len)
	defer func() { cost.Stop().Check(t, "fall 10 rogue worker advertises 64 places (in-process server)") }()
	evil := connectRogue(t, s.Addr(), "evil", nkeyOpt(t, seedE))
	honest := connectRogue(t, s.Addr(), "honest", nkeyOpt(t, seedH))
	handWorker(t, evil, "evil", 64, func(string) {})
	handWorker(t, honest, "honest", 4, func(string) {})
	waitTermWorker(t, s, "evil")
	waitTermWorker(t, s, "honest")
	if m := s.TermWorkers()["evil"].Max; m != termTrustStart {
		t.Errorf("a worker that served nobody is offered %d places (it says 64), want %d", m, termTrustStart)
	}
	p := &placement.Placement{Fleet: s}
	on := map[string]int{}
	attach := func(learner string) {
		t.Helper()
		c, err := p.Attach(t.Context(), learner, 24, 80, nil)
		if errors.As(err, new(*rdmalab.TermsFullError)) {
			on["full"]++
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", learner, err)
		}
		t.Cleanup(c.Detach)
		on[c.(*RemoteTerm).Worker()]++
	}
	for i := range 8 { // a class opens its terminals at once
		attach(fmt.Sprint("learner-", i))
	}
	t.Logf("placed at once: %v; offered now: %+v", on, s.TermWorkers())
	if on["evil"] > termTrustStart {
		t.Errorf("the worker that says 64 got %d of 8 learners at once, want at most %d", on["evil"], termTrustStart)
	}
	// The shells were held past the probation: the places double.
	first := on["evil"]
	for i := 0; s.TermWorkers()["evil"].Max < 2*first; i++ {
		if i > 50 {
			t.Fatalf("the places did not grow after %d shells were held %s: %+v", first, termProbation, s.TermWorkers())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if m := s.TermWorkers()["evil"].Max; m != 2*first {
		t.Errorf("after %d learners held shells there, the worker is offered %d places, want %d", first, m, 2*first)
	}
	for i := range 8 {
		attach(fmt.Sprint("later-", i))
	}
	t.Logf("placed in all: %v; offered now: %+v", on, s.TermWorkers())
	if on["honest"] != 4 {
		t.Errorf("the honest worker got %d learners, want its 4", on["honest"])
	}
	if m := s.TermWorkers()["honest"].Max; m != 4 {
		t.Errorf("the honest worker is offered %d places, want the 4 it says (never more)", m)
	}
	if on["evil"] > 2*first {
		t.Errorf("the worker that says 64 got %d learners, want at most %d", on["evil"], 2*first)
	}
}

// TestWorkerOpenCarriesClientKey: an open tells the worker the client the
// learner was admitted for (so the machine it keeps counts against that
// client's share, terminal.Keep.ClientMax), keyed as the learner is: the
// worker sees the same key for one address, another for another, and
// never the address.
func TestWorkerOpenCarriesClientKey(t *testing.T) {
	seed, k := newKey(t, "w1")
	s, err := Start(ServerConfig{Listen: "127.0.0.1:0", Workers: []WorkerKey{k}, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := connectRogue(t, s.Addr(), "w1", nkeyOpt(t, seed))
	opens := make(chan termOpen, 8)
	if _, err := w.nc.Subscribe(subjTermIn+"w1.*.open", func(m *nats.Msg) {
		var o termOpen
		_ = json.Unmarshal(m.Data, &o)
		opens <- o
	}); err != nil {
		t.Fatal(err)
	}
	handWorker(t, w, "w1", 2, func(string) {})
	waitTermWorker(t, s, "w1")
	p := &placement.Placement{Fleet: s}
	var got []string
	for i, client := range []string{"192.0.2.8", "192.0.2.8", "198.51.100.7"} {
		c, err := p.Attach(rdmalab.WithClient(t.Context(), client), fmt.Sprint("learner-", i), 24, 80, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Detach() // the worker's places are few until it has served (termTrustStart)
		o := <-opens
		if o.Client == "" || strings.Contains(o.Client, client) {
			t.Fatalf("open for %s carried client %q: want a key, not empty and not the address", client, o.Client)
		}
		got = append(got, o.Client)
	}
	if got[0] != got[1] || got[0] == got[2] {
		t.Errorf("client keys %q: want one key per address", got)
	}
}

// TestWorkerKeptNotes: what a worker says became of a learner's kept
// machine reaches the learner when it is one of terminal.KeepNote's
// values — also "evicted" (the worker's total budget) and "share" (its
// address's share), which were dropped — and nothing else does.
func TestWorkerKeptNotes(t *testing.T) {
	seed, k := newKey(t, "w1")
	s, err := Start(ServerConfig{Listen: "127.0.0.1:0", Workers: []WorkerKey{k}, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := connectRogue(t, s.Addr(), "w1", nkeyOpt(t, seed))
	notes := make(chan string, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			b, _ := json.Marshal(Worker{Name: "w1", Backends: map[string]int{}, Terms: &rdmalab.TermLoad{Max: 2}})
			_ = w.nc.Publish(subjHeartbeat+"w1", b)
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	if _, err := w.nc.Subscribe(subjTermIn+"w1.*.open", func(m *nats.Msg) {
		id := strings.Split(m.Subject, ".")[3]
		b, _ := json.Marshal(termReady{Recent: []byte("$ "), Note: <-notes})
		_ = w.nc.Publish(subjTermOut+"w1."+id+".ready", b)
	}); err != nil {
		t.Fatal(err)
	}
	waitTermWorker(t, s, "w1")
	for note, want := range map[string]string{"evicted": "evicted", "share": "share", "restored": "restored", "<b>forged</b>": ""} {
		notes <- note
		c, err := s.TermAttach(t.Context(), "w1", "learner-"+note, 24, 80)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.KeptNote(); got != want {
			t.Errorf("the worker said %q: the learner is told %q, want %q", note, got, want)
		}
		c.Detach()
	}
}
