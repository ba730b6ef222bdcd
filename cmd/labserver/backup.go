package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rdmalab/rdmalab/store"
)

// backupUsage is printed for `labserver backup -h` and bad arguments.
const backupUsage = `usage: labserver backup [--db PATH] FILE
  Write a consistent copy of the lab database to FILE while the lab keeps
  serving (SQLite VACUUM INTO; FILE is replaced only once the copy is
  complete and checked).
  --db PATH   the database to copy [LAB_DB] (default ./rdmalab.db)
`

// runBackup is `labserver backup [--db PATH] FILE`: an online backup of the
// SQLite file, safe to run from cron or a systemd timer beside `serve`.
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("labserver backup", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() { fmt.Fprint(stderr, backupUsage) }
	def := os.Getenv("LAB_DB")
	if def == "" {
		def = "./rdmalab.db"
	}
	db := fset.String("db", def, "database file")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fset.NArg() != 1 {
		fmt.Fprint(stderr, backupUsage)
		return 2
	}
	dest := fset.Arg(0)
	start := time.Now()
	if err := store.Backup(ctx, *db, dest); err != nil {
		fmt.Fprintln(stderr, "labserver backup:", err)
		return 1
	}
	size := int64(-1)
	if fi, err := os.Stat(dest); err == nil {
		size = fi.Size()
	}
	fmt.Fprintf(stdout, "backup of %s written to %s (%d bytes, %s)\n", *db, dest, size, time.Since(start).Round(time.Millisecond))
	return 0
}
