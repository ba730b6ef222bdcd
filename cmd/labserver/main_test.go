package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/rdmalab/rdmalab/internal/syncbuf"
)

// newMain is a Main with a fake environment and captured output (written
// from the server's goroutines too, hence the lock).
func newMain(env map[string]string) (*Main, *syncbuf.Buffer) {
	m := NewMain()
	out := new(syncbuf.Buffer)
	m.Stdout, m.Stderr = out, out
	m.Getenv = func(k string) string { return env[k] }
	return m, out
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestMainEndToEnd runs the real server (built-in course, SQLite file in a
// temp dir) on a free port, the way `labserver serve` does.
func TestMainEndToEnd(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "lab.db")
	m, out := newMain(map[string]string{"LAB_ADDR": "127.0.0.1:0", "LAB_DB": dbPath})
	if err := m.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	defer m.Close()
	base := "http://" + m.Addr()
	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("healthz %d %q", code, body)
	}
	code, body := get(t, base+"/")
	if code != 200 || !strings.Contains(body, `href="/lessons/01-why-rdma"`) {
		t.Errorf("home %d, lesson 01 linked: %v", code, strings.Contains(body, "01-why-rdma"))
	}
	code, body = get(t, base+"/lessons/01-why-rdma")
	if code != 200 || !strings.Contains(body, "为什么需要 RDMA") {
		t.Errorf("lesson %d", code)
	}
	code, body = get(t, base+"/lessons/01-why-rdma?lang=en")
	if code != 200 || !strings.Contains(body, "After this lesson you can") {
		t.Errorf("lesson en %d", code)
	}
	if code, _ := get(t, base+"/lessons/99-nope"); code != 404 {
		t.Errorf("unknown lesson %d", code)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(dbPath); err != nil {
		t.Errorf("database file: %v", err)
	}
	if !strings.Contains(out.String(), "serving") {
		t.Errorf("no startup log line:\n%s", out)
	}
}

func TestFlagsAndEnv(t *testing.T) {
	m, _ := newMain(nil)
	if err := m.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	sb := sandboxConfig{Concurrency: 0, QueueMax: 100, Backend: "auto", VMAccel: "auto", VMMemory: 256, VMSnapshot: true, VMSharedRAM: true, ShareRuns: DefaultShareRuns}
	if m.Config != (Config{Addr: "127.0.0.1:8080", DBPath: "./rdmalab.db", LessonsDir: "", Sandbox: sb, Terminals: TerminalsAuto, Spares: sparesAuto, IdlePause: 30 * time.Second, Reclaim: 10 * time.Minute,
		Keep: keepConfig{Expire: 7 * 24 * time.Hour, MaxMiB: 64, TotalMiB: 4096, StopWait: time.Minute}}) {
		t.Errorf("defaults %+v", m.Config)
	}
	env := map[string]string{"LAB_ADDR": ":9999", "LAB_DB": "/tmp/x.db", "LAB_LESSONS": "/srv/course",
		"LAB_CONCURRENCY": "2", "LAB_QUEUE_MAX": "5", "LAB_BACKEND": "none", "LAB_VM_ACCEL": "tcg", "LAB_VM_MEMORY": "512", "LAB_TERMINALS": "1",
		"LAB_KEEP_MACHINES": "1h", "LAB_KEEP_MACHINE_MAX": "32", "LAB_KEEP_DIR": "/srv/kept",
		"LAB_KEEP_TOTAL_MAX": "1000", "LAB_KEEP_STOP_WAIT": "20s", "LAB_SPARES": "8", "LAB_IDLE_PAUSE": "90s", "LAB_TERMINAL_IDLE": "1h"}
	m, _ = newMain(env)
	m.ParseFlags(nil)
	envSB := sandboxConfig{Concurrency: 2, QueueMax: 5, Backend: "none", VMAccel: "tcg", VMMemory: 512, VMSnapshot: true, VMSharedRAM: true, ShareRuns: DefaultShareRuns}
	if m.Config != (Config{Addr: ":9999", DBPath: "/tmp/x.db", LessonsDir: "/srv/course", Sandbox: envSB, Terminals: 1, Spares: 8, IdlePause: 90 * time.Second, Reclaim: time.Hour,
		Keep: keepConfig{Expire: time.Hour, MaxMiB: 32, TotalMiB: 1000, StopWait: 20 * time.Second, Dir: "/srv/kept"}}) {
		t.Errorf("from env %+v", m.Config)
	}
	m, _ = newMain(env)
	m.ParseFlags([]string{"--addr", "127.0.0.1:1", "--db", "a.db", "--lessons", "dir", "--concurrency", "3", "--queue-max", "7", "--backend", "host", "--terminals", "3", "--keep-machines", "0", "--spares", "0", "--keep-total-max", "0", "--keep-stop-wait", "5s", "--idle-pause", "0", "--terminal-idle", "25m"})
	flagSB := sandboxConfig{Concurrency: 3, QueueMax: 7, Backend: "host", VMAccel: "tcg", VMMemory: 512, VMSnapshot: true, VMSharedRAM: true, ShareRuns: DefaultShareRuns}
	if m.Config != (Config{Addr: "127.0.0.1:1", DBPath: "a.db", LessonsDir: "dir", Sandbox: flagSB, Terminals: 3, Spares: -1, Reclaim: 25 * time.Minute,
		Keep: keepConfig{MaxMiB: 32, StopWait: 5 * time.Second, Dir: "/srv/kept"}}) {
		t.Errorf("flags over env %+v", m.Config)
	}
	m, _ = newMain(nil)
	if err := m.ParseFlags([]string{"--nope"}); err == nil || exitCode(err) != 2 {
		t.Errorf("unknown flag: %v", err)
	}
	if err := m.ParseFlags([]string{"extra"}); err == nil || exitCode(err) != 2 {
		t.Errorf("stray argument: %v", err)
	}
}

func TestServeRefusesBrokenCourse(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "lab.db")
	m, _ := newMain(nil)
	m.ParseFlags([]string{"--addr", "127.0.0.1:0", "--db", dbPath, "--lessons", "testdata/broken"})
	err := m.Run(context.Background())
	m.Close()
	if err == nil {
		t.Fatal("serve started with a broken course")
	}
	if !strings.Contains(err.Error(), "01-bad/index.zh.md:4:") || !strings.Contains(err.Error(), "01-bad/index.zh.md:9:") {
		t.Errorf("error does not name file:line of the problems:\n%v", err)
	}
	if _, err := os.Stat(dbPath); err == nil {
		t.Error("database created although the course is broken")
	}

	// check prints the same findings and exits 1.
	var stdout, stderr bytes.Buffer
	if code := dispatch(context.Background(), []string{"check", "testdata/broken"}, &stdout, &stderr); code != 1 {
		t.Errorf("check exit %d, want 1", code)
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if !strings.HasPrefix(line, "testdata/broken/01-bad/index.zh.md:") {
			t.Errorf("check line %q is not file:line: message", line)
		}
		msg := strings.TrimPrefix(line, "testdata/broken/")
		if !strings.HasPrefix(msg, "01-bad/index.zh.md:") || !strings.Contains(err.Error(), msg) {
			t.Errorf("check line %q not in serve's error", line)
		}
	}
}

