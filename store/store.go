// Package store is rdmalab's SQLite database: opening it with the right
// pragmas, embedded numbered migrations, and one file of queries per area
// (learners.go, progress.go, attempts.go, runs.go).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" driver (pure Go, no cgo)
	sqlite3 "modernc.org/sqlite/lib"
)

// DB is the lab database. Writes go through a single-connection pool so
// SQLite never sees two writers from this process (no SQLITE_BUSY between
// our own goroutines); reads use a separate pool that WAL lets run alongside.
type DB struct {
	Path string
	w    *sql.DB  // writer: exactly one connection
	r    *readers // readers, with their statements prepared once (stmts.go)
	wr   *writer  // group commit of the learner-facing writes (writer.go)

	// Per-learner caches of what every lesson page view reads,
	// invalidated by this process's writes (learner_cache.go).
	progress *learnerCache[map[string]Progress]
	quiz     *learnerCache[map[string]QuestionSummary]
	results  *learnerCache[map[string]Run]
	tasks    *learnerCache[map[string]map[string]TaskProgress] // lesson → task → record
	// known remembers learners seen to have a row (LearnerKnown): rows are
	// never deleted, so only the positive answer is kept.
	known *learnerCache[struct{}]
	// noLTI remembers learners with no LTI grade link, so each quiz
	// answer of a learner who never launched from an LMS costs no query
	// (LTIGradeLinks). Only this process makes links (a launch) or moves
	// them (a merge), and both forget it.
	noLTI *learnerCache[struct{}]
	// gradedSlugs is the lessons some class grades (graded.go), so a lesson
	// page of a lesson no class grades costs no query; nil: not loaded.
	gradedMu    sync.Mutex
	gradedSlugs map[string]bool
}

// dsn builds the connection string. busy_timeout comes first so that the
// following pragmas (journal_mode needs a lock) already wait instead of
// failing when another process holds the file.
func dsn(path string, busyMillis int) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyMillis))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// Open opens (creating if absent) the database at path and applies pending
// migrations. A file that is not an SQLite database, or one that another
// process keeps locked, is an error naming the path: we never replace it
// with a new empty database.
func Open(path string) (*DB, error) { return openWithBusyTimeout(path, busyTimeout) }

// busyTimeout is how long a statement waits for another process's lock, in
// milliseconds, before failing with SQLITE_BUSY.
const busyTimeout = 5000

func openWithBusyTimeout(path string, busyMillis int) (*DB, error) {
	if path == "" {
		return nil, errors.New("store: empty database path")
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("store: %s is a directory, not an SQLite database file", path)
	}
	w, err := sql.Open("sqlite", dsn(path, busyMillis))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	r, err := sql.Open("sqlite", dsn(path, busyMillis))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// More readers than CPUs: a reader waits mostly on the Go scheduler,
	// and with as many as CPUs a page's short read queued behind the
	// event-stream backlogs of a class's watchers (the block profile
	// under make load: most waiting was for a reader connection).
	n := max(8, 4*runtime.NumCPU())
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)

	db := &DB{Path: path, w: w, r: newReaders(r), progress: newLearnerCache[map[string]Progress](learnerCacheMax),
		quiz: newLearnerCache[map[string]QuestionSummary](learnerCacheMax),
		// Runs carry their result event: fewer learners' worth.
		results: newLearnerCache[map[string]Run](learnerCacheMax / 4),
		tasks:   newLearnerCache[map[string]map[string]TaskProgress](learnerCacheMax / 4),
		known:   newLearnerCache[struct{}](learnerCacheMax),
		noLTI:   newLearnerCache[struct{}](learnerCacheMax)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.check(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	db.startWriter()
	return db, nil
}

// check makes sure the file really is a healthy SQLite database we can write.
// sql.Open is lazy, so without this a garbage file would only fail at the
// first query, far from startup.
func (db *DB) check(ctx context.Context) error {
	var mode string
	if err := db.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return db.openError(err)
	}
	res, err := db.quickCheck(ctx)
	if err != nil {
		return db.openError(err)
	}
	if res != "ok" {
		return fmt.Errorf("store: %s is corrupt (refusing to use it; restore a backup or point --db elsewhere); quick_check: %s", db.Path, res)
	}
	if mode != "wal" {
		return fmt.Errorf("store: %s: could not switch to WAL journal (got %q); is it locked by another process?", db.Path, mode)
	}
	// Take the write lock once so a file another process holds locked fails
	// here, at startup, instead of at the first learner's click.
	if _, err := db.w.ExecContext(ctx, "BEGIN IMMEDIATE; ROLLBACK"); err != nil {
		return db.openError(err)
	}
	return nil
}

// quickCheck runs PRAGMA quick_check and returns "ok" or its first findings.
func (db *DB) quickCheck(ctx context.Context) (string, error) {
	rows, err := db.w.QueryContext(ctx, "PRAGMA quick_check(3)")
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return "", err
		}
		found = append(found, s)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return strings.Join(found, "; "), nil
}

// openError explains a failure of the first queries on the file: locked by
// someone else, or not a database at all.
func (db *DB) openError(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("store: %s is locked by another process (another labserver using the same file?): %w", db.Path, err)
		case sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("store: %s is not an SQLite database (refusing to overwrite it; move it away or point --db elsewhere): %w", db.Path, err)
		case sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("store: %s is corrupt (refusing to overwrite it; restore a backup or point --db elsewhere): %w", db.Path, err)
		}
	}
	return fmt.Errorf("store: %s is not a usable SQLite database: %w", db.Path, err)
}

// Ping reports whether the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	if err := db.r.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("store: ping %s: %w", db.Path, err)
	}
	return nil
}

// Close stops the writer loop (after the batch in hand) and closes both pools.
func (db *DB) Close() error {
	db.stopWriter()
	return errors.Join(db.r.Close(), db.w.Close())
}

// clock is the store's time: every timestamp it writes or compares with
// comes from it. Tests in this package replace it (see advanceClock) instead
// of sleeping.
var clock = time.Now

// now is the timestamp format stored in TEXT columns: RFC 3339 in UTC with
// fixed-width nanoseconds, so string order is time order.
func now() string { return formatTime(clock()) }

func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }

func parseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }
