// Package faults breaks a real labserver on purpose — kills its agent and
// its guest, stops and kills the server mid-run, locks its database, fills
// its disk — and checks that each ends in a clear state with nothing
// acknowledged lost. The server runs as a child process (internal/labproc)
// so it can be killed like a real one.
package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/labproc"
	"github.com/rdmalab/rdmalab/internal/testwait"
	"github.com/rdmalab/rdmalab/sandbox"
)

// bin is labserver, built on first use into TestMain's folder.
var bin labproc.Once

func TestMain(m *testing.M) {
	var err error
	bin.Dir, err = os.MkdirTemp("", "rdmalab-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(bin.Dir)
	os.Exit(code)
}

// labserver builds the binary once for the package. Under -short every
// test here skips: each builds labserver and starts, kills and restarts
// real server processes (minutes on a busy machine); make test runs them.
func labserver(t *testing.T) string {
	t.Helper()
	return bin.Get(t, "builds labserver and breaks real server processes")
}

// start starts a server in dir (its database dir/lab.db unless opt.DB
// says otherwise) and kills it at the end of the test if still running.
func start(t *testing.T, opt labproc.Options) *labproc.Server {
	t.Helper()
	opt.Bin = labserver(t) // skips under -short
	if opt.Dir == "" {
		opt.Dir = t.TempDir()
	}
	srv, err := labproc.Start(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !srv.Exited() {
			srv.Kill()
		}
		if t.Failed() {
			t.Logf("server log tail:\n%s", srv.Tail(40))
		}
	})
	return srv
}

// learner is one browser: a cookie jar against one server URL (which a
// restart changes, hence the field).
type learner struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newLearner(t *testing.T, base string) *learner {
	jar, _ := cookiejar.New(nil)
	return &learner{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// moveTo points the learner at a restarted server, keeping its cookies
// (cookie jars are per host, and the port changes).
func (l *learner) moveTo(base string) {
	l.t.Helper()
	from, _ := http.NewRequest("GET", l.base, nil)
	to, _ := http.NewRequest("GET", base, nil)
	l.c.Jar.SetCookies(to.URL, l.c.Jar.Cookies(from.URL))
	l.base = base
}

// do sends a request and returns the status and body.
func (l *learner) do(method, path, body string) (int, []byte, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, l.base+path, r)
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := l.c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

// must is do that fails the test on a transport error or another status.
func (l *learner) must(method, path, body string, want int) []byte {
	l.t.Helper()
	code, b, err := l.do(method, path, body)
	if err != nil {
		l.t.Fatalf("%s %s: %v", method, path, err)
	}
	if code != want {
		l.t.Fatalf("%s %s: %d, want %d: %s", method, path, code, want, b)
	}
	return b
}

// runView is GET /api/runs/{id}.
type runView struct {
	ID      string         `json:"id"`
	Status  sandbox.Status `json:"status"`
	Backend string         `json:"backend"`
	Error   string         `json:"error"`
}

func (l *learner) submit(body string) string {
	l.t.Helper()
	var out struct{ ID string }
	if err := json.Unmarshal(l.must("POST", "/api/runs", body, http.StatusCreated), &out); err != nil || out.ID == "" {
		l.t.Fatalf("submit: %v %+v", err, out)
	}
	return out.ID
}

func (l *learner) run(id string) runView {
	l.t.Helper()
	var v runView
	if err := json.Unmarshal(l.must("GET", "/api/runs/"+id, "", 200), &v); err != nil {
		l.t.Fatal(err)
	}
	return v
}

// waitRun polls until cond holds for the run, or fails after timeout.
func (l *learner) waitRun(id string, timeout time.Duration, what string, cond func(runView) bool) runView {
	l.t.Helper()
	var v runView
	if !testwait.For(timeout, 50*time.Millisecond, func() bool { v = l.run(id); return cond(v) }) {
		l.t.Fatalf("run %s: %s not reached within %s (status %s, error %q)", id, what, timeout, v.Status, v.Error)
	}
	return v
}

func final(v runView) bool { return v.Status.Final() }

// sseEvent is one data message of a run's event stream.
type sseEvent struct {
	ID    string
	Event sandbox.Event
}

// replay reads a run's whole event stream (the run must be final: the
// stream then replays and ends) and checks it is in order with no gap.
func (l *learner) replay(id string) []sandbox.Event {
	l.t.Helper()
	req, _ := http.NewRequest("GET", l.base+"/api/runs/"+id+"/events", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := l.c.Do(req.WithContext(ctx))
	if err != nil {
		l.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		l.t.Fatalf("events of %s: %d %s", id, res.StatusCode, b)
	}
	var evs []sandbox.Event
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var event, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if event == "end" {
				return evs
			}
			if data != "" {
				var ev sandbox.Event
				if err := json.Unmarshal([]byte(data), &ev); err != nil {
					l.t.Fatalf("event data %q: %v", data, err)
				}
				if ev.Seq != int64(len(evs)+1) {
					l.t.Fatalf("run %s: event seq %d at position %d", id, ev.Seq, len(evs)+1)
				}
				evs = append(evs, ev)
			}
			event, data = "", ""
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
	l.t.Fatalf("run %s: stream ended without `event: end` after %d events (%v)", id, len(evs), sc.Err())
	return nil
}

// children returns the pids whose parent is pid and whose command line
// contains word.
func children(pid int, word string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so split after ')'.
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(strings.ReplaceAll(string(cmd), "\x00", " "), word) {
			out = append(out, n)
		}
	}
	return out
}

// waitChild waits (bounded) for a child of pid matching word.
func waitChild(t *testing.T, pid int, word string, timeout time.Duration) int {
	t.Helper()
	var c []int
	if !testwait.For(timeout, 20*time.Millisecond, func() bool { c = children(pid, word); return len(c) > 0 }) {
		t.Fatalf("no %q child of %d within %s", word, pid, timeout)
	}
	return c[0]
}

// longRun is a host experiment that runs for seconds (tcp-cost at its
// longest) and emits events while it goes.
const longRun = `{"experiment":"tcp-cost","params":{"seconds":10,"msg_size":65536}}`

// quickRun is a host experiment that ends within a second.
const quickRun = `{"experiment":"memlock","params":{"limit":"65536","size":1048576,"ipc_lock":"drop"}}`
