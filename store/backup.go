package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the database at src to dest while
// the lab keeps serving: SQLite's VACUUM INTO reads one snapshot (WAL lets
// the server write meanwhile) and writes a compact, self-contained file
// with no -wal beside it. The copy is written next to dest under a
// temporary name, checked with quick_check, synced, and renamed into
// place, so dest is either the old file or a complete new backup, never
// half of one. An existing dest is replaced.
func Backup(ctx context.Context, src, dest string) error {
	if fi, err := os.Stat(src); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	} else if fi.IsDir() {
		return fmt.Errorf("store: backup: %s is a directory, not an SQLite database file", src)
	}
	absSrc, err := filepath.Abs(src)
	if err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	absDest, err := filepath.Abs(dest)
	if err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	if absSrc == absDest {
		return fmt.Errorf("store: backup: refusing to write the backup over the database itself (%s)", src)
	}
	tmp := absDest + ".tmp"
	_ = os.Remove(tmp) // a leftover of an interrupted backup; VACUUM INTO refuses existing files

	// A plain connection of its own (not Open): a backup must not migrate
	// or otherwise write the live database.
	conn, err := sql.Open("sqlite", dsn(src, busyTimeout))
	if err != nil {
		return fmt.Errorf("store: backup %s: %w", src, err)
	}
	defer conn.Close()
	conn.SetMaxOpenConns(1)
	if _, err := conn.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("store: backup %s into %s: %w", src, dest, err)
	}
	if err := checkBackup(ctx, tmp); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := syncFile(tmp); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("store: backup: %w", err)
	}
	if err := os.Rename(tmp, absDest); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("store: backup: %w", err)
	}
	// The rename is durable once the directory is synced.
	if err := syncFile(filepath.Dir(absDest)); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	return nil
}

// checkBackup opens the new copy read-only and runs quick_check on it.
func checkBackup(ctx context.Context, path string) error {
	conn, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return fmt.Errorf("store: check backup %s: %w", path, err)
	}
	defer conn.Close()
	var res string
	if err := conn.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&res); err != nil {
		return fmt.Errorf("store: check backup %s: %w", path, err)
	}
	if res != "ok" {
		return fmt.Errorf("store: backup %s failed its quick_check: %s", path, res)
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}
