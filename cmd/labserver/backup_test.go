package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/store"
)

// TestBackupCommand backs up the database of a running server and opens
// the copy: it holds what the server had written.
func TestBackupCommand(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "lab.db")
	m, out := newMain(map[string]string{"LAB_ADDR": "127.0.0.1:0", "LAB_DB": dbPath})
	if err := m.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	defer m.Close()
	learner := store.NewLearnerID()
	if err := m.DB.MarkCompleted(context.Background(), learner, "01-why-rdma"); err != nil {
		t.Fatal(err)
	}

	dest := filepath.Join(dir, "copy.db")
	var stdout, stderr bytes.Buffer
	if code := dispatch(context.Background(), []string{"backup", "--db", dbPath, dest}, &stdout, &stderr); code != 0 {
		t.Fatalf("backup exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), dest) {
		t.Errorf("output does not name the backup: %q", stdout.String())
	}
	cp, err := store.Open(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	p, err := cp.LearnerProgress(context.Background(), learner)
	if err != nil {
		t.Fatal(err)
	}
	if !p["01-why-rdma"].Completed() {
		t.Errorf("backup lacks the completed lesson: %+v", p)
	}

	// Usage errors exit 2; a failing backup exits 1 with the reason.
	if code := dispatch(context.Background(), []string{"backup"}, &stdout, &stderr); code != 2 {
		t.Errorf("backup without FILE: exit %d", code)
	}
	stderr.Reset()
	if code := dispatch(context.Background(), []string{"backup", "--db", filepath.Join(dir, "missing.db"), dest}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "missing.db") {
		t.Errorf("backup of a missing db: exit %d %q", code, stderr.String())
	}
}
