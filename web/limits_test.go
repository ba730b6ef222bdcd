package web

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/attackcost"
	"github.com/rdmalab/rdmalab/runs/runner"
)

// postAs posts a JSON body as a cookieless client at addr (through the
// trusted proxy header) and returns the status and body.
func postAs(t *testing.T, url, addr, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Real-IP", addr)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

var holdKeys atomic.Int64

// countRows counts a table's rows through a connection of its own, as
// another process would.
func countRows(t *testing.T, path, table string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCookielessRunsCannotTakeTheQueue is issue 18.1: 25 cookieless
// submissions from one address used to be 21 accepted runs (each a new
// learner) and then 429 for everyone. Now one address holds at most
// RunsPerAddr runs, and a learner elsewhere is still queued right behind.
func TestCookielessRunsCannotTakeTheQueue(t *testing.T) {
	env := newRunEnv(t, runner.Config{Concurrency: 1, QueueMax: 20})
	key := 1_000_000 + holdKeys.Add(1)*1000
	t.Cleanup(func() {
		for k := key; k < key+30; k++ {
			close(gate(k))
		}
	})
	codes := map[int]int{}
	for i := range 25 {
		body := fmt.Sprintf(`{"experiment":"hold","params":{"key":%d,"before":0,"after":0}}`, key+int64(i))
		code, b := postAs(t, env.HTTP.URL+"/api/runs", "198.51.100.7", body)
		codes[code]++
		if code == http.StatusTooManyRequests && !strings.Contains(string(b), "网络地址") {
			t.Errorf("429 says %s", b)
		}
	}
	max := env.Server.Limits().RunsPerAddr
	if codes[http.StatusCreated] != max || codes[http.StatusTooManyRequests] != 25-max {
		t.Fatalf("statuses %v, want %d×201 then 429", codes, max)
	}
	// A real learner at another address is accepted, behind only those.
	body := fmt.Sprintf(`{"experiment":"hold","params":{"key":%d,"before":0,"after":0}}`, key+29)
	code, b := postAs(t, env.HTTP.URL+"/api/runs", "203.0.113.9", body)
	var out runCreated
	json.Unmarshal(b, &out)
	if code != http.StatusCreated || out.Position > max {
		t.Fatalf("real learner: %d %s, want 201 within %d of the front", code, b, max)
	}
}

// TestCookielessWritesAreBounded is issue 18.3: cookieless quiz attempts
// created one learner row each, without limit. Now the first writes of new
// learners are bounded per address, and so are all writes.
func TestCookielessWritesAreBounded(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	url := env.HTTP.URL + "/api/quiz/one/q1/attempts"
	accepted := 0
	for range 300 {
		code, _ := postAs(t, url, "198.51.100.7", `{"answer":"nope"}`)
		if code != http.StatusTooManyRequests {
			accepted++
		}
	}
	learners := countRows(t, env.DB.Path, "learners")
	burst := env.Server.Limits().NewLearnerBurst
	if accepted > burst+1 || learners > burst+1 {
		t.Fatalf("%d of 300 cookieless attempts got through, %d learners created; want at most %d", accepted, learners, burst+1)
	}
	// Another address is not affected.
	if code, b := postAs(t, url, "203.0.113.9", `{"answer":"nope"}`); code == http.StatusTooManyRequests {
		t.Fatalf("other address refused: %s", b)
	}
}

// TestCookielessReadsCreateBoundedLearners: reading a lesson records it
// as opened, which creates the learner's row; cookieless readers from one
// address create at most the new-learner burst, and are still served.
func TestCookielessReadsCreateBoundedLearners(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	burst := env.Server.Limits().NewLearnerBurst
	for range burst + 40 {
		req, _ := http.NewRequest("GET", env.HTTP.URL+"/lessons/01-one", nil)
		req.Header.Set("X-Real-IP", "198.51.100.9")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("lesson page: %d", res.StatusCode)
		}
	}
	if n := countRows(t, env.DB.Path, "learners"); n > burst+1 {
		t.Fatalf("%d cookieless reads created %d learners, want at most %d", burst+40, n, burst+1)
	}
}

// TestSlowBodiesAreCutOff is issue 18.2: a body trickled a byte at a time
// held its connection forever, and one client could open thousands. Now
// the body must arrive within BodyTimeout, connections per address are
// capped, and /healthz keeps answering another address throughout.
func TestSlowBodiesAreCutOff(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const perAddr = 20
	srv := httptest.NewUnstartedServer(env.Server.Handler())
	srv.Listener = LimitListener(ln, perAddr, nil)
	srv.Config.ReadHeaderTimeout = 10 * time.Second
	env.Server.cfg.Limits.BodyTimeout = 1500 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()

	// perAddr+30 slow posters from 127.0.0.1.
	slow := func() (net.Conn, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		_, err = fmt.Fprintf(c, "POST /me HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 65536\r\n\r\nn")
		return c, err
	}
	var conns []net.Conn
	for range perAddr + 30 {
		c, err := slow()
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// Those over the cap are closed at once: a read sees EOF.
	closed := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		if ne, ok := err.(net.Error); err != nil && !(ok && ne.Timeout()) {
			closed++
		}
	}
	if closed < 30 {
		t.Errorf("%d connections over the cap closed, want ≥ 30", closed)
	}
	// Another address is served meanwhile.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	res, err := hc.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz during the attack: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/healthz during the attack: %d", res.StatusCode)
	}
	// The slow posters within the cap are answered 408 and closed once
	// BodyTimeout has passed (well before a trickle of 65536 bytes ends).
	timedOut := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil && strings.Contains(line, " 408 ") {
			timedOut++
		}
	}
	if timedOut < perAddr-1 {
		t.Errorf("%d slow posters answered 408, want ≈ %d", timedOut, perAddr)
	}
}

