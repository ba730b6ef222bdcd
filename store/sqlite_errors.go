package store

import (
	"errors"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// IsBusy reports whether err is SQLite refusing a statement because
// another process held the database locked for longer than busy_timeout
// (a backup tool, a second server on the same file, sqlite3 in a shell).
// The statement did nothing; trying again later may work.
func IsBusy(err error) bool {
	c, ok := sqliteCode(err)
	return ok && (c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED)
}

// IsFull reports whether err is SQLite refusing a write because the disk
// (or the file system holding the database) is full. The transaction was
// rolled back; writes work again once space returns.
func IsFull(err error) bool {
	c, ok := sqliteCode(err)
	return ok && c == sqlite3.SQLITE_FULL
}

// sqliteCode is the primary result code of a SQLite error in err's chain.
func sqliteCode(err error) (int, bool) {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return 0, false
	}
	return se.Code() & 0xff, true
}

// isConstraint reports whether err is SQLite refusing a row for a CHECK,
// UNIQUE, NOT NULL or foreign key constraint.
func isConstraint(err error) bool {
	c, ok := sqliteCode(err)
	return ok && c == sqlite3.SQLITE_CONSTRAINT
}
