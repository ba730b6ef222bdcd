package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/syncbuf"
	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/hostexp"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/runhub"
)

// runEnv is a lab server with a real store, a real runner and the real
// agent code (ServeAgent over pipes, in this process: the child-process
// part of the host backend is tested in package sandbox).
type runEnv struct {
	*testEnv
	Hub    *runhub.Hub
	Runner *runner.Runner
}

// holdGates releases "hold" runs: the test closes the channel for a key.
var holdGates sync.Map

func gate(key int64) chan struct{} {
	ch, _ := holdGates.LoadOrStore(key, make(chan struct{}))
	return ch.(chan struct{})
}

func runTestRegistry() *sandbox.Registry {
	reg := sandbox.NewRegistry()
	reg.Register(hostexp.TCPCost())
	reg.Register(hostexp.Memlock()) // shown in widgets; never run here (its helper re-executes the binary)
	reg.Register(captureReplay())   // run_capture_test.go: a stored capture as a run's event
	reg.Register(fakeSteps())       // the step-through, scripted (stepthrough_test.go)
	// ticks emits n points of a series a few ms apart, a table and a verdict.
	reg.Register(&sandbox.Experiment{
		ID: "ticks", Title: sandbox.Text{"en": "Ticks", "zh": "滴答"}, Needs: sandbox.NeedHost, Timeout: 20 * time.Second,
		Params: []sandbox.Param{
			{Name: "n", Kind: sandbox.ParamInt, Min: 1, Max: 500, Default: int64(5)},
			{Name: "size", Kind: sandbox.ParamBytes, Min: 64, Max: 1 << 20, Default: int64(4096)},
		},
		Presets: []sandbox.Preset{{ID: "many", Title: sandbox.Text{"en": "many"}, Values: map[string]any{"n": 20}}},
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			emit.Emit(sandbox.Event{Type: sandbox.EvPhase, Name: "tick", Message: "ticking", Messages: sandbox.Text{"en": "ticking", "zh": "滴答中"}})
			for i := range p["n"].(int64) {
				emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: "a", X: float64(i), Y: float64(i * i), Unit: "x"})
				time.Sleep(2 * time.Millisecond)
			}
			emit.Emit(sandbox.Event{Type: sandbox.EvTable, Table: &sandbox.Table{Title: "t", Columns: []string{"k", "v"}, Rows: [][]string{{"n", fmt.Sprint(p["n"])}}}})
			ok := true
			emit.Emit(sandbox.Event{Type: sandbox.EvResult, OK: &ok, Message: "ticked", Messages: sandbox.Text{"en": "ticked", "zh": "滴答完毕"}})
			return nil
		},
	})
	// units draws a round-trip chart (µs, labelled series) and a CPU one.
	reg.Register(&sandbox.Experiment{
		ID: "units", Title: sandbox.Text{"en": "Units", "zh": "单位"}, Needs: sandbox.NeedHost, Timeout: 20 * time.Second,
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			for i := range 5 {
				emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: "rtt_us_64", X: float64(i + 1), Y: float64(20 + i), Unit: "µs",
					Messages: sandbox.Text{"en": "round trip, 64 B", "zh": "往返，64 B"}})
				emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: "receiver_cpu_ms", X: float64(i + 1), Y: 0, Unit: "ms",
					Messages: sandbox.Text{"en": "receiver's CPU time", "zh": "接收方进程的 CPU 时间"}})
			}
			return nil
		},
	})
	// the charts of two real experiments, as their runs emit them: the
	// registration cost by size up to 16 MiB, and the first loss step of
	// the loss sweep (one x value, medians with their lowest and highest
	// rounds) — chart_browser_test.go reads their axes and legends
	reg.Register(&sandbox.Experiment{
		ID: "perf-mr-cost", Title: sandbox.Text{"en": "MR cost", "zh": "MR 开销"}, Needs: sandbox.NeedHost, Timeout: 20 * time.Second,
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			for size := 4096; size <= 16<<20; size *= 4 {
				emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: "reg", X: float64(size), Y: float64(size) / 4096, Unit: "µs", Messages: sandbox.Text{"en": "ibv_reg_mr", "zh": "ibv_reg_mr"}})
				emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: "dereg", X: float64(size), Y: float64(size) / 8192, Unit: "µs", Messages: sandbox.Text{"en": "ibv_dereg_mr", "zh": "ibv_dereg_mr"}})
			}
			return nil
		},
	})
	reg.Register(&sandbox.Experiment{
		ID: "loss-sweep", Title: sandbox.Text{"en": "Loss", "zh": "丢包"}, Needs: sandbox.NeedHost, Timeout: 20 * time.Second,
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			for _, m := range []struct {
				series, unit string
				y            float64
			}{{"rdma_resent", "% resent", 0.4}, {"tcp_resent", "% resent", 0.1}, {"rdma_rel", "% of 0%", 100}, {"tcp_rel", "% of 0%", 100}} {
				label := sandbox.Text{"en": "RDMA WRITE (go-back-N)", "zh": "RDMA WRITE（go-back-N）"}
				if m.series[0] == 't' {
					label = sandbox.Text{"en": "TCP (SACK)", "zh": "TCP（SACK）"}
				}
				emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: m.series, X: 0, Y: m.y, Unit: m.unit, Messages: label})
				emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: m.series + "_lo", X: 0, Y: m.y * 0.9, Unit: m.unit, Messages: sandbox.Text{"en": label["en"] + ", lowest round", "zh": label["zh"] + "，最低一轮"}})
				emit.Emit(sandbox.Event{Type: sandbox.EvMetric, Series: m.series + "_hi", X: 0, Y: m.y * 1.1, Unit: m.unit, Messages: sandbox.Text{"en": label["en"] + ", highest round", "zh": label["zh"] + "，最高一轮"}})
			}
			return nil
		},
	})
	// provoke errs on purpose (as perf-inline posts above its inline
	// threshold) and then succeeds
	reg.Register(&sandbox.Experiment{
		ID: "provoke", Title: sandbox.Text{"en": "Provoke", "zh": "触发"}, Needs: sandbox.NeedHost, Timeout: 20 * time.Second,
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			emit.Emit(sandbox.Event{Type: sandbox.EvError, Call: "ibv_post_send", Errno: 22, ErrnoName: "EINVAL", Expected: true,
				Message:  "ibv_post_send (IBV_SEND_INLINE, 128 B > max_inline_data 64 B): Invalid argument",
				Messages: sandbox.Text{"en": "ibv_post_send (IBV_SEND_INLINE, 128 B > max_inline_data 64 B): Invalid argument", "zh": "ibv_post_send（IBV_SEND_INLINE，128 B > max_inline_data 64 B）：参数无效（EINVAL）"}})
			ok := true
			emit.Emit(sandbox.Event{Type: sandbox.EvResult, OK: &ok, Message: "refused as expected", Messages: sandbox.Text{"en": "refused as expected", "zh": "如预期被拒绝"}})
			return nil
		},
	})
	// hold emits `before` logs, waits for its gate (or ctx), emits `after` logs.
	reg.Register(&sandbox.Experiment{
		ID: "hold", Needs: sandbox.NeedHost, Timeout: 30 * time.Second,
		Params: []sandbox.Param{
			{Name: "key", Kind: sandbox.ParamInt, Min: 0, Max: 1 << 40, Default: int64(0)},
			{Name: "before", Kind: sandbox.ParamInt, Min: 0, Max: 100, Default: int64(2)},
			{Name: "after", Kind: sandbox.ParamInt, Min: 0, Max: 100, Default: int64(2)},
		},
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			for i := range p["before"].(int64) {
				emit.Emit(sandbox.Event{Type: sandbox.EvLog, Message: fmt.Sprint("before ", i)})
			}
			select {
			case <-gate(p["key"].(int64)):
			case <-ctx.Done():
				return ctx.Err()
			}
			for i := range p["after"].(int64) {
				emit.Emit(sandbox.Event{Type: sandbox.EvLog, Message: fmt.Sprint("after ", i)})
			}
			return nil
		},
	})
	return reg
}

