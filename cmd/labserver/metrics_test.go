package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/metrics"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/sandboxtest"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web"
	"github.com/rdmalab/rdmalab/web/runhub"
)

// metricsLab is a lab wired the way serve wires it (startMetrics, the web's
// Observer and /metrics), with the runner on the sandbox's in-process
// backend and the test experiments, served on loopback.
type metricsLab struct {
	URL    string
	Lab    *metrics.Lab
	client *http.Client
}

func newMetricsLab(t *testing.T, access metrics.Access) *metricsLab {
	t.Helper()
	dbPath := filepath.Join(t.TempDir(), "lab.db")
	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := sandboxtest.Registry()
	hub := runhub.New(db, log)
	run := runner.New(runner.Config{Registry: reg, Sink: hub, Logger: log, Concurrency: 1,
		Backend: func(sandbox.Need) sandbox.Backend { return sandbox.InProcess{Registry: reg} }})
	t.Cleanup(run.Close)
	lab := startMetrics(labMetrics{db: db, dbPath: dbPath, sb: &labSandbox{Registry: reg, Hub: hub, Runner: run}})
	course, err := lessons.Load(lessons.Builtin, lessonOptions())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := web.New(web.Config{Course: func() *lessons.Course { return course }, Store: db, Logger: log,
		Experiments: reg, Runner: run, Runs: hub, Observer: lab, Metrics: lab.Handler(access), Programs: compileFails{}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	jar, _ := cookiejar.New(nil)
	return &metricsLab{URL: ts.URL, Lab: lab, client: &http.Client{Jar: jar}}
}

// compileFails runs every program to a compile error, as tcc in a learner's
// guest would answer a program that does not compile (the guest itself is
// terminals/'s, tested there).
type compileFails struct{}

func (compileFails) RunProgram(ctx context.Context, learner string, prog rdmalab.Program, lang string, emit func(rdmalab.Event)) (rdmalab.ProgramEnd, error) {
	return rdmalab.ProgramEnd{Stage: "compile", Compiler: []byte("main.c:1: error: ';' expected\n")}, nil
}

func (l *metricsLab) do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	res, err := l.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func (l *metricsLab) get(t *testing.T, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", l.URL+path, nil)
	return l.do(t, req)
}

// submit starts a run of experiment and returns its id.
func (l *metricsLab) submit(t *testing.T, body string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", l.URL+"/api/runs", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	code, out := l.do(t, req)
	var created struct{ ID string }
	if err := json.Unmarshal([]byte(out), &created); code != http.StatusAccepted && code != http.StatusCreated && code != http.StatusOK || err != nil || created.ID == "" {
		t.Fatalf("POST /api/runs %s: %d %s", body, code, out)
	}
	return created.ID
}

// waitStatus polls the run until its status is one of want.
func (l *metricsLab) waitStatus(t *testing.T, id string, want ...string) {
	t.Helper()
	for {
		_, out := l.get(t, "/api/runs/"+id)
		var info struct{ Status string }
		json.Unmarshal([]byte(out), &info)
		for _, w := range want {
			if info.Status == w {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scrape reads /metrics as Prometheus does and parses it with the
// Prometheus text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("GET /metrics: %d %s", res.StatusCode, b)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want the text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("the Prometheus text parser refuses the scrape: %v", err)
	}
	return fams
}

// value is the sample of family name whose labels include want (a
// counter's or gauge's value, a histogram's count), 0 when absent.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	sum := 0.0
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, lp := range m.Label {
			got[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// TestMetricsMove scrapes /metrics, drives pages, a 404, an SSE stream and
// runs of the test experiments (one done, one failed), and sees the
// counters, gauges and histograms move by what was done.
func TestMetricsMove(t *testing.T) {
	l := newMetricsLab(t, metrics.Access{})
	before := scrape(t, l.URL)
	for _, name := range []string{"go_goroutines", "lab_build_info", "lab_ready", "lab_runs_queued", "lab_store_commit_writes"} {
		if before[name] == nil {
			t.Errorf("%s missing from the first scrape", name)
		}
	}

	for range 3 {
		if code, _ := l.get(t, "/lessons/01-why-rdma"); code != 200 {
			t.Fatalf("lesson: %d", code)
		}
	}
	if code, _ := l.get(t, "/lessons/99-nope"); code != 404 {
		t.Fatalf("unknown lesson: %d", code)
	}
	if code, _ := l.get(t, "/no/such/page"); code != 404 {
		t.Fatalf("no route: %d", code)
	}

	// A gated run with its event stream open: the stream and the running
	// run show while they last.
	gate, open := sandboxtest.NewGate()
	id := l.submit(t, fmt.Sprintf(`{"experiment":"gate","params":{"id":%d}}`, gate))
	l.waitStatus(t, id, "running")
	req, _ := http.NewRequest("GET", l.URL+"/api/runs/"+id+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := l.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if _, err := bufio.NewReader(res.Body).ReadString('\n'); err != nil {
		t.Fatalf("event stream: %v", err)
	}
	during := scrape(t, l.URL)
	if v := value(during, "lab_http_streams", map[string]string{"kind": "sse"}); v != 1 {
		t.Errorf("lab_http_streams{kind=sse} = %v with one stream open, want 1", v)
	}
	if v := value(during, "lab_runs", map[string]string{"experiment": "gate", "state": "running"}); v != 1 {
		t.Errorf("lab_runs{gate,running} = %v, want 1", v)
	}
	open()
	l.waitStatus(t, id, "done")
	io.Copy(io.Discard, res.Body) // the stream ends with the run

	l.runProgram(t) // a learner's program run, ended at its compile
	// A terminal's WebSocket upgrade (terminals are off here: refused).
	req, _ = http.NewRequest("GET", l.URL+"/api/terminal", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	if code, _ := l.do(t, req); code != http.StatusServiceUnavailable {
		t.Errorf("terminal upgrade with terminals off: %d", code)
	}

	id = l.submit(t, `{"experiment":"echo","params":{"n":5}}`)
	l.waitStatus(t, id, "done")
	id = l.submit(t, `{"experiment":"fails"}`)
	l.waitStatus(t, id, "failed")
	res.Body.Close()

	after := scrape(t, l.URL)
	moved := func(name string, labels map[string]string, want float64) {
		t.Helper()
		if d := value(after, name, labels) - value(before, name, labels); d != want {
			t.Errorf("%s%v moved by %v, want %v", name, labels, d, want)
		}
	}
	moved("lab_http_requests_total", map[string]string{"route": "/lessons/{slug}", "method": "GET", "code": "200"}, 3)
	moved("lab_http_requests_total", map[string]string{"route": "/lessons/{slug}", "code": "404"}, 1)
	moved("lab_http_requests_total", map[string]string{"route": "unmatched", "code": "404"}, 1)
	moved("lab_http_request_duration_seconds", map[string]string{"route": "/lessons/{slug}"}, 4)
	moved("lab_runs_submitted_total", map[string]string{"experiment": "echo"}, 1)
	moved("lab_runs_finished_total", map[string]string{"experiment": "gate", "outcome": "done"}, 1)
	moved("lab_runs_finished_total", map[string]string{"experiment": "echo", "outcome": "done"}, 1)
	moved("lab_runs_finished_total", map[string]string{"experiment": "fails", "outcome": "failed"}, 1)
	moved("lab_run_duration_seconds", map[string]string{"experiment": "echo"}, 1)
	moved("lab_run_queue_wait_seconds", nil, 3)
	moved("lab_program_runs_total", map[string]string{"stage": "compile", "outcome": "failed"}, 1)
	moved("lab_program_run_seconds", map[string]string{"stage": "compile"}, 1)
	moved("lab_http_requests_total", map[string]string{"route": "/api/terminal", "code": "503"}, 1)
	if v := value(after, "lab_http_streams", map[string]string{"kind": "websocket"}); v != 0 {
		t.Errorf("lab_http_streams{kind=websocket} = %v after the upgrade was answered, want 0", v)
	}
	if v := value(after, "lab_http_streams", map[string]string{"kind": "sse"}); v != 0 {
		t.Errorf("lab_http_streams{kind=sse} = %v after the stream ended, want 0", v)
	}
	if value(after, "lab_http_request_duration_seconds", map[string]string{"route": "/api/runs/{id}/events"}) != 0 {
		t.Errorf("the event stream's time went into the request duration histogram")
	}
	if d := value(after, "lab_store_commit_writes", nil) - value(before, "lab_store_commit_writes", nil); d < 1 {
		t.Errorf("no group commit counted after three runs were stored")
	}
	if value(after, "lab_store_write_seconds", nil) <= value(before, "lab_store_write_seconds", nil) {
		t.Errorf("no store write counted")
	}
	if g := after["lab_run_duration_seconds"]; g == nil || g.Metric[0].Histogram.GetSampleSum() <= 0 {
		t.Errorf("lab_run_duration_seconds has no time in it")
	}
}

// TestMetricsAccess: without a token only a direct loopback client reads
// /metrics, never one the reverse proxy forwarded (behind nginx every
// request's peer is loopback); with a token, only its bearer.
func TestMetricsAccess(t *testing.T) {
	l := newMetricsLab(t, metrics.Access{ProxyHeader: "X-Client-Addr"})
	get := func(hdr, val string) int {
		req, _ := http.NewRequest("GET", l.URL+"/metrics", nil)
		if hdr != "" {
			req.Header.Set(hdr, val)
		}
		code, _ := l.do(t, req)
		return code
	}
	if code := get("", ""); code != 200 {
		t.Errorf("direct loopback scrape: %d, want 200", code)
	}
	for _, h := range []string{"X-Real-IP", "X-Forwarded-For", "Forwarded", "X-Client-Addr"} {
		if code := get(h, "203.0.113.9"); code != http.StatusForbidden {
			t.Errorf("a request forwarded by the proxy (%s) without a token: %d, want 403", h, code)
		}
	}

	l = newMetricsLab(t, metrics.Access{Token: "s3cret"})
	if code := get("", ""); code != http.StatusUnauthorized {
		t.Errorf("token set, none given: %d, want 401", code)
	}
	if code := get("Authorization", "Bearer wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d, want 401", code)
	}
	if code := get("Authorization", "Bearer s3cret"); code != 200 {
		t.Errorf("right token: %d, want 200", code)
	}

	// A peer that is not loopback is refused without a token.
	ok, status, _ := metrics.Access{}.Allowed(&http.Request{RemoteAddr: "192.0.2.7:4000", Header: http.Header{}})
	if ok || status != http.StatusForbidden {
		t.Errorf("a remote peer without a token: allowed %v, status %d", ok, status)
	}
}

// TestServeMetricsFlag: --metrics-token and LAB_METRICS_TOKEN reach serve's
// /metrics, which then asks for the token.
func TestServeMetricsFlag(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "lab.db")
	m, out := newMain(map[string]string{"LAB_ADDR": "127.0.0.1:0", "LAB_DB": dbPath, "LAB_BACKEND": "none",
		"LAB_TERMINALS": "0", "LAB_METRICS_TOKEN": "tok"})
	if err := m.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	defer m.Close()
	if code, _ := get(t, "http://"+m.Addr()+"/metrics"); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	req, _ := http.NewRequest("GET", "http://"+m.Addr()+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer tok")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), `lab_ready{backend="none"} 0`) {
		t.Errorf("with the token: %d\n%s", res.StatusCode, b)
	}
}

// TestDeployMetricsExist: every metric name the Grafana dashboard and the
// alert rules in deploy/ use is in a real scrape of a lab that served pages,
// ran an experiment and a learner's program. Per-worker series exist only while a worker is
// joined: those (perWorker) must at least be registered with the lab.
func TestDeployMetricsExist(t *testing.T) {
	l := newMetricsLab(t, metrics.Access{})
	l.get(t, "/")
	id := l.submit(t, `{"experiment":"echo"}`)
	l.waitStatus(t, id, "done")
	l.runProgram(t)
	fams := scrape(t, l.URL)
	registered := map[string]bool{}
	descs := make(chan *prometheus.Desc, 256)
	go func() { l.Lab.Registry().Describe(descs); close(descs) }()
	nameOf := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		if m := nameOf.FindStringSubmatch(d.String()); m != nil {
			registered[m[1]] = true
		}
	}
	perWorker := map[string]bool{"lab_worker_heartbeat_age_seconds": true}

	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	b, err := os.ReadFile("../../deploy/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	var exprs []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert, Expr string
			}
		}
	}
	b, err = os.ReadFile("../../deploy/prometheus-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatalf("prometheus-rules.yaml: %v", err)
	}
	alerts := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
			alerts[r.Alert] = true
		}
	}
	// The alerts: lab not ready, queue growing, guest restarts,
	// LTI deliveries failing, disk for kept machines.
	for _, a := range []string{"RdmalabNotReady", "RdmalabQueueGrowing", "RdmalabGuestRestarts", "RdmalabLTIDeliveriesFailing", "RdmalabKeptMachinesNearBudget"} {
		if !alerts[a] {
			t.Errorf("prometheus-rules.yaml lacks the alert %s", a)
		}
	}
	metricName := regexp.MustCompile(`\b(?:lab|go|process)_[a-z0-9_]+`)
	checked := 0
	for _, e := range exprs {
		for _, name := range metricName.FindAllString(e, -1) {
			family := name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if f, ok := strings.CutSuffix(name, suffix); ok && fams[f] != nil && fams[f].GetType() == dto.MetricType_HISTOGRAM {
					family = f
				}
			}
			checked++
			switch {
			case fams[family] != nil:
			case perWorker[family] && registered[family]:
			default:
				t.Errorf("deploy/ uses %s (in %q), which no scrape has", name, e)
			}
		}
	}
	if checked < 30 {
		t.Errorf("only %d metric references found in deploy/: the scan is broken", checked)
	}
}

// runProgram runs lesson 04's first program exercise to its end.
func (l *metricsLab) runProgram(t *testing.T) {
	t.Helper()
	req, _ := http.NewRequest("POST", l.URL+"/api/lessons/04-first-program/programs/"+programID(t)+"/run", strings.NewReader(`{"source":"int main( { }"}`))
	req.Header.Set("Content-Type", "application/json")
	code, out := l.do(t, req)
	var prog struct{ Run string }
	if json.Unmarshal([]byte(out), &prog); code != http.StatusCreated || prog.Run == "" {
		t.Fatalf("program run: %d %s", code, out)
	}
	l.waitStatus(t, prog.Run, "failed")
}

// programID is the first program exercise of lesson 04.
func programID(t *testing.T) string {
	t.Helper()
	course, err := lessons.Load(lessons.Builtin, lessonOptions())
	if err != nil {
		t.Fatal(err)
	}
	return course.Lesson("04-first-program").Programs[0].ID
}