// TestRefusedTrickledBodyClosed is issue 28, fall 8: a cross-origin POST
// is refused (403) before its body is read; its client trickles the body a
// byte every 200 ms. net/http reads what is left of a body before it
// reuses a connection, and that read had no deadline: the connection stayed
// open for as long as the trickle went on (70 s and more). Now the request's
// one deadline (BodyTimeout, 1 s here) covers it: the connection is closed
// well before the trickle of 1000 bytes (200 s) could end.
func TestRefusedTrickledBodyClosed(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	srv := httptest.NewUnstartedServer(env.Server.Handler())
	env.Server.cfg.Limits.BodyTimeout = time.Second
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /api/runs HTTP/1.1\r\nHost: %s\r\nOrigin: http://evil.example\r\nSec-Fetch-Site: cross-site\r\n"+
		"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", srv.Listener.Addr())
	// trickle until the server closes the connection (a write fails)
	var sent atomic.Int64
	go func() {
		for {
			time.Sleep(200 * time.Millisecond)
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
			sent.Add(1)
		}
	}()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	got, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the connection was still open 20 s after a refused request (%d bytes trickled; answer so far %q)", sent.Load(), got)
	}
	if !strings.HasPrefix(string(got), "HTTP/1.1 403 ") {
		t.Fatalf("answer %q, want 403", got)
	}
	t.Logf("refused and closed by the server after %d trickled bytes", sent.Load())
}

// TestTimedOutBodyClosed is issue 43, fall 5: a same-origin POST whose
// body trickles in a byte every 200 ms is answered 408 once BodyTimeout
// (1 s here) has passed; limitBodies lifted the read deadline before it
// looked at the error, and net/http then went on draining what was left
// of the body (up to 256 KiB) with no deadline, so the connection stayed
// open for as long as the trickle went on. Now it is closed right after
// the 408, well before the trickle of 4,000 bytes (13 minutes) could end;
// an honest learner's page loads while the trickle goes on. (faults'
// TestTrickledBodiesRealServer does this to bin/labserver, 64 times over.)
func TestTimedOutBodyClosed(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	srv := httptest.NewUnstartedServer(env.Server.Handler())
	env.Server.cfg.Limits.BodyTimeout = time.Second
	srv.Start()
	t.Cleanup(srv.Close)
	cost := attackcost.WatchSelf(func() int64 { return int64(env.Logs.Len()) })
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /me HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 4000\r\n\r\nn", srv.Listener.Addr())
	var sent atomic.Int64
	go func() {
		for {
			time.Sleep(200 * time.Millisecond)
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
			sent.Add(1)
		}
	}()
	if res, err := http.Get(srv.URL + "/"); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("an honest learner's page during the trickle: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	got, err := io.ReadAll(c)
	cost.Stop().Check(t, "fall 5 trickled body (in-process)")
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the connection was still open 20 s after its body timed out (%d bytes trickled; answer so far %.80q)", sent.Load(), got)
	}
	if !strings.HasPrefix(string(got), "HTTP/1.1 408 ") {
		t.Fatalf("answer %.200q, want 408", got)
	}
	t.Logf("answered 408 and closed by the server after %d trickled bytes", sent.Load())
}