func newRunEnv(t *testing.T, cfg runner.Config) *runEnv {
	t.Helper()
	env := newRunEnvTB(t, cfg)
	env.t = t
	return env
}

// newRunEnvTB builds the environment for a test or a benchmark.
func newRunEnvTB(t testing.TB, cfg runner.Config) *runEnv {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "lab.db"))
	if err != nil {
		t.Fatal(err)
	}
	env := &testEnv{DB: db, Logs: new(syncbuf.Buffer)}
	env.Course.Store(fixtureCourse())
	log := slog.New(slog.NewTextHandler(env.Logs, nil))
	reg := runTestRegistry()
	hub := runhub.New(db, log)
	cfg.Registry = reg
	cfg.Sink = hub
	if cfg.Backend == nil {
		be := sandbox.InProcess{Registry: reg}
		cfg.Backend = func(n sandbox.Need) sandbox.Backend {
			if n == sandbox.NeedRDMA {
				return sandbox.NoBackend{Reason: sandbox.Text{"en": "no RDMA here", "zh": "这里没有 RDMA"}}
			}
			return be
		}
	}
	runner := runner.New(cfg)
	srv, err := New(Config{Course: env.Course.Load, Store: db, Logger: log, Experiments: reg, Runner: runner, Runs: hub,
		// Tests speak for clients at other addresses through the proxy
		// header (loopback is the trusted proxy).
		ClientAddr: page.ClientAddrConfig{Header: "X-Real-IP"}})
	if err != nil {
		t.Fatal(err)
	}
	env.Server = srv
	env.HTTP = httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		env.HTTP.CloseClientConnections()
		env.HTTP.Close()
		runner.Close()
		db.Close()
	})
	return &runEnv{testEnv: env, Hub: hub, Runner: runner}
}

