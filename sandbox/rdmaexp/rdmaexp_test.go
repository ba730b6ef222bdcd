package rdmaexp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// TestMain lets the test binary act as the agent's hidden helpers (the
// receiver and pong processes, the reg-mr child): experiments re-execute
// the running binary with sandbox.EnvHelper set.
func TestMain(m *testing.M) {
	if name := os.Getenv(sandbox.EnvHelper); name != "" {
		reg := sandbox.NewRegistry()
		Register(reg)
		if err := sandbox.RunHelper(context.Background(), reg, name, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	closeGuest()
	os.Exit(code)
}

type recorder struct {
	mu  sync.Mutex
	evs []sandbox.Event
	at  []time.Time // when each event arrived (phases' durations in the logs)
}

func (r *recorder) Emit(ev sandbox.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
	r.at = append(r.at, time.Now())
}

func (r *recorder) result(t testing.TB) sandbox.Event {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.evs) - 1; i >= 0; i-- {
		if r.evs[i].Type == sandbox.EvResult {
			return r.evs[i]
		}
	}
	t.Fatalf("no result event among %d events", len(r.evs))
	return sandbox.Event{}
}

func (r *recorder) of(typ sandbox.EventType) []sandbox.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []sandbox.Event
	for _, e := range r.evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func (r *recorder) dump(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.evs {
		switch e.Type {
		case sandbox.EvMetric:
			continue
		case sandbox.EvTable:
			t.Logf("table %s: %v", e.Table.Title, e.Table.Rows)
		default:
			t.Logf("%s %s %s %s %s %v", e.Type, e.Name, e.Call, e.ErrnoName, e.Message, e.Figures)
		}
	}
}

func registry() *sandbox.Registry {
	reg := sandbox.NewRegistry()
	Register(reg)
	return reg
}

func TestRegistryDefinitions(t *testing.T) {
	reg := registry()
	for _, id := range []string{"reg-mr", "write-silent", "pingpong", "rkey", "qp-states", "ud-vs-rc", "rdma-cm", "verbs-steps"} {
		e := reg.Get(id)
		if e == nil {
			t.Fatalf("%s not registered", id)
		}
		if e.Needs != sandbox.NeedRDMA || e.Timeout <= 0 {
			t.Errorf("%s: needs %q, timeout %s", id, e.Needs, e.Timeout)
		}
		for _, lang := range []string{"zh", "en"} {
			if e.Title[lang] == "" || e.Summary[lang] == "" {
				t.Errorf("%s: no %s title or summary", id, lang)
			}
		}
		for _, pr := range e.Presets {
			if _, err := e.Validate(pr.Values); err != nil {
				t.Errorf("%s preset %s: %v", id, pr.ID, err)
			}
		}
	}
}

// TestEverySharingDeclared: the runner schedules by it (timing runs alone,
// shareable runs side by side), so every experiment says which it is.
func TestEverySharingDeclared(t *testing.T) {
	for _, e := range registry().List() {
		if e.Sharing != sandbox.Timing && e.Sharing != sandbox.Shareable {
			t.Errorf("%s: Sharing %q: set sandbox.Timing (it measures time or CPU) or sandbox.Shareable", e.ID, e.Sharing)
		}
	}
}

func TestParamsRejected(t *testing.T) {
	reg := registry()
	for _, c := range []struct {
		id    string
		raw   map[string]any
		param string
	}{
		{"reg-mr", map[string]any{"size": 128 << 20}, "size"},
		{"reg-mr", map[string]any{"limit": "1GiB"}, "limit"},
		{"write-silent", map[string]any{"mode": "read"}, "mode"},
		{"write-silent", map[string]any{"messages": 0}, "messages"},
		{"pingpong", map[string]any{"max_size": 1 << 20}, "max_size"},
		{"pingpong", map[string]any{"transport": "udp"}, "transport"},
		{"rkey", map[string]any{"case": "nope"}, "case"},
		{"qp-states", map[string]any{"mistakes": "maybe"}, "mistakes"},
		{"qp-states", map[string]any{"extra": 1}, "extra"},
		{"ud-vs-rc", map[string]any{"size": 1 << 20}, "size"},
		{"rdma-cm", map[string]any{"count": 11}, "count"},
		{"verbs-steps", map[string]any{"cmd": "next"}, "cmd"},
	} {
		_, err := reg.Get(c.id).Validate(c.raw)
		var pe *sandbox.ParamError
		if !errors.As(err, &pe) || pe.Param != c.param {
			t.Errorf("%s %v: %v, want a ParamError on %s", c.id, c.raw, err, c.param)
		}
	}
}

func TestSizesAndBuffers(t *testing.T) {
	if got := fmt.Sprint(sizesUpTo(64 << 10)); got != "[2 16 128 1024 8192 65536]" {
		t.Fatalf("sizes up to 64 KiB: %s", got)
	}
	if got := fmt.Sprint(sizesUpTo(2)); got != "[2]" {
		t.Fatalf("sizes up to 2: %s", got)
	}
	// 5 messages into 2 slots: slot 0 holds message 4, slot 1 message 3
	b := expectedBuffer(5, 2, 32, "rxe1")
	if !strings.HasPrefix(string(b), "msg 000004 from rxe1") || !strings.HasPrefix(string(b[32:]), "msg 000003 from rxe1") {
		t.Fatalf("expected buffer %q", b)
	}
	if p := percentile([]time.Duration{5, 1, 3, 2, 4}, 50); p != 3 {
		t.Fatalf("median = %d", p)
	}
}

func TestExplainNamesTheCause(t *testing.T) {
	for _, c := range []struct {
		call  string
		errno syscall.Errno
		want  string
	}{
		{"ibv_reg_mr", syscall.ENOMEM, "RLIMIT_MEMLOCK"},
		{"ibv_modify_qp", syscall.EINVAL, "RESET → INIT → RTR → RTS"},
		{"ibv_post_send", syscall.EINVAL, "RTS"},
		{"ibv_create_cq", syscall.EIO, "ibv_create_cq failed with EIO"},
	} {
		got := explain(c.call, c.errno)
		if !strings.Contains(got["en"], c.want) || got["zh"] == "" {
			t.Errorf("explain(%s, %s) = %q", c.call, c.errno, got)
		}
	}
	rec := &recorder{}
	err := verbsError(rec, fmt.Errorf("setup: %w", &verbs.Error{Call: "ibv_reg_mr", Errno: syscall.ENOMEM}))
	evs := rec.of(sandbox.EvError)
	if err == nil || len(evs) != 1 || evs[0].Call != "ibv_reg_mr" || evs[0].ErrnoName != "ENOMEM" || evs[0].Errno != int(syscall.ENOMEM) ||
		!strings.Contains(evs[0].Message, "Cannot allocate memory") || evs[0].Messages["zh"] == "" {
		t.Fatalf("verbsError: %v, events %+v", err, evs)
	}
}

func TestNoDeviceIsAClearError(t *testing.T) {
	if _, err := pickTopology(); err == nil {
		t.Skip("this machine has RDMA devices")
	} else if !errors.Is(err, errNoDevice) && !errors.Is(err, verbs.ErrNoVerbs) && !strings.Contains(err.Error(), "libibverbs") {
		t.Fatalf("pickTopology without devices: %v", err)
	}
	rec := &recorder{}
	e := registry().Get("qp-states")
	err := e.Run(context.Background(), e.Defaults(), rec)
	if err == nil || !strings.Contains(err.Error(), "RDMA") && !strings.Contains(err.Error(), "verbs") {
		t.Fatalf("qp-states without devices: %v", err)
	}
}

// TestPeerThatNeverConnects starts the pong server as the experiments do
// (a re-executed helper) and never connects: the helper must give up with
// a message that says so, and the experiment side must pass it on.
func TestPeerThatNeverConnects(t *testing.T) {
	ctx := context.Background()
	req := pongReq{Side: side{Dev: "lo", GID: verbs.GIDEntry{GID: loopbackGID()}}, Transport: trTCP, Mode: mPoll,
		Sizes: []int{2}, Iters: 10, AcceptWait: 300 * time.Millisecond}
	c, err := startChild(ctx, helperPong, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.kill()
	var ready pongReady
	if err := c.recv(ctx, 30*time.Second, &ready); err != nil {
		t.Fatal(err)
	}
	err = c.recv(ctx, 30*time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), "did not connect in time") {
		t.Fatalf("a server whose client never came: %v", err)
	}
	t.Logf("reported: %v", err)
}

func loopbackGID() verbs.GID {
	g, _ := verbs.ParseGID("0000:0000:0000:0000:0000:ffff:7f00:0001")
	return g
}

func TestParsePerftest(t *testing.T) {
	out := `---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 2       1000          21.68          511.38       36.46    	       46.53       	35.84  		218.89  		511.38 
---------------------------------------------------------------------------------------
`
	l, err := parsePerftestLat(out)
	if err != nil || l.Typical != 36.46 || l.Avg != 46.53 || l.Min != 21.68 || l.P99 != 218.89 {
		t.Fatalf("parsed %+v, %v", l, err)
	}
	if _, err := parsePerftestLat("Correlation coefficient r^2: 0.89 < 0.9\n----\n Send Latency Test\n"); err == nil {
		t.Fatal("output without a table parsed")
	}
}

// TestVerbsStepsDefinition: the step-through is interactive, shareable, and
// every command a step may offer is one it declares (the runner and the
// agent refuse anything else).
func TestVerbsStepsDefinition(t *testing.T) {
	e := registry().Get("verbs-steps")
	if !e.Interactive() || e.Class() != sandbox.Shareable || e.IdleLimit() <= 0 {
		t.Fatalf("verbs-steps: interactive %v, class %s, idle %s", e.Interactive(), e.Class(), e.IdleLimit())
	}
	declared := map[string]bool{}
	for _, c := range e.Commands {
		if c.Title["zh"] == "" || c.Title["en"] == "" {
			t.Errorf("command %s has no title in both languages", c.Name)
		}
		declared[c.Name] = true
	}
	s := &stepper{}
	for i := range stepList() {
		for _, broken := range []bool{false, true} {
			s.i, s.broken = i, broken
			for _, o := range s.offers() {
				if !declared[o] {
					t.Errorf("step %d offers %q, which the experiment does not declare", i, o)
				}
			}
		}
	}
}
