package faults

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	_ "modernc.org/sqlite"

	"github.com/rdmalab/rdmalab/internal/labproc"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/store"
)

// question is a real question of the built-in course and a valid answer.
func question(t *testing.T) (string, string) {
	t.Helper()
	c, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range sortedKeys(c.Questions) {
		q := c.Questions[id]
		switch q.Type {
		case quiz.Single:
			return id, fmt.Sprintf(`{"answer":%q}`, q.Options[0].ID)
		case quiz.Numeric:
			return id, fmt.Sprintf(`{"answer":%v}`, q.Value)
		}
	}
	t.Fatal("the built-in course has no single or numeric question")
	return "", ""
}

// formAnswer is the form value of a JSON answer body from question.
func formAnswer(t *testing.T, body string) string {
	t.Helper()
	var v struct{ Answer any }
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(v.Answer)
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// answer posts an attempt; it returns the acknowledged attempt id, or the
// status and body of a refusal.
func (l *learner) answer(qid, body string) (int64, int, string, error) {
	code, b, err := l.do("POST", "/api/quiz/"+qid+"/attempts", body)
	if err != nil {
		return 0, 0, "", err
	}
	if code != 200 {
		return 0, code, string(b), nil
	}
	var out struct {
		AttemptID int64 `json:"attempt_id"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.AttemptID == 0 {
		return 0, code, string(b), fmt.Errorf("200 without an attempt id: %s", b)
	}
	return out.AttemptID, code, "", nil
}

// learnerID is the id behind the learner's cookie.
func (l *learner) learnerID() string {
	l.t.Helper()
	u, _ := url.Parse(l.base)
	for _, c := range l.c.Jar.Cookies(u) {
		if c.Name == "lab_learner" {
			id, _, _ := strings.Cut(c.Value, ".")
			return id
		}
	}
	l.t.Fatal("no learner cookie")
	return ""
}

// checkAcked opens the (stopped) server's database and checks every
// acknowledged attempt is there.
func checkAcked(t *testing.T, dbPath, learner string, acked []int64) {
	t.Helper()
	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatalf("the database does not reopen after the fault: %v", err)
	}
	defer db.Close()
	for _, id := range acked {
		if _, err := db.Attempt(context.Background(), learner, id); err != nil {
			t.Errorf("acknowledged attempt %d lost: %v", id, err)
		}
	}
	raw, err := sql.Open("sqlite", "file:"+dbPath) // the store keeps its pools to itself
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT COUNT(*) FROM attempts WHERE learner = ?`, learner).Scan(&n); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d acknowledged attempts, %d stored", len(acked), n)
}

// clearRefusal checks a refused write is a JSON error a client can act
// on — 503 "unavailable", saying nothing was saved — not a hang, a
// dropped connection, an HTML page or an anonymous internal error.
func clearRefusal(t *testing.T, code int, body string) {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	if code != 503 || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != "unavailable" ||
		!strings.Contains(e.Error.Message, "saved") {
		t.Errorf("refused write: %d %q, want 503 unavailable saying nothing was saved", code, body)
	}
}

// TestSQLiteBusy: another process holds the database's write lock (a
// backup tool, a second labserver, sqlite3 in a shell). Writes wait for it
// up to busy_timeout (5 s) and then succeed if it was released, or fail
// with a clear error; reads go on meanwhile; nothing acknowledged is lost.
func TestSQLiteBusy(t *testing.T) {
	srv := start(t, labproc.Options{})
	l := newLearner(t, srv.URL)
	l.must("GET", "/?lang=en", "", 200) // English messages, which the checks read
	qid, body := question(t)
	var acked []int64
	ack := func(id int64) { acked = append(acked, id) }
	if id, code, b, err := l.answer(qid, body); err != nil || id == 0 {
		t.Fatalf("answer before the lock: %v %d %s", err, code, b)
	} else {
		ack(id)
	}

	other, err := sql.Open("sqlite", "file:"+srv.DB+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	lock := func() *sql.Conn {
		t.Helper()
		c, err := other.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
			t.Fatal(err)
		}
		return c
	}
	unlock := func(c *sql.Conn) {
		if _, err := c.ExecContext(ctx, `ROLLBACK`); err != nil {
			t.Error(err)
		}
		c.Close()
	}

	// A lock held for 1 s: the write waits and succeeds.
	c := lock()
	released := time.AfterFunc(time.Second, func() { unlock(c) })
	t0 := time.Now()
	id, code, b, err := l.answer(qid, body)
	waited := time.Since(t0)
	released.Stop()
	if err != nil || id == 0 {
		t.Fatalf("a write under a 1 s lock: %v %d %s", err, code, b)
	}
	ack(id)
	if waited < 800*time.Millisecond {
		t.Errorf("the write took %s under a 1 s lock: was the lock held?", waited)
	}
	t.Logf("write under a 1 s lock: waited %s, then stored", waited.Round(time.Millisecond))
	time.Sleep(1100 * time.Millisecond) // the AfterFunc has run

	// A lock held for longer than busy_timeout: the write fails clearly,
	// reads go on.
	c = lock()
	t0 = time.Now()
	id, code, b, err = l.answer(qid, body)
	took := time.Since(t0)
	if err != nil {
		t.Fatalf("write under a long lock: the connection failed instead of an answer: %v", err)
	}
	if id != 0 {
		ack(id)
		t.Errorf("a write was acknowledged while another process held the write lock")
	} else {
		clearRefusal(t, code, b)
	}
	if took > 15*time.Second {
		t.Errorf("the refused write took %s (busy_timeout is 5 s)", took)
	}
	t.Logf("write under a held lock: %d after %s: %s", code, took.Round(time.Millisecond), strings.TrimSpace(b))
	// The form routes answer the same refusal as a page of their own
	// (they used to answer the generic 500 page, and the no-JavaScript
	// quiz form raw JSON): 503, Retry-After, "nothing was saved".
	for _, f := range []struct{ path, form string }{
		{"/me", "name=Ada"},
		{"/lessons/01-why-rdma/complete", ""},
		{"/api/quiz/" + qid + "/attempts", "lesson=01-why-rdma&answer=" + url.QueryEscape(formAnswer(t, body))},
		{"/runs", "experiment=tcp-cost"},
	} {
		req, _ := http.NewRequest("POST", l.base+f.path, strings.NewReader(f.form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := l.c.Do(req)
		if err != nil {
			t.Fatalf("POST %s under the lock: %v", f.path, err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" ||
			!strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(page), "nothing was saved") {
			t.Errorf("form POST %s under the lock: %d %q Retry-After %q; want the 503 busy page",
				f.path, res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Retry-After"))
		}
	}
	for _, path := range []string{"/healthz", "/static/css/lab.css", "/api/experiments", "/", "/lessons/01-why-rdma"} {
		t0 := time.Now()
		if code, _, err := l.do("GET", path, ""); err != nil || code != 200 {
			t.Errorf("GET %s while the database is write-locked: %d %v", path, code, err)
		}
		t.Logf("GET %s under the lock: %s", path, time.Since(t0).Round(time.Millisecond))
	}
	unlock(c)

	// Released: writes work again, no restart needed.
	if id, code, b, err := l.answer(qid, body); err != nil || id == 0 {
		t.Errorf("write after the lock was released: %v %d %s", err, code, b)
	} else {
		ack(id)
	}
	learner := l.learnerID()
	if err := srv.Stop(30 * time.Second); err != nil {
		t.Error(err)
	}
	checkAcked(t, srv.DB, learner, acked)
}

// TestDiskFull puts the database on a 2 MiB tmpfs, fills the rest of it,
// and keeps answering questions: once SQLite cannot grow its files, writes
// are refused with a clear error (never acknowledged and lost), pages stay
// readable, and when space returns writes succeed again without a
// restart. Every acknowledged answer is in the database afterwards, which
// passes its integrity check.
func TestDiskFull(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "tiny")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=2m,mode=0755"); err != nil {
		t.Fatalf("cannot mount a 2 MiB tmpfs for the disk-full test (needs root with CAP_SYS_ADMIN; "+
			"run the tests as root, or this fault is not tested): %v", err)
	}
	// Registered before start's own cleanup, so it runs after the server
	// is killed (cleanups run last-in first-out).
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
			_ = unix.Unmount(mnt, unix.MNT_DETACH)
		}
	})
	dbPath := filepath.Join(mnt, "lab.db")
	srv := start(t, labproc.Options{DB: dbPath})
	l := newLearner(t, srv.URL)
	l.must("GET", "/?lang=en", "", 200) // English messages, which the checks read
	qid, body := question(t)

	var acked []int64
	for range 20 {
		id, code, b, err := l.answer(qid, body)
		if err != nil || id == 0 {
			t.Fatalf("answer before the disk filled: %v %d %s", err, code, b)
		}
		acked = append(acked, id)
	}
	filler := filepath.Join(mnt, "filler")
	fillDisk(t, filler)

	refused := 0
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; refused < 5; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("the disk is full but %d answers in 60 s were all stored (%d acknowledged)", i, len(acked))
		}
		id, code, b, err := l.answer(qid, body)
		switch {
		case err != nil:
			t.Fatalf("answer %d on a full disk: the connection failed instead of an answer: %v", i, err)
		case id != 0:
			acked = append(acked, id)
		default:
			refused++
			if refused == 1 {
				t.Logf("first refusal after %d stored answers: %d %s", len(acked), code, strings.TrimSpace(b))
			}
			clearRefusal(t, code, b)
		}
	}
	// Reading still works on a full disk.
	for _, path := range []string{"/healthz", "/lessons/01-why-rdma", "/"} {
		if code, b, err := l.do("GET", path, ""); err != nil || code != 200 {
			t.Errorf("GET %s on a full disk: %d %v %.200s", path, code, err, b)
		}
	}

	// Space returns: writes succeed again, without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	recovered := false
	for range 20 {
		id, _, _, err := l.answer(qid, body)
		if err == nil && id != 0 {
			acked = append(acked, id)
			recovered = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !recovered {
		t.Error("writes did not recover after space returned")
	}
	learner := l.learnerID()
	if err := srv.Stop(30 * time.Second); err != nil {
		t.Error(err)
	}
	checkAcked(t, dbPath, learner, acked)
}

// fillDisk writes filler until the file system is full.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			break
		}
	}
	// Small writes fill the last partial blocks.
	for {
		if _, err := f.Write(buf[:512]); err != nil {
			break
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(path), &st); err == nil {
		t.Logf("disk filled: %d bytes free", st.Bavail*uint64(st.Bsize))
	}
}
