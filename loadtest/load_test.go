package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/labproc"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
)

// `make test` runs the short variant (5 s); `make load` the long one:
//
//	go test -run TestLoad -v ./loadtest -args -load.duration=60s
var (
	flagDuration = flag.Duration("load.duration", 5*time.Second, "how long learners and watchers run")
	flagLearners = flag.Int("load.learners", 200, "concurrent learners reading pages and answering questions")
	flagWatchers = flag.Int("load.watchers", 100, "concurrent event-stream (SSE) watchers")
	flagRunners  = flag.Int("load.runners", 3, "learners who keep starting runs for the watchers to watch")
	flagThink    = flag.Duration("load.think", time.Second, "a learner's mean pause between requests (uniform in 0..2x); 0 = as fast as the server answers")
	flagRace     = flag.Bool("load.race", false, "build the server with -race (about 10x slower: a race hunt, not a measurement)")
	flagGrace    = flag.Duration("load.grace", 60*time.Second, "how long requests and streams started before the end may take to finish")
	flagWarmup   = flag.Duration("load.warmup", 0, "load run before the measured time; its latencies are reported apart (errors count throughout)")
	flagLog      = flag.String("load.serverlog", "", "also write the server's log to this file (its request lines carry each request's time in the server)")
)

// ack is a write the server acknowledged; each must be in the database.
type ack struct {
	learner, question string
	attempt           int64
}