func TestCheckBuiltinIsClean(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := dispatch(context.Background(), []string{"check"}, &stdout, &stderr); code != 0 {
		t.Fatalf("check of the built-in course: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "0 error(s)") {
		t.Errorf("summary %q", stderr.String())
	}
}

func TestServeRefusesCorruptDB(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "lab.db")
	garbage := []byte(strings.Repeat("not a database ", 500))
	os.WriteFile(dbPath, garbage, 0o644)
	var stdout, stderr bytes.Buffer
	code := dispatch(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--db", dbPath}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), dbPath) {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if b, _ := os.ReadFile(dbPath); !bytes.Equal(b, garbage) {
		t.Error("the corrupt file was modified")
	}
}

func TestServeShutsDownOnSignal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	dbPath := filepath.Join(t.TempDir(), "lab.db")
	done := make(chan int, 1)
	var stdout, stderr syncbuf.Buffer
	go func() {
		done <- dispatch(ctx, []string{"--addr", "127.0.0.1:0", "--db", dbPath}, &stdout, &stderr)
	}()
	// Wait until it is serving (the database exists and the log says so).
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "serving") {
		if time.Now().After(deadline) {
			t.Fatal("serve did not start")
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited early with %d", code)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel() // what SIGINT/SIGTERM do through signal.NotifyContext
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after shutdown:\n%s", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not shut down")
	}
}

func TestDispatch(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := dispatch(context.Background(), []string{"frobnicate"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "unknown command") {
		t.Errorf("unknown command: %d %q", code, stderr.String())
	}
	stdout.Reset()
	if code := dispatch(context.Background(), []string{"help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "labserver check") {
		t.Errorf("help: %d", code)
	}
	// help names every command and every serve flag.
	for name := range commands {
		if !regexp.MustCompile(`labserver \[?` + name + `\b`).MatchString(stdout.String()) {
			t.Errorf("help does not mention `labserver %s`", name)
		}
	}
	serveFlagSet(&Main{Getenv: func(string) string { return "" }}, io.Discard).VisitAll(func(f *flag.Flag) {
		if !strings.Contains(stdout.String(), "-"+f.Name) {
			t.Errorf("help does not list the serve flag --%s", f.Name)
		}
	})
}

// TestWorkerKeysFile: --nats-nkeys @FILE reads NAME=KEY lines with
// comments, as SIGHUP reads them again.
func TestWorkerKeysFile(t *testing.T) {
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	file := filepath.Join(t.TempDir(), "workers")
	if err := os.WriteFile(file, []byte("# the lab's workers\nrnic-1="+pub+"   # the ConnectX\n\npool-2="+pub+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := workerKeys("@" + file)
	if err != nil || len(keys) != 2 || keys[0].Name != "rnic-1" || keys[1].Name != "pool-2" || keys[1].Pub != pub {
		t.Fatalf("keys %+v, err %v", keys, err)
	}
	if _, err := workerKeys("@" + file + ".missing"); err == nil {
		t.Fatal("a missing keys file was read")
	}
}
