package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/attackcost"
	"github.com/rdmalab/rdmalab/internal/labproc"
	"github.com/rdmalab/rdmalab/sandbox"
)

// honestDuring is an honest learner using the lab while an attack goes
// on: every second a page, which must load, and every six seconds a quick
// host run, which must end done. It returns a func that stops it and says what
// the learner saw ("3/3 runs done, 12/12 pages") or fails the test.
func honestDuring(t *testing.T, base string) func() string {
	t.Helper()
	l := newLearner(t, base)
	l.must("GET", "/", "", 200)
	ctx, stop := context.WithCancel(context.Background())
	var pages, pagesOK, runs, runsOK int
	var failures []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ctx.Err() == nil; i++ {
			if i > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
			}
			pages++
			if code, _, err := l.do("GET", "/", ""); err == nil && code == 200 {
				pagesOK++
			} else {
				failures = append(failures, fmt.Sprintf("page: %d %v", code, err))
			}
			if i%6 != 0 { // a run every 6 s: within the lab's run rate for one learner
				continue
			}
			runs++
			code, b, err := l.do("POST", "/api/runs", quickRun)
			var sub struct{ ID string }
			if err != nil || code != http.StatusCreated || json.Unmarshal(b, &sub) != nil || sub.ID == "" {
				failures = append(failures, fmt.Sprintf("submit: %d %v %.200s", code, err, b))
				continue
			}
			var v runView
			for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				code, b, err := l.do("GET", "/api/runs/"+sub.ID, "")
				if err == nil && code == 200 && json.Unmarshal(b, &v) == nil && v.Status.Final() {
					break
				}
			}
			if v.Status == sandbox.StatusDone {
				runsOK++
			} else {
				failures = append(failures, fmt.Sprintf("run %s: %s %s", sub.ID, v.Status, v.Error))
			}
		}
	}()
	return func() string {
		t.Helper()
		stop()
		<-done
		for _, f := range failures {
			t.Errorf("the honest learner during the attack: %s", f)
		}
		if runsOK == 0 {
			t.Errorf("the honest learner's runs: none done during the attack (%d tried)", runs)
		}
		return fmt.Sprintf("%d/%d runs done, %d/%d pages", runsOK, runs, pagesOK, pages)
	}
}

// TestRequestLogFloodRealServer is issue 43, fall 6, against bin/labserver
// as the attack met it (web's TestRequestLogFlood checks the handler's
// bounds in-process): from one address, for 10 s, eight clients send GETs
// with 4 KB paths and 16 KiB of headers, and some with a 1 MiB header
// (the issue: 1,447 requests in 10 s wrote 1.45 GB of log). labserver
// stays under attackcost.MemMax and its log grows by less than
// attackcost.LogMax (in fact a few KiB); the 1 MiB headers are refused
// 431 by the server's own MaxHeaderBytes; an honest learner's pages and
// runs keep working throughout.
func TestRequestLogFloodRealServer(t *testing.T) {
	srv := start(t, labproc.Options{})
	honest := honestDuring(t, srv.URL)
	m := attackcost.Watch(srv.Pid, srv.LogBytes)
	long := srv.URL + "/lessons/" + strings.Repeat("x", 4000)
	var sent, refused431 atomic.Int64
	codes := sync.Map{}
	end := time.Now().Add(10 * time.Second)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			c := &http.Client{Timeout: 30 * time.Second}
			for i := 0; time.Now().Before(end); i++ {
				req, _ := http.NewRequest("GET", long, nil)
				hdr := 16 << 10
				if g == 0 && i%10 == 0 {
					hdr = 1 << 20
				}
				req.Header.Set("X-Junk", strings.Repeat("j", hdr))
				res, err := c.Do(req)
				if err != nil {
					continue // a refused header block may end the connection
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				sent.Add(1)
				if res.StatusCode == http.StatusRequestHeaderFieldsTooLarge {
					refused431.Add(1)
				}
				n, _ := codes.LoadOrStore(res.StatusCode, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}
		})
	}
	wg.Wait()
	cost := m.Stop()
	saw := honest()
	var summary []string
	codes.Range(func(k, v any) bool {
		summary = append(summary, fmt.Sprintf("%v×%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	t.Logf("flood: %d answered requests in 10 s (%s); honest learner: %s", sent.Load(), strings.Join(summary, " "), saw)
	cost.Check(t, "fall 6 request-log flood (real labserver)")
	if sent.Load() < 1000 {
		t.Errorf("the flood sent only %d requests in 10 s; the issue's sent 1,447", sent.Load())
	}
	if refused431.Load() == 0 {
		t.Errorf("no 1 MiB header block was refused 431")
	}
	if cost.LogBytes > 1<<20 {
		t.Errorf("the log grew %d bytes under the flood; the handler's bound keeps it to a few KiB", cost.LogBytes)
	}
}

// TestTrickledBodiesRealServer is issue 43, fall 5, against bin/labserver
// (web's TestTimedOutBodyClosed checks the handler in-process): 64
// connections from one address each POST a body announced as 4,000 bytes
// and trickle it a byte every 200 ms (13 minutes each). The server's
// BodyTimeout (10 s) answers each 408 and closes it — all are gone
// within 25 s, not held for as long as the trickle goes on — while an
// honest learner on the same address keeps its pages and runs.
func TestTrickledBodiesRealServer(t *testing.T) {
	srv := start(t, labproc.Options{})
	honest := honestDuring(t, srv.URL)
	m := attackcost.Watch(srv.Pid, srv.LogBytes)
	addr := strings.TrimPrefix(srv.URL, "http://")
	const conns = 64
	type result struct {
		answer string
		after  time.Duration
		err    error
	}
	results := make(chan result, conns)
	begin := time.Now()
	for range conns {
		go func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				results <- result{err: err}
				return
			}
			defer c.Close()
			fmt.Fprintf(c, "POST /me HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 4000\r\n\r\nn", addr)
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(200 * time.Millisecond):
					}
					if _, err := c.Write([]byte("x")); err != nil {
						return
					}
				}
			}()
			_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
			got, err := io.ReadAll(c)
			first, _, _ := strings.Cut(string(got), "\r\n")
			results <- result{answer: first, after: time.Since(begin), err: err}
		}()
	}
	var worst time.Duration
	answers := map[string]int{}
	for range conns {
		r := <-results
		if r.err != nil {
			t.Errorf("a trickling connection: %v after %s (answer %q): the server did not close it", r.err, r.after.Round(time.Second), r.answer)
			continue
		}
		answers[r.answer]++
		worst = max(worst, r.after)
	}
	cost := m.Stop()
	saw := honest()
	t.Logf("%d trickling connections: answers %v, the last closed after %s; honest learner: %s", conns, answers, worst.Round(100*time.Millisecond), saw)
	cost.Check(t, "fall 5 trickled bodies (real labserver)")
	if answers["HTTP/1.1 408 Request Timeout"] != conns {
		t.Errorf("answers %v, want all %d 408", answers, conns)
	}
	if worst > 25*time.Second {
		t.Errorf("the last trickling connection was closed after %s, want within 25 s (BodyTimeout 10 s)", worst)
	}
}