// TestLoad runs learners, watchers and run starters against a real
// labserver child with a temp database, then stops the server and checks
// that every acknowledged quiz answer and run is stored. Errors must be
// zero; latencies are reported, never asserted (the machine is shared).
//
// Nothing new starts after -load.duration, but what started is let finish
// (up to -load.grace): a request cut by the test is neither a latency nor
// an error, and on an overloaded machine cutting them would hide exactly
// the slow ones.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a load test (a labserver build, hundreds of learners for seconds), not in the quick tier; make load runs it")
	}
	// The generator shares the machine with the server, and its own
	// collector's pauses and assists land in every latency it measures
	// (~70 cycles in 20 s at the default GOGC, stops of up to 4 ms on two
	// busy cores): a larger heap target makes them rare. Its heap is tens
	// of MiB.
	defer debug.SetGCPercent(debug.SetGCPercent(800))
	if *flagDuration <= 0 || *flagWarmup < 0 || *flagLearners <= 0 || *flagWatchers < 0 || *flagRunners < 0 {
		t.Fatal("load flags must be positive")
	}
	dir := t.TempDir()
	ctx := context.Background()
	buildStart := time.Now()
	bin, err := labproc.Build(ctx, dir, *flagRace)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("labserver built in %s (race=%v)", time.Since(buildStart).Round(time.Second), *flagRace)
	// A class's learners come from many addresses; here every simulated
	// learner shares loopback, so the per-address limits (which a real
	// class behind one NAT address would raise, docs/operations.md) are off.
	opts := labproc.Options{Bin: bin, Dir: dir, Env: []string{"LAB_ADDR_LIMITS=off"}}
	if *flagLog != "" {
		f, err := os.Create(*flagLog)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		opts.Output = f
	}
	srv, err := labproc.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			srv.Kill()
		}
	}()

	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var questions []*quiz.Question
	for _, q := range course.Questions {
		questions = append(questions, q)
	}
	var slugs []string
	for _, l := range course.Lessons {
		slugs = append(slugs, l.Slug)
	}
	if len(questions) == 0 || len(slugs) == 0 {
		t.Fatal("the built-in course has no lessons or questions to load")
	}

	tr := &http.Transport{MaxIdleConns: 1000, MaxIdleConnsPerHost: 1000, IdleConnTimeout: 30 * time.Second}
	defer tr.CloseIdleConnections()
	l := &load{
		base: srv.URL, tr: tr, rec: newRecorder(),
		questions: questions, slugs: slugs, think: *flagThink,
	}
	loadBefore := loadavg()
	if *flagWarmup > 0 {
		l.rec.warm, l.rec.until = newRecorder(), time.Now().Add(*flagWarmup)
	}
	stop, cancelStop := context.WithTimeout(ctx, *flagWarmup+*flagDuration)
	defer cancelStop()
	hard, cancelHard := context.WithTimeout(ctx, *flagWarmup+*flagDuration+*flagGrace)
	defer cancelHard()
	l.stop, l.hard = stop, hard
	start := time.Now()
	var wg sync.WaitGroup
	for i := range *flagLearners {
		wg.Go(func() { l.learner(i) })
	}
	for range *flagRunners {
		wg.Go(func() { l.runner() })
	}
	for range *flagWatchers {
		wg.Go(func() { l.watcher() })
	}
	wg.Wait()
	elapsed := time.Since(start)
	if hard.Err() != nil {
		t.Errorf("requests still unfinished %s after the end of the load", *flagGrace)
	}

	// The server is still fine after the load, then shuts down cleanly
	// (what is acknowledged must survive a normal stop).
	if res, err := http.Get(srv.URL + "/healthz"); err != nil || res.StatusCode != 200 {
		t.Errorf("healthz after the load: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	stopped = true
	if err := srv.Stop(30 * time.Second); err != nil {
		t.Errorf("stopping the server: %v", err)
	}

	rows, errs := l.rec.report()
	var out strings.Builder
	fmt.Fprintf(&out, "load: %d learners (think %s), %d watchers, %d run starters for %s on %s (server race=%v)\n",
		*flagLearners, *flagThink, *flagWatchers, *flagRunners, elapsed.Round(100*time.Millisecond), srv.URL, *flagRace)
	// The machine is shared: say how busy it was, so the figures can be read.
	fmt.Fprintf(&out, "machine: %d CPUs, load average before %s, after %s\n", runtime.NumCPU(), loadBefore, loadavg())
	if *flagWarmup > 0 {
		fmt.Fprintf(&out, "after a warm-up of %s (below):\n", *flagWarmup)
	}
	writeTable(&out, rows, elapsed-*flagWarmup)
	fmt.Fprintf(&out, "errors: %d; counters: %v\n", errs, l.rec.counters())
	if *flagWarmup > 0 {
		// Shown, not hidden: the server has just started (its first
		// pages, connections and heap) and the run starters are not yet
		// slowed by the per-learner run limit.
		warm, _ := l.rec.warm.report()
		fmt.Fprintf(&out, "the warm-up's first %s (the server just started; the run starters not yet slowed by the per-learner run limit):\n", *flagWarmup)
		writeTable(&out, warm, *flagWarmup)
	}
	fmt.Fprint(os.Stdout, out.String())
	if errs > 0 {
		t.Errorf("%d errors (target 0):\n%s\nserver log tail:\n%s", errs, l.rec.errorSamples(), srv.Tail(30))
	}

	// Every acknowledged write is in the database.
	l.checkStored(t, srv.DB)

	// The load really happened: each learner got through, and the
	// watchers saw runs stream to their end.
	var reqs opStats
	for _, r := range rows {
		if r.Op == "requests" {
			reqs = r
		}
	}
	if reqs.N < *flagLearners {
		t.Errorf("only %d requests for %d learners", reqs.N, *flagLearners)
	}
	if *flagWatchers > 0 && *flagRunners > 0 && l.rec.counters()["stream-ended"] == 0 {
		t.Errorf("no watcher saw a run stream to its end")
	}
}

// load is one load run's shared state.
type load struct {
	base      string
	tr        *http.Transport
	rec       *recorder
	questions []*quiz.Question
	slugs     []string
	think     time.Duration
	// stop ends the starting of new work; hard cuts what is still going.
	stop, hard context.Context

	mu       sync.Mutex
	attempts []ack
	runs     []string // acknowledged run ids, in order
	latest   atomic.Value
}

func (l *load) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Transport: l.tr, Jar: jar, Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// pause sleeps a random think time, or returns false at the end of the load.
func (l *load) pause() bool {
	d := time.Duration(rand.Int64N(int64(2*l.think) + 1))
	select {
	case <-l.stop.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// do sends one request and records its latency under op. It returns the
// body (read fully) and ok=false when the status is not want (the caller
// records why) or the request failed (recorded here).
func (l *load) do(c *http.Client, op string, req *http.Request, want int) ([]byte, *http.Response, bool) {
	ctx := l.hard
	req = req.WithContext(ctx)
	start := time.Now()
	res, err := c.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			l.rec.fail(op, "%s %s: %v", req.Method, req.URL.Path, err)
		}
		return nil, nil, false
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		if ctx.Err() == nil {
			l.rec.fail(op, "%s %s: reading body: %v", req.Method, req.URL.Path, err)
		}
		return nil, nil, false
	}
	l.rec.observe(op, time.Since(start))
	if res.StatusCode != want {
		return body, res, false
	}
	return body, res, true
}

// learner opens the home page, answers a question, then reads pages and
// answers questions until the end of the load.
func (l *load) learner(i int) {
	c := l.client()
	langs := []string{"zh", "en"}
	lang := langs[i%2]
	get := func(op, path string) {
		req, _ := http.NewRequest("GET", l.base+path, nil)
		req.Header.Set("Accept-Encoding", "gzip") // what browsers send
		if body, res, ok := l.do(c, op, req, 200); !ok && res != nil {
			l.rec.fail(op, "GET %s: %d %s", path, res.StatusCode, clip(body))
		}
	}
	// Learners arrive over the first think time, as every later request
	// of theirs is spaced. Starting all 200 in the same millisecond made
	// the first home page and answer of each one queue behind 400
	// requests on two cores (p99 ~300 ms for home and quiz, all of it in
	// the first half second: 23 and 42 ms without it); a class's real
	// burst is measured where it matters, by make bench's class of 30.
	if !l.pause() {
		return
	}
	get("home", "/?lang="+lang)
	l.answer(c)
	for l.pause() {
		switch n := rand.IntN(100); {
		case n < 40:
			get("lesson", "/lessons/"+l.slugs[rand.IntN(len(l.slugs))])
		case n < 55:
			get("home", "/")
		case n < 65:
			get("static", "/static/css/lab.css")
		default:
			l.answer(c)
		}
	}
}

// answer submits a valid (random, right or wrong) answer to a random
// question and records the acknowledged attempt.
func (l *load) answer(c *http.Client) {
	q := l.questions[rand.IntN(len(l.questions))]
	body, _ := json.Marshal(map[string]any{"answer": randomAnswer(q)})
	req, _ := http.NewRequest("POST", l.base+"/api/quiz/"+q.ID+"/attempts", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	b, res, ok := l.do(c, "quiz", req, 200)
	if !ok {
		if res != nil {
			l.rec.fail("quiz", "POST %s: %d %s", q.ID, res.StatusCode, clip(b))
		}
		return
	}
	var out struct {
		AttemptID int64 `json:"attempt_id"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.AttemptID == 0 {
		l.rec.fail("quiz", "POST %s: no attempt id in %s", q.ID, clip(b))
		return
	}
	learner := learnerOf(c, l.base)
	l.mu.Lock()
	l.attempts = append(l.attempts, ack{learner: learner, question: q.ID, attempt: out.AttemptID})
	l.mu.Unlock()
}

// randomAnswer is a well-formed answer for q.
func randomAnswer(q *quiz.Question) any {
	ids := make([]string, len(q.Options))
	for i, o := range q.Options {
		ids[i] = o.ID
	}
	switch q.Type {
	case quiz.Single:
		return ids[rand.IntN(len(ids))]
	case quiz.Multi:
		rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		return ids[:1+rand.IntN(len(ids))]
	case quiz.Order:
		rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		return ids
	default:
		return q.Value + float64(rand.IntN(3)-1)
	}
}

// learnerOf is the learner id behind the client's cookie (the part before
// the signature, when the cookie is signed).
func learnerOf(c *http.Client, base string) string {
	u, _ := url.Parse(base)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "lab_learner" {
			id, _, _ := strings.Cut(ck.Value, ".")
			return id
		}
	}
	return ""
}

// runExperiment is cheap (a host child pinning 1 MiB) so the run
// starters exercise the queue, the store and the fan-out, not the CPU.
const runExperiment = `{"experiment":"memlock","params":{"limit":"65536","size":1048576,"ipc_lock":"drop"}}`

// runner starts a run, waits for it to end, pauses, and again, until the
// end of the load; the watchers stream these runs.
func (l *load) runner() {
	c := l.client()
	for l.stop.Err() == nil {
		req, _ := http.NewRequest("POST", l.base+"/api/runs", strings.NewReader(runExperiment))
		req.Header.Set("Content-Type", "application/json")
		b, res, ok := l.do(c, "run-submit", req, http.StatusCreated)
		switch {
		case ok:
			var out struct{ ID string }
			if err := json.Unmarshal(b, &out); err != nil || out.ID == "" {
				l.rec.fail("run-submit", "no run id in %s", clip(b))
				return
			}
			l.mu.Lock()
			l.runs = append(l.runs, out.ID)
			l.mu.Unlock()
			l.latest.Store(out.ID)
			l.waitRun(c, out.ID)
		case res != nil && res.StatusCode == http.StatusTooManyRequests:
			// The per-learner limit or a full queue: the right answer
			// under load. Wait as told.
			l.rec.count("run-429")
			secs, _ := strconv.Atoi(res.Header.Get("Retry-After"))
			select {
			case <-l.stop.Done():
				return
			case <-time.After(time.Duration(max(secs, 1)) * time.Second):
			}
			continue
		case res != nil:
			l.rec.fail("run-submit", "POST /api/runs: %d %s", res.StatusCode, clip(b))
			return
		default:
			return // transport error (recorded) or the end of the run
		}
		if !l.pause() {
			return
		}
	}
}

// waitRun polls the run until it is final (even past the end of the
// load: a started run ends within its time limit).
func (l *load) waitRun(c *http.Client, id string) {
	for {
		req, _ := http.NewRequest("GET", l.base+"/api/runs/"+id, nil)
		b, res, ok := l.do(c, "run-status", req, 200)
		if !ok {
			if res != nil {
				l.rec.fail("run-status", "GET run %s: %d %s", id, res.StatusCode, clip(b))
			}
			return
		}
		var out struct{ Status sandbox.Status }
		if err := json.Unmarshal(b, &out); err != nil {
			l.rec.fail("run-status", "GET run %s: %v", id, err)
			return
		}
		if out.Status.Final() {
			if out.Status != sandbox.StatusDone {
				l.rec.fail("run-status", "run %s ended %s", id, out.Status)
			}
			return
		}
		select {
		case <-l.hard.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// watcher streams the newest run's events, checks them, then waits for
// the next run (as a learner's open page would), until the end of the
// load; a stream it started is followed to its end.
func (l *load) watcher() {
	c := l.client()
	c.Timeout = 0 // streams live as long as their run
	watched := ""
	for l.stop.Err() == nil {
		id, _ := l.latest.Load().(string)
		if id == "" || id == watched {
			select {
			case <-l.stop.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		l.watch(l.hard, c, id)
		watched = id
	}
}

// watch follows one run's stream to its end, resuming with Last-Event-ID
// when the server drops it (as a browser would). Events must arrive in
// order with no gap; the delay from an event's emission to its arrival
// here is the fan-out delay.
func (l *load) watch(ctx context.Context, c *http.Client, id string) {
	var last int64
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			l.rec.count("stream-resumed")
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", l.base+"/api/runs/"+id+"/events", nil)
		if last > 0 {
			req.Header.Set("Last-Event-ID", strconv.FormatInt(last, 10))
		}
		start := time.Now()
		res, err := c.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				l.rec.fail("sse", "GET events %s: %v", id, err)
			}
			return
		}
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			l.rec.fail("sse", "GET events %s: %d %s %s", id, res.StatusCode, res.Header.Get("Content-Type"), clip(b))
			return
		}
		ended, err := l.readStream(res.Body, id, start, &last)
		if ended {
			// Read the response's end as a browser does, so the
			// connection is kept for the next run: closed unread, every
			// watcher opened a new connection for every run.
			_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4096))
		}
		res.Body.Close()
		switch {
		case ended:
			l.rec.count("stream-ended")
			return
		case ctx.Err() != nil:
			return
		case err != nil:
			l.rec.fail("sse", "run %s: %v", id, err)
			return
		}
		// Closed without `event: end`: dropped as slow; resume.
	}
}

// readStream reads SSE messages until the end event (ended=true), EOF or
// an error. last is the highest seq seen, kept across resumptions.
func (l *load) readStream(body io.Reader, id string, start time.Time, last *int64) (ended bool, err error) {
	br := bufio.NewReader(body)
	first, live := true, false
	var msgID, event, data string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return false, nil
			}
			return false, nil // cut by ctx: the caller checks ctx
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if data == "" && event == "" {
				continue
			}
			if event == "end" {
				return true, nil
			}
			var ev struct {
				Seq  int64     `json:"seq"`
				Time time.Time `json:"time"`
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				return false, fmt.Errorf("bad event data %q: %w", clip([]byte(data)), err)
			}
			if ev.Seq != *last+1 || msgID != strconv.FormatInt(ev.Seq, 10) {
				return false, fmt.Errorf("event seq %d (id %q) after %d: a gap or a repeat", ev.Seq, msgID, *last)
			}
			*last = ev.Seq
			if first {
				l.rec.observe("sse-first-event", time.Since(start))
				first = false
			}
			if live {
				l.rec.observe("sse-fanout-delay", time.Since(ev.Time))
			}
			msgID, event, data = "", "", ""
		case strings.HasPrefix(line, ":"):
			if strings.TrimSpace(line[1:]) == "live" {
				live = true
			}
		case strings.HasPrefix(line, "id: "):
			msgID = line[4:]
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		case strings.HasPrefix(line, "retry: "):
		default:
			return false, fmt.Errorf("unexpected stream line %q", clip([]byte(line)))
		}
	}
}

// checkStored opens the stopped server's database and finds every
// acknowledged attempt (same learner and question) and run.
func (l *load) checkStored(t *testing.T, path string) {
	t.Helper()
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	missing := 0
	for _, a := range l.attempts {
		got, err := db.Attempt(ctx, a.learner, a.attempt)
		if err != nil || got.QuestionID != a.question {
			missing++
			if missing <= 5 {
				t.Errorf("acknowledged attempt %d (%s by %s) not stored: %v %+v", a.attempt, a.question, a.learner, err, got)
			}
		}
	}
	for _, id := range l.runs {
		if _, err := db.Run(ctx, id); err != nil {
			missing++
			t.Errorf("acknowledged run %s not stored: %v", id, err)
		}
	}
	fmt.Printf("stored: %d acknowledged quiz attempts and %d runs checked, %d missing\n", len(l.attempts), len(l.runs), missing)
	if len(l.attempts) == 0 {
		t.Error("no quiz answer was acknowledged")
	}
}

// loadavg is the 1-minute load average ("?" where unknown).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
