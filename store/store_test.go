package store

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMigrationsFromEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	v, err := db.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v != ms[len(ms)-1].Version {
		t.Errorf("schema version %d, want %d", v, ms[len(ms)-1].Version)
	}
	var n int
	db.r.db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n)
	if n != len(ms) {
		t.Errorf("%d migrations recorded, want %d", n, len(ms))
	}
	for _, table := range []string{"learners", "progress"} {
		var name string
		if err := db.r.db.QueryRow(`SELECT name FROM sqlite_master WHERE type='table' AND name=?`, table).Scan(&name); err != nil {
			t.Errorf("table %s: %v", table, err)
		}
	}
	var mode string
	db.r.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
	var fk int
	db.w.QueryRow(`PRAGMA foreign_keys`).Scan(&fk)
	if mode != "wal" || fk != 1 {
		t.Errorf("journal_mode %q foreign_keys %d", mode, fk)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopening applies nothing twice.
	db, err = Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	db.r.db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n)
	if n != len(ms) {
		t.Errorf("after reopen %d migrations recorded, want %d", n, len(ms))
	}
}

func TestOpenRefusesGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.db")
	garbage := bytes.Repeat([]byte("this is not an sqlite database\n"), 200)
	if err := os.WriteFile(path, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := Open(path)
	if err == nil {
		db.Close()
		t.Fatal("Open accepted a garbage file")
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error does not name the path: %v", err)
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "not an SQLite database") {
		t.Errorf("error does not say what is wrong: %v", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, garbage) {
		t.Error("Open modified the garbage file")
	}
}

func TestOpenRefusesCorruptDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// Grow the file past its header page, then checkpoint so all is in the main file.
	for i := 0; i < 200; i++ {
		if err := db.MarkOpened(context.Background(), NewLearnerID(), "01-x"); err != nil {
			t.Fatal(err)
		}
	}
	db.w.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	db.Close()
	b, _ := os.ReadFile(path)
	if len(b) < 3*4096 {
		t.Fatalf("database only %d bytes", len(b))
	}
	// Keep the valid header, destroy every page after the first.
	for i := 4096; i < len(b); i++ {
		b[i] = 0xA5
	}
	os.WriteFile(path, b, 0o644)
	db, err = Open(path)
	if err == nil {
		db.Close()
		t.Fatal("Open accepted a corrupt database")
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error does not name the path: %v", err)
	}
	t.Log(err)
}

func TestOpenRefusesLockedDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Another "process" holds an exclusive lock (a separate connection that
	// does not share our pools).
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	if _, err := other.Exec(`PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	defer other.Exec(`ROLLBACK`)

	db, err = openWithBusyTimeout(path, 200)
	if err == nil {
		db.Close()
		t.Fatal("Open succeeded on a locked database")
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "locked") {
		t.Errorf("error does not name the path and the lock: %v", err)
	}
	t.Log(err)
}

func TestOpenRefusesDirectory(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open(dir) = %v", err)
	}
}

func TestProgress(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	me, other := NewLearnerID(), NewLearnerID()
	p, err := db.LearnerProgress(ctx, me)
	if err != nil || len(p) != 0 {
		t.Fatalf("fresh learner progress %v %v", p, err)
	}
	if err := db.MarkOpened(ctx, me, "01-a"); err != nil {
		t.Fatal(err)
	}
	p, _ = db.LearnerProgress(ctx, me)
	if pr, ok := p["01-a"]; !ok || pr.OpenedAt.IsZero() || pr.Completed() {
		t.Fatalf("after open: %+v", p)
	}
	opened := p["01-a"].OpenedAt
	if err := db.MarkOpened(ctx, me, "01-a"); err != nil {
		t.Fatal(err)
	}
	if err := db.MarkCompleted(ctx, me, "01-a"); err != nil {
		t.Fatal(err)
	}
	// Completing a lesson never opened also records it as opened.
	if err := db.MarkCompleted(ctx, me, "02-b"); err != nil {
		t.Fatal(err)
	}
	p, _ = db.LearnerProgress(ctx, me)
	if !p["01-a"].Completed() || !p["01-a"].OpenedAt.Equal(opened) {
		t.Errorf("01-a: %+v (opened at %v)", p["01-a"], opened)
	}
	if !p["02-b"].Completed() || p["02-b"].OpenedAt.IsZero() {
		t.Errorf("02-b: %+v", p["02-b"])
	}
	first := p["01-a"].CompletedAt
	db.MarkCompleted(ctx, me, "01-a")
	p, _ = db.LearnerProgress(ctx, me)
	if !p["01-a"].CompletedAt.Equal(first) {
		t.Error("completing again changed the completion time")
	}
	// Other learners are separate; the learner rows exist.
	p, _ = db.LearnerProgress(ctx, other)
	if len(p) != 0 {
		t.Errorf("other learner sees %v", p)
	}
	var n int
	db.r.db.QueryRow(`SELECT count(*) FROM learners WHERE id = ?`, me).Scan(&n)
	if n != 1 {
		t.Errorf("learner row count %d", n)
	}
	if err := db.MarkOpened(ctx, "not-an-id", "01-a"); err == nil {
		t.Error("invalid learner id accepted")
	}
}

// The cache must never answer with data older than the last write, even
// when the write happens through the other pool's view.
func TestProgressCacheFollowsWrites(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	me := NewLearnerID()
	db.MarkOpened(ctx, me, "01-a")
	p1, _ := db.LearnerProgress(ctx, me) // cached now
	db.MarkCompleted(ctx, me, "01-a")
	p2, _ := db.LearnerProgress(ctx, me)
	if p1["01-a"].Completed() || !p2["01-a"].Completed() {
		t.Errorf("cache stale: before %+v after %+v", p1["01-a"], p2["01-a"])
	}
}

func TestLearnerIDs(t *testing.T) {
	a, b := NewLearnerID(), NewLearnerID()
	if a == b || !ValidLearnerID(a) || len(a) != 32 {
		t.Fatalf("ids %q %q", a, b)
	}
	for _, bad := range []string{"", "ABCDEF0123456789abcdef0123456789", a + "0", "../../../../etc/passwd/xxxxxxxxx", strings.Repeat("g", 32)} {
		if ValidLearnerID(bad) {
			t.Errorf("ValidLearnerID(%q) = true", bad)
		}
	}
}

// advanceClock moves the store's clock d ahead of the real one for the rest
// of t (more calls add up), so a test orders timestamps without sleeping.
func advanceClock(t *testing.T, d time.Duration) {
	t.Helper()
	prev := clock
	t.Cleanup(func() { clock = prev })
	clock = func() time.Time { return prev().Add(d) }
}
