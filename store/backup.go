package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
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

// Restore puts the backup at src in place of the database at db. No
// server may have db open (stop it first). The backup is checked with
// quick_check, copied beside db under a temporary name (with db's file
// mode, 0600 for a new one) and synced; db's -wal and -shm files are
// removed, since SQLite would replay the old database's pages from them
// into the restored file; then the copy is renamed over db. src is only
// read.
func Restore(ctx context.Context, src, db string) error {
	absSrc, err := filepath.Abs(src)
	if err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	absDB, err := filepath.Abs(db)
	if err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	if absSrc == absDB {
		return fmt.Errorf("store: restore: %s is the database itself", src)
	}
	if fi, err := os.Stat(absSrc); err != nil {
		return fmt.Errorf("store: restore: %w", err)
	} else if fi.IsDir() {
		return fmt.Errorf("store: restore: %s is a directory, not an SQLite database file", src)
	}
	if err := checkBackup(ctx, absSrc); err != nil {
		return err
	}
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(absDB); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp := absDB + ".restore.tmp"
	if err := copyFile(absSrc, tmp, mode); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("store: restore: %w", err)
	}
	for _, side := range []string{absDB + "-wal", absDB + "-shm"} {
		if err := os.Remove(side); err != nil && !errors.Is(err, os.ErrNotExist) {
			_ = os.Remove(tmp)
			return fmt.Errorf("store: restore: %w", err)
		}
	}
	if err := os.Rename(tmp, absDB); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("store: restore: %w", err)
	}
	if err := syncFile(filepath.Dir(absDB)); err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	return nil
}

// copyFile copies src to a new file dst of the given mode and syncs it.
func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	_ = os.Remove(dst) // a leftover of an interrupted restore
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return errors.Join(out.Chmod(mode), out.Sync(), out.Close())
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}