// postJSON posts body as JSON and decodes the answer into out (may be nil).
func (e *runEnv) postJSON(c *http.Client, path, body string, out any) *http.Response {
	e.t.Helper()
	res, err := c.Post(e.HTTP.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("POST %s: %d %s: %v", path, res.StatusCode, b, err)
		}
	}
	return res
}

// submit starts a run and returns its id.
func (e *runEnv) submit(c *http.Client, experiment string, params map[string]any) string {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"experiment": experiment, "params": params})
	var out runCreated
	res := e.postJSON(c, "/api/runs", string(body), &out)
	if res.StatusCode != http.StatusCreated || out.ID == "" {
		e.t.Fatalf("submit %s: status %d, %+v", experiment, res.StatusCode, out)
	}
	return out.ID
}

// sseMsg is one message of an event stream.
type sseMsg struct {
	ID      string
	Event   string // "" for data messages
	Data    string
	Comment string
}

// sseReader parses an event stream.
type sseReader struct {
	br  *bufio.Reader
	res *http.Response
}

func (e *runEnv) stream(c *http.Client, id string, header ...string) *sseReader {
	e.t.Helper()
	res := e.get(c, "/api/runs/"+id+"/events", header...)
	if res.StatusCode != http.StatusOK {
		e.t.Fatalf("events of %s: status %d", id, res.StatusCode)
	}
	return &sseReader{br: bufio.NewReader(res.Body), res: res}
}

// next reads one message (a comment counts as one), or io.EOF.
func (r *sseReader) next() (sseMsg, error) {
	var m sseMsg
	seen := false
	for {
		line, err := r.br.ReadString('\n')
		if err != nil {
			return m, err
		}
		line = strings.TrimRight(line, "\n")
		if line == "" {
			if seen {
				return m, nil
			}
			continue
		}
		seen = true
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimPrefix(v, " ")
		switch k {
		case "":
			m.Comment = v
		case "id":
			m.ID = v
		case "event":
			m.Event = v
		case "data":
			m.Data = v
		}
	}
}

// events reads data messages until `event: end` (or EOF) and returns them.
func (r *sseReader) events(t *testing.T) (evs []sandbox.Event, ended bool) {
	t.Helper()
	defer r.res.Body.Close()
	for {
		m, err := r.next()
		if err != nil {
			return evs, false
		}
		if m.Event == "end" {
			return evs, true
		}
		if m.Data == "" || m.Event != "" {
			continue
		}
		var ev sandbox.Event
		if err := json.Unmarshal([]byte(m.Data), &ev); err != nil {
			t.Fatalf("data %q: %v", m.Data, err)
		}
		if m.ID != strconv.FormatInt(ev.Seq, 10) {
			t.Errorf("id %q for event seq %d", m.ID, ev.Seq)
		}
		evs = append(evs, ev)
	}
}

// checkSeq fails unless evs are numbered from..from+len-1 without gaps.
func checkSeq(t *testing.T, evs []sandbox.Event, from int64) {
	t.Helper()
	for i, ev := range evs {
		if ev.Seq != from+int64(i) {
			t.Fatalf("event %d has seq %d, want %d", i, ev.Seq, from+int64(i))
		}
	}
}
