package store

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBackupWhileWriting takes an online backup while a writer keeps adding
// attempts: every attempt acknowledged before the backup started is in the
// copy, the copy opens as a healthy lab database, and the live database
// keeps accepting writes during and after the backup.
func TestBackupWhileWriting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openTest(t)
	learner := NewLearnerID()

	var acked atomic.Int64 // highest acknowledged attempt id
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writeErr atomic.Pointer[error]
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			a, err := db.AddAttempt(ctx, learner, "q/backup", json.RawMessage(`"a"`), true, false)
			if err != nil {
				writeErr.Store(&err)
				return
			}
			acked.Store(a.ID)
		}
	}()
	for acked.Load() < 50 && writeErr.Load() == nil {
		time.Sleep(time.Millisecond)
	}
	before := acked.Load()
	dest := filepath.Join(dir, "backup.db")
	if err := os.WriteFile(dest, []byte("an older backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Backup(ctx, db.Path, dest); err != nil {
		t.Fatal(err)
	}
	// The writer went on during the backup.
	during := acked.Load()
	close(stop)
	wg.Wait()
	if err := writeErr.Load(); err != nil {
		t.Fatalf("writes failed during the backup: %v", *err)
	}

	cp, err := Open(dest)
	if err != nil {
		t.Fatalf("backup does not open as a lab database: %v", err)
	}
	defer cp.Close()
	var n, maxID int64
	if err := cp.r.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(MAX(id), 0) FROM attempts`).Scan(&n, &maxID); err != nil {
		t.Fatal(err)
	}
	if maxID < before || n < before {
		t.Errorf("backup holds %d attempts up to id %d; %d were acknowledged before it started", n, maxID, before)
	}
	if _, err := os.Stat(dest + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
	t.Logf("acknowledged before backup: %d, in backup: %d, acknowledged by its end: %d", before, n, during)
}

func TestBackupRefusals(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	if err := Backup(ctx, db.Path, db.Path); err == nil || !strings.Contains(err.Error(), "over the database itself") {
		t.Errorf("backup onto itself: %v", err)
	}
	if err := Backup(ctx, filepath.Join(t.TempDir(), "missing.db"), filepath.Join(t.TempDir(), "b.db")); err == nil {
		t.Error("backup of a missing file succeeded")
	}
	// A destination directory that does not exist: a clear error, no file.
	dest := filepath.Join(t.TempDir(), "no", "such", "dir", "b.db")
	if err := Backup(ctx, db.Path, dest); err == nil {
		t.Error("backup into a missing directory succeeded")
	}
}
