package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/lti"
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

// TestBackupRestoreKeepsLTIKey: a backup carries the LTI tool key beside
// the database (0600), and restore puts back the database and that key,
// so a restored lab signs with the key its LMSs know. Before, backup
// copied the database alone and the key made at the first LTI use was
// lost with the machine.
func TestBackupRestoreKeepsLTIKey(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "lab.db")
	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	learner := store.NewLearnerID()
	if err := db.MarkCompleted(ctx, learner, "01-why-rdma"); err != nil {
		t.Fatal(err)
	}
	key, err := lti.LoadOrCreateKey(ltiKeyFile(dbPath))
	if err != nil {
		t.Fatal(err)
	}
	backups := filepath.Join(t.TempDir(), "lab-Mon.db")
	var stdout, stderr bytes.Buffer
	if code := dispatch(ctx, []string{"backup", "--db", dbPath, backups}, &stdout, &stderr); code != 0 {
		t.Fatalf("backup exit %d: %s", code, stderr.String())
	}
	saved := backups + ".lti-tool-key.pem"
	if fi, err := os.Stat(saved); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the backup's key %s: %v %v, want mode 0600", saved, fi, err)
	}
	if !strings.Contains(stdout.String(), saved) {
		t.Errorf("backup output does not name the key: %q", stdout.String())
	}

	// After the backup: more progress, and the machine's key lost.
	if err := db.MarkCompleted(ctx, learner, "02-lossless-roce"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := os.Remove(ltiKeyFile(dbPath)); err != nil {
		t.Fatal(err)
	}

	stdout.Reset()
	if code := dispatch(ctx, []string{"restore", "--db", dbPath, backups}, &stdout, &stderr); code != 0 {
		t.Fatalf("restore exit %d: %s", code, stderr.String())
	}
	fi, err := os.Stat(ltiKeyFile(dbPath))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("restored key: %v %v, want mode 0600", fi, err)
	}
	back, err := lti.LoadOrCreateKey(ltiKeyFile(dbPath))
	if err != nil {
		t.Fatal(err)
	}
	if back.KeyID() != key.KeyID() {
		t.Errorf("restored key %s, want the backed-up key %s", back.KeyID(), key.KeyID())
	}
	db, err = store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := db.LearnerProgress(ctx, learner)
	if err != nil {
		t.Fatal(err)
	}
	if !p["01-why-rdma"].Completed() || p["02-lossless-roce"].Completed() {
		t.Errorf("restored progress %+v, want the backup's: 01 completed, 02 not", p)
	}

	// A backup without a key (no LTI use) keeps the key beside the
	// database; a missing backup fails naming it.
	if err := os.Remove(saved); err != nil {
		t.Fatal(err)
	}
	db.Close()
	stdout.Reset()
	if code := dispatch(ctx, []string{"restore", "--db", dbPath, backups}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "no LTI tool key") {
		t.Errorf("restore of a backup without a key: exit %d %q %q", code, stdout.String(), stderr.String())
	}
	if k, err := lti.LoadOrCreateKey(ltiKeyFile(dbPath)); err != nil || k.KeyID() != key.KeyID() {
		t.Errorf("the key beside the database after restoring a backup without one: %v %v", k, err)
	}
	stderr.Reset()
	if code := dispatch(ctx, []string{"restore", "--db", dbPath, filepath.Join(dir, "none.db")}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "none.db") {
		t.Errorf("restore of a missing backup: exit %d %q", code, stderr.String())
	}
}
