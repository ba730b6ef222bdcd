package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rdmalab/rdmalab/store"
)

// backupUsage is printed for `labserver backup -h` and bad arguments.
const backupUsage = `usage: labserver backup [--db PATH] FILE
  Write a consistent copy of the lab database to FILE while the lab keeps
  serving (SQLite VACUUM INTO; FILE is replaced only once the copy is
  complete and checked), and the LTI tool key beside the database, if
  there is one, to FILE.lti-tool-key.pem (mode 0600).
  --db PATH   the database to copy [LAB_DB] (default ./rdmalab.db)
`

// restoreUsage is printed for `labserver restore -h` and bad arguments.
const restoreUsage = `usage: labserver restore [--db PATH] FILE
  Put the backup FILE in place of the lab database, with the LTI tool key
  saved beside it (FILE.lti-tool-key.pem, restored with mode 0600). Stop
  the server first: it must not have the database open.
  --db PATH   the database to replace [LAB_DB] (default ./rdmalab.db)
`

// backupKeyFile is where a backup keeps the LTI tool key: beside the
// backup, named after it, so every backup carries the key it was made with.
func backupKeyFile(backup string) string { return backup + "." + ltiKeyName }

// runBackup is `labserver backup [--db PATH] FILE`: an online backup of the
// SQLite file, safe to run from cron or a systemd timer beside `serve`,
// and of the LTI tool key (docs/operations.md: "back it up with the
// database"), which a restored lab needs so that LMSs keep trusting it.
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	db, dest, code, ok := backupArgs("backup", backupUsage, args, stderr)
	if !ok {
		return code
	}
	start := time.Now()
	if err := store.Backup(ctx, db, dest); err != nil {
		fmt.Fprintln(stderr, "labserver backup:", err)
		return 1
	}
	size := int64(-1)
	if fi, err := os.Stat(dest); err == nil {
		size = fi.Size()
	}
	fmt.Fprintf(stdout, "backup of %s written to %s (%d bytes, %s)\n", db, dest, size, time.Since(start).Round(time.Millisecond))
	switch copied, err := copyKey(ltiKeyFile(db), backupKeyFile(dest)); {
	case err != nil:
		fmt.Fprintln(stderr, "labserver backup: the LTI tool key:", err)
		return 1
	case copied:
		fmt.Fprintf(stdout, "LTI tool key written to %s (mode 0600)\n", backupKeyFile(dest))
	}
	return 0
}

// runRestore is `labserver restore [--db PATH] FILE`: the backup in place
// of the database (store.Restore), and its LTI tool key in place of the
// key beside the database.
func runRestore(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	db, src, code, ok := backupArgs("restore", restoreUsage, args, stderr)
	if !ok {
		return code
	}
	if err := store.Restore(ctx, src, db); err != nil {
		fmt.Fprintln(stderr, "labserver restore:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s restored from %s\n", db, src)
	switch copied, err := copyKey(backupKeyFile(src), ltiKeyFile(db)); {
	case err != nil:
		fmt.Fprintln(stderr, "labserver restore: the LTI tool key:", err)
		return 1
	case copied:
		fmt.Fprintf(stdout, "LTI tool key restored to %s (mode 0600)\n", ltiKeyFile(db))
	default:
		fmt.Fprintf(stdout, "the backup has no LTI tool key (%s): the key beside the database, if any, is kept\n", backupKeyFile(src))
	}
	return 0
}

// backupArgs parses `labserver NAME [--db PATH] FILE`.
func backupArgs(name, usage string, args []string, stderr io.Writer) (db, file string, code int, ok bool) {
	fset := flag.NewFlagSet("labserver "+name, flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() { fmt.Fprint(stderr, usage) }
	dbPath := fset.String("db", defaultDB(), "database file")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", "", 0, false
		}
		return "", "", 2, false
	}
	if fset.NArg() != 1 {
		fmt.Fprint(stderr, usage)
		return "", "", 2, false
	}
	return *dbPath, fset.Arg(0), 0, true
}

// copyKey copies the private key file src to dst with mode 0600, through a
// temporary file renamed into place; copied is false when src does not
// exist (no LTI use yet).
func copyKey(src, dst string) (copied bool, err error) {
	b, err := os.ReadFile(src)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	f, err := os.CreateTemp(filepath.Dir(dst), ".lti-key-*") // mode 0600
	if err != nil {
		return false, err
	}
	_, err = f.Write(b)
	if err = errors.Join(err, f.Chmod(0o600), f.Sync(), f.Close()); err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return false, err
	}
	return true, nil
}
