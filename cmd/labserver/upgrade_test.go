package main

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/store"
)

// TestServeReleaseDatabase serves the earlier release's database
// (store/testdata/release-1142cfd.db, see store's TestUpgradeFromRelease):
// serve migrates it at start, the learner's signed cookie from that release
// still names them, their run and its events replay, and the instructor
// signs in with the release's password and finds the class.
func TestServeReleaseDatabase(t *testing.T) {
	b, err := os.ReadFile("../../store/testdata/release-1142cfd.db")
	if err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(t.TempDir(), "lab.db")
	if err := os.WriteFile(dbPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	m, out := newMain(map[string]string{"LAB_ADDR": "127.0.0.1:0", "LAB_DB": dbPath, "LAB_BACKEND": "none", "LAB_TERMINALS": "0"})
	if err := m.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("serve the release's database: %v\n%s", err, out)
	}
	defer m.Close()
	base := "http://" + m.Addr()
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(base)
	// The cookie the release set (signed with the key in its database).
	jar.SetCookies(u, []*http.Cookie{{Name: "lab_learner", Value: "8a24864b8f02196474e9b35fc7bac908.HKcW-eMFjs71WL4w5ct_vg"}})
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	read := func(res *http.Response, err error) (int, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := read(c.Get(base + "/api/runs/96983515ba1c32ab")); code != 200 || !strings.Contains(body, `"status":"done"`) || !strings.Contains(body, "memlock") {
		t.Errorf("the release's run: %d %.300s", code, body)
	}
	if code, body := read(c.Get(base + "/api/runs/96983515ba1c32ab/events")); code != 200 || !strings.Contains(body, "result") {
		t.Errorf("the release's run's events: %d %.300s", code, body)
	}
	if code, body := read(c.Get(base + "/me")); code != 200 || !strings.Contains(body, "张三") {
		t.Errorf("/me with the release's cookie: %d, 张三 shown: %v", code, strings.Contains(body, "张三"))
	}
	code, _ := read(c.PostForm(base+"/instructor/login", url.Values{"username": {"admin"}, "password": {"fixture-admin-pw"}}))
	if code != http.StatusSeeOther {
		t.Fatalf("instructor login with the release's password: %d", code)
	}
	if code, body := read(c.Get(base + "/instructor/classes")); code != 200 || !strings.Contains(body, "RDMA 2026 秋") {
		t.Errorf("the release's class: %d, shown: %v", code, strings.Contains(body, "RDMA 2026 秋"))
	}
}

// TestServeRefusesNewerDatabase: serve does not start on a database a
// newer release migrated, and says why.
func TestServeRefusesNewerDatabase(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "lab.db")
	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := db.SchemaVersion(context.Background())
	db.Close()
	if err := appendMigrationRecord(dbPath, v+1); err != nil {
		t.Fatal(err)
	}
	m, out := newMain(map[string]string{"LAB_ADDR": "127.0.0.1:0", "LAB_DB": dbPath, "LAB_BACKEND": "none", "LAB_TERMINALS": "0"})
	if err := m.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	err = m.Run(context.Background())
	m.Close()
	if err == nil || !strings.Contains(err.Error(), "newer labserver") {
		t.Errorf("serve on a newer database: %v\n%s", err, out)
	}
}

// appendMigrationRecord records a migration this build does not have, as
// a newer release would have.
func appendMigrationRecord(dbPath string, version int) error {
	raw, err := sql.Open("sqlite", dbPath)
	if err != nil {
		return err
	}
	defer raw.Close()
	_, err = raw.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'newer.sql', '2030-01-01T00:00:00Z')`, version)
	return err
}
