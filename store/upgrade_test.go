package store

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// releaseFixture is a database made by an earlier release: commit 1142cfd
// (schema at migration 0091, rosters and roles), built from that commit
// and driven over HTTP by testdata/release-1142cfd.sh — a learner who
// read lesson 01, answered a question twice, ran memlock, completed the
// lesson and claimed a roster seat; the instructor admin who made the
// class "RDMA 2026 秋" and imported its roster.
const releaseFixture = "testdata/release-1142cfd.db"

// FixtureLearner is the fixture's learner (and FixtureRun their run).
const (
	fixtureLearner = "8a24864b8f02196474e9b35fc7bac908"
	fixtureRun     = "96983515ba1c32ab"
)

// copyFixture copies the release's database into a temp dir (it is
// migrated in place).
func copyFixture(t *testing.T) string {
	t.Helper()
	src, err := os.Open(releaseFixture)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(t.TempDir(), "lab.db")
	dst, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// tableCounts is every table's row count, read without the store (no
// migration runs).
func tableCounts(t *testing.T, path string) map[string]int {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rows, err := raw.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	rows.Close()
	counts := map[string]int{}
	for _, n := range names {
		var c int
		if err := raw.QueryRow(`SELECT COUNT(*) FROM "` + n + `"`).Scan(&c); err != nil {
			t.Fatal(err)
		}
		counts[n] = c
	}
	return counts
}

// TestUpgradeFromRelease opens the earlier release's database: every
// migration since applies, no row of its tables is lost, and what the
// learner and the instructor did reads back through today's store.
func TestUpgradeFromRelease(t *testing.T) {
	path := copyFixture(t)
	before := tableCounts(t, path)
	if before["schema_migrations"] == 0 || before["runs"] != 1 || before["attempts"] != 2 {
		t.Fatalf("the fixture is not the release's database: %v", before)
	}
	db, err := Open(path)
	if err != nil {
		t.Fatalf("open the release's database: %v", err)
	}
	defer db.Close()
	ctx := context.Background()
	ms, _ := migrations()
	if v, err := db.SchemaVersion(ctx); err != nil || v != ms[len(ms)-1].Version {
		t.Errorf("schema version %d (%v) after the upgrade, want %d", v, err, ms[len(ms)-1].Version)
	}
	db.Close()
	after := tableCounts(t, path)
	for table, n := range before {
		switch {
		case table == "schema_migrations":
			if after[table] != len(ms) {
				t.Errorf("schema_migrations: %d rows, want one per migration (%d)", after[table], len(ms))
			}
		case after[table] != n:
			t.Errorf("table %s: %d rows before the upgrade, %d after", table, n, after[table])
		}
	}

	db, err = Open(path)
	if err != nil {
		t.Fatalf("open again: %v", err)
	}
	defer db.Close()
	run, err := db.Run(ctx, fixtureRun)
	if err != nil || run.Experiment != "memlock" || run.Learner != fixtureLearner || run.Status != "done" {
		t.Errorf("the release's run: %+v, %v", run, err)
	}
	if evs, err := db.RunEvents(ctx, fixtureRun, 0, 100); err != nil || len(evs) != 14 {
		t.Errorf("the run's events: %d, %v; want the 14 stored", len(evs), err)
	}
	if name, err := db.DisplayName(ctx, fixtureLearner); err != nil || name != "张三" {
		t.Errorf("the learner's name %q, %v; want the roster's 张三", name, err)
	}
	if p, err := db.LearnerProgress(ctx, fixtureLearner); err != nil || !p["01-why-rdma"].Completed() {
		t.Errorf("lesson 01 completed: %+v, %v", p, err)
	}
	if in, err := db.Authenticate(ctx, "admin", "fixture-admin-pw"); err != nil || in.Username != "admin" {
		t.Errorf("the instructor signs in with the release's password: %+v, %v", in, err)
	}
	cs, err := db.LearnerCohorts(ctx, fixtureLearner)
	if err != nil || len(cs) != 1 || cs[0].Name != "RDMA 2026 秋" {
		t.Errorf("the learner's class: %+v, %v", cs, err)
	}
}

// TestNewerDatabaseRefused: a database a newer labserver migrated (a
// migration number beyond this build's) is refused with both numbers and
// the way out, and left as it was.
func TestNewerDatabaseRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := migrations()
	newer := ms[len(ms)-1].Version + 100
	if _, err := db.w.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from_the_future.sql', '2030-01-01T00:00:00Z')`, newer); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before := tableCounts(t, path)

	db, err = Open(path)
	if err == nil {
		db.Close()
		t.Fatal("a database from a newer release opened")
	}
	if !errors.Is(err, ErrNewerSchema) {
		t.Errorf("error %v is not ErrNewerSchema", err)
	}
	for _, want := range []string{"newer labserver", "migration " + strconv.Itoa(newer), "knows up to " + strconv.Itoa(ms[len(ms)-1].Version), "labserver restore"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	after := tableCounts(t, path)
	if len(after) != len(before) || after["schema_migrations"] != before["schema_migrations"] {
		t.Errorf("the refused database changed: %v → %v", before, after)
	}
}
