package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/rdmalab/rdmalab/internal/ctxtime"
	"github.com/rdmalab/rdmalab/sandbox"
)

// These tests play a hostile worker against the real embedded NATS server
// and real `labserver worker` processes: a rogue that holds a worker's
// credential (its own nkey, or the shared token) and uses it as the
// attacks of issue 28 did.

// newKey makes a worker's nkey: the seed in a file (as on a worker) and
// the public key (as on the lab server).
func newKey(t *testing.T, name string) (seedFile string, key WorkerKey) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	seedFile = filepath.Join(t.TempDir(), name+".nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return seedFile, WorkerKey{Name: name, Pub: pub}
}

// rogue is a NATS connection with a worker's credential, used by hand.
type rogue struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	mu     sync.Mutex
	denied []string // the server's refusals (permissions violations)
}

func connectRogue(t *testing.T, addr, name string, cred nats.Option) *rogue {
	t.Helper()
	r := &rogue{}
	nc, err := nats.Connect("nats://"+addr, cred, nats.CustomInboxPrefix(inboxPrefix(name)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			r.mu.Lock()
			r.denied = append(r.denied, err.Error())
			r.mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	r.nc = nc
	r.js, _ = jetstream.New(nc)
	return r
}

func (r *rogue) refusals() int {
	_ = r.nc.Flush()
	time.Sleep(200 * time.Millisecond) // the -ERR lines come after the PONG
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, d := range r.denied {
		if strings.Contains(strings.ToLower(d), "permissions violation") {
			n++
		}
	}
	return n
}

func startNkeyWorker(t *testing.T, addr, name, seed string) *workerProc {
	t.Helper()
	return startWorkerArgs(t, nil, name, "worker", "--join", "nats://"+addr, "--nkey-seed", seed, "--name", name, "--backend", "none", "--host-slots", "1")
}

func forged(n int64, f sandbox.Frame) []byte {
	b, _ := json.Marshal(frame{N: n, Frame: f})
	return b
}

// TestRogueWorkerCannotTouchOthersRuns: with its own nkey, and with the
// shared token, a rogue tries what the token once allowed — a forged done
// result and forged events into another worker's run, cancelling it,
// hearing its commands, queueing a job, deleting and purging LAB_RUNS,
// making a consumer. Every publish there is refused by the NATS server or
// ignored by the lab's (the run was not granted to the rogue); the real
// worker's run ends done with its own events only, and the queue still
// works.
func TestRogueWorkerCannotTouchOthersRuns(t *testing.T) {
	labserverBin(t) // worker processes: built first, skipped under -short
	seed1, k1 := newKey(t, "w1")
	seedR, kR := newKey(t, "rogue")
	s, err := Start(ServerConfig{Listen: "127.0.0.1:0", Workers: []WorkerKey{k1, kR}, Token: token, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	startNkeyWorker(t, s.Addr(), "w1", seed1)
	waitWorkers(t, s, 1)
	sk := newSink()
	r := newRunner(s, sk)
	defer r.Close()
	info, err := r.Submit("ann", "tcp-cost", map[string]any{"seconds": 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if evs := sk.get(info.ID); len(evs) > 0 && last(evs).Backend == "host@w1" {
			break
		}
		if i > 600 {
			t.Fatalf("the run never started on w1: %+v", sk.get(info.ID))
		}
		time.Sleep(50 * time.Millisecond)
	}
	id := info.ID
	byKey := connectRogue(t, s.Addr(), "rogue", nkeyOpt(t, seedR))
	byToken := connectRogue(t, s.Addr(), "w1", nats.UserInfo(tokenUser, token))
	done := sandbox.Frame{End: &sandbox.End{}}
	lie := sandbox.Frame{Event: &sandbox.Event{Type: sandbox.EvResult, Message: "forged"}}
	for _, rg := range []*rogue{byKey, byToken} {
		// denied by the NATS server: another worker's subjects, the queue
		_ = rg.nc.Publish(subjEvents+"w1."+id, forged(1, lie))
		_ = rg.nc.Publish(subjEvents+"w1."+id, forged(2, done))
		_ = rg.nc.Publish(subjCancel+"w1."+id, nil)
		_, _ = rg.nc.Subscribe(subjCommands+"w1.*", func(*nats.Msg) {})
		_ = rg.nc.Publish(subjRuns+"host", []byte(`{"run_id":"x"}`))
	}
	// allowed to send on its own subject, but the run is not the rogue's
	_ = byKey.nc.Publish(subjEvents+"rogue."+id, forged(1, lie))
	_ = byKey.nc.Publish(subjEvents+"rogue."+id, forged(2, done))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for name, rg := range map[string]*rogue{"nkey": byKey, "token": byToken} {
		if err := rg.js.DeleteStream(ctx, stream); err == nil {
			t.Fatalf("%s rogue deleted %s", name, stream)
		}
		if _, err := rg.js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: "mine", AckPolicy: jetstream.AckExplicitPolicy}); err == nil {
			t.Fatalf("%s rogue made a consumer", name)
		}
		if n := rg.refusals(); n < 5 {
			t.Fatalf("%s rogue: %d publishes/subscriptions refused, want 5: %v", name, n, rg.denied)
		}
	}
	<-sk.final
	evs := sk.get(id)
	if f := last(evs); f.Status != sandbox.StatusDone || f.Backend != "host@w1" {
		t.Fatalf("w1's run ended %s on %s: %s", f.Status, f.Backend, f.Message)
	}
	var results int
	for _, ev := range evs {
		if ev.Message == "forged" {
			t.Fatalf("a forged event reached the run: %+v", ev)
		}
		if ev.Type == sandbox.EvResult {
			results++
		}
	}
	if results != 1 {
		t.Fatalf("%d results in w1's run, want its own one", results)
	}
	if _, err := s.js.Stream(t.Context(), stream); err != nil {
		t.Fatalf("the work queue after the attack: %v", err)
	}
	info, err = r.Submit("bob", "memlock", memlock())
	if err != nil {
		t.Fatal(err)
	}
	<-sk.final
	if f := last(sk.get(info.ID)); f.Status != sandbox.StatusDone {
		t.Fatalf("a run after the attack: %s (%s)", f.Status, f.Message)
	}
}

// nkeyOpt joins with the nkey whose seed is in file.
func nkeyOpt(t *testing.T, file string) nats.Option {
	t.Helper()
	o, err := nats.NkeyOptionFromSeed(file)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// heapPeak samples the heap while f runs and returns the most it grew.
func heapPeak(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > base && ms.HeapAlloc-base > peak.Load() {
				peak.Store(ms.HeapAlloc - base)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	f()
	close(stop)
	wg.Wait()
	return peak.Load()
}

// TestWorkerEventFloodBounded: a worker (its own nkey) takes a run
// legitimately, then floods it and a run it does not have with 1 MB event
// messages, and tries a message over the size cap. The lab server's heap
// stays bounded (a flood once took it from 55 MB to 1.8 GB in 5 s), the run
// fails naming the bound after at most runBytes of events, and nothing past
// it is passed on.
func TestWorkerEventFloodBounded(t *testing.T) {
	seed, k := newKey(t, "flooder")
	s, err := Start(ServerConfig{Listen: "127.0.0.1:0", Workers: []WorkerKey{k}, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var emitted, emittedBytes atomic.Int64
	runErr := make(chan error, 1)
	go func() {
		runErr <- s.Exec(t.Context(), sandbox.NeedHost, sandbox.NewSession(sandbox.Request{RunID: "r-flood", Experiment: "memlock"}, nil,
			func(ev sandbox.Event) { emitted.Add(1); emittedBytes.Add(int64(len(ev.Message))) }))
	}()
	rg := connectRogue(t, s.Addr(), "flooder", nkeyOpt(t, seed))
	// Beat like a live worker, take the job and claim it, as a worker does.
	beat, _ := json.Marshal(Worker{Backends: map[string]int{"host": 1}, Backend: "none"})
	beating, stopBeating := context.WithCancel(t.Context())
	defer stopBeating()
	go func() {
		for beating.Err() == nil {
			_ = rg.nc.Publish(subjHeartbeat+"flooder", beat)
			_ = ctxtime.Sleep(beating, 300*time.Millisecond)
		}
	}()
	cons, err := rg.js.Consumer(t.Context(), stream, consumerName(sandbox.NeedHost))
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var job Job
	for m := range batch.Messages() {
		_ = json.Unmarshal(m.Data(), &job)
		_ = m.Ack()
	}
	cb, _ := json.Marshal(Claim{Epoch: job.Epoch})
	if reply, err := rg.nc.Request(subjClaim+"flooder."+job.RunID, cb, 5*time.Second); err != nil || string(reply.Data) != "ok" {
		t.Fatalf("claim: %v %v", reply, err)
	}
	big := strings.Repeat("x", 1000<<10)
	n := 200 // 200 MB
	if testing.Short() {
		n = 80 // past runBytes still; make test sends the 200 MB
	}
	grew := heapPeak(func() {
		for i := range n {
			ev := sandbox.Frame{Event: &sandbox.Event{Type: sandbox.EvLog, Message: big}}
			_ = rg.nc.Publish(subjEvents+"flooder."+job.RunID, forged(int64(i+1), ev))
			_ = rg.nc.Publish(subjEvents+"flooder.no-such-run", forged(int64(i+1), ev))
		}
		_ = rg.nc.Flush()
		time.Sleep(time.Second)
	})
	if err := rg.nc.Publish(subjEvents+"flooder."+job.RunID, make([]byte, 2<<20)); !errors.Is(err, nats.ErrMaxPayload) {
		t.Errorf("a 2 MiB message: %v, want refused (max payload)", err)
	}
	var err2 error
	select {
	case err2 = <-runErr:
	case <-time.After(time.Minute):
		t.Fatal("the flooded run did not end")
	}
	t.Logf("heap grew at most %d MiB for %d MB sent; %d events (%d MiB) passed on; run: %v", grew>>20, 2*n, emitted.Load(), emittedBytes.Load()>>20, err2)
	if err2 == nil || !strings.Contains(err2.Error(), "broke a bound") {
		t.Fatalf("flooded run: %v, want failed for a broken bound", err2)
	}
	if emittedBytes.Load() > runBytes {
		t.Fatalf("%d bytes of events passed on, want at most %d", emittedBytes.Load(), runBytes)
	}
	if grew > 384<<20 {
		t.Fatalf("the server's heap grew %d MiB under the flood", grew>>20)
	}
}

// TestHeartbeatFloodBounded: a token holder sends 5000 heartbeats under
// 5000 names and one name beating as fast as it can; /lab lists at most
// maxWorkers, each with bounded fields, and what /lab would print stays
// small (5000 fake heartbeats once made it 2.7 MB).
func TestHeartbeatFloodBounded(t *testing.T) {
	s := startServer(t, "127.0.0.1:0")
	defer s.Close()
	rg := connectRogue(t, s.Addr(), "x", nats.UserInfo(tokenUser, token))
	hb := Worker{Backend: "=HYPERLINK(\"http://evil\")", Accel: strings.Repeat("a", 2000), Backends: map[string]int{"host": 1 << 30, "evil": 5},
		Devices: make([]sandbox.Device, 100), CPUs: -1, Load1: 1e300}
	b, _ := json.Marshal(hb)
	for i := range 5000 {
		_ = rg.nc.Publish(subjHeartbeat+fmt.Sprint("fake-", i), b)
		_ = rg.nc.Publish(subjHeartbeat+"fast", b)
	}
	_ = rg.nc.Flush()
	time.Sleep(time.Second)
	ws := s.Workers()
	out, _ := json.Marshal(ws)
	t.Logf("%d workers listed, %d bytes", len(ws), len(out))
	if len(ws) != maxWorkers {
		t.Fatalf("%d workers listed, want %d (the first names heard)", len(ws), maxWorkers)
	}
	if len(out) > 256<<10 {
		t.Fatalf("the workers' list is %d bytes", len(out))
	}
	for _, w := range ws {
		if w.Backend != "none" || w.Accel != "" || len(w.Devices) > maxDevices || w.Backends["host"] > 256 || w.Backends["evil"] != 0 {
			t.Fatalf("worker kept as sent: %+v", w)
		}
	}
}

// TestRevokedWorker: the lab drops a worker's key; its connection closes
// at once, /lab forgets it, and its seed no longer joins. The other worker
// keeps running runs.
func TestRevokedWorker(t *testing.T) {
	labserverBin(t) // worker processes: built first, skipped under -short
	seedA, ka := newKey(t, "keep")
	seedB, kb := newKey(t, "gone")
	s, err := Start(ServerConfig{Listen: "127.0.0.1:0", Workers: []WorkerKey{ka, kb}, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	startNkeyWorker(t, s.Addr(), "keep", seedA)
	startNkeyWorker(t, s.Addr(), "gone", seedB)
	waitWorkers(t, s, 2)
	if err := s.SetWorkers([]WorkerKey{ka}); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		ws := s.Workers()
		if len(ws) == 1 && ws[0].Name == "keep" {
			break
		}
		if i > 200 {
			t.Fatalf("workers after revoking gone: %+v", ws)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := Connect(WorkerConfig{URL: "nats://" + s.Addr(), NkeySeed: seedB, Name: "gone"}); err == nil {
		t.Fatal("a revoked worker joined again")
	}
	sk := newSink()
	r := newRunner(s, sk)
	defer r.Close()
	info, err := r.Submit("ann", "memlock", memlock())
	if err != nil {
		t.Fatal(err)
	}
	<-sk.final
	if f := last(sk.get(info.ID)); f.Status != sandbox.StatusDone || f.Backend != "host@keep" {
		t.Fatalf("run after a revocation: %s on %s (%s)", f.Status, f.Backend, f.Message)
	}
}
