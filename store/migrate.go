package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one numbered file of migrations/.
type migration struct {
	Version int
	Name    string
	SQL     string
}

// migrations lists the embedded files in version order. Names are
// NNNN_what.sql; a duplicate or malformed number is a programming error.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("store: read migrations: %w", err)
	}
	var ms []migration
	seen := map[int]string{}
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("store: migration %s: name must be NNNN_name.sql", name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("store: migrations %s and %s share version %d", prev, name, v)
		}
		seen[v] = name
		b, err := migrationFS.ReadFile(path.Join("migrations", name))
		if err != nil {
			return nil, fmt.Errorf("store: read migration %s: %w", name, err)
		}
		ms = append(ms, migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// migrate applies every migration not yet recorded in schema_migrations,
// each in its own transaction together with its record, so a failed
// migration leaves no half-applied schema behind.
func (db *DB) migrate(ctx context.Context) error {
	if _, err := db.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	)`); err != nil {
		return fmt.Errorf("store: %s: create schema_migrations: %w", db.Path, err)
	}
	applied := map[int]bool{}
	rows, err := db.w.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("store: %s: read schema_migrations: %w", db.Path, err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("store: %s: read schema_migrations: %w", db.Path, err)
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: %s: read schema_migrations: %w", db.Path, err)
	}

	ms, err := migrations()
	if err != nil {
		return err
	}
	if err := newerSchema(db.Path, applied, ms); err != nil {
		return err
	}
	for _, m := range ms {
		if applied[m.Version] {
			continue
		}
		if err := db.apply(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) apply(ctx context.Context, m migration) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %s: migration %s: %w", db.Path, m.Name, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("store: %s: migration %s: %w", db.Path, m.Name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, now()); err != nil {
		return fmt.Errorf("store: %s: record migration %s: %w", db.Path, m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: %s: commit migration %s: %w", db.Path, m.Name, err)
	}
	return nil
}

// SchemaVersion returns the highest applied migration version.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := db.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("store: schema version: %w", err)
	}
	return v, nil
}

// ErrNewerSchema is Open's error for a database a newer labserver has
// migrated: this one does not know its tables, and writing to them could
// lose what the newer one keeps there.
var ErrNewerSchema = errors.New("the database was written by a newer labserver")

// newerSchema refuses a database whose migrations go beyond the ones this
// build embeds (a downgrade, or a copy from a newer lab), naming both
// versions and the way out.
func newerSchema(path string, applied map[int]bool, ms []migration) error {
	known := 0
	if len(ms) > 0 {
		known = ms[len(ms)-1].Version
	}
	newest := 0
	for v := range applied {
		newest = max(newest, v)
	}
	if newest <= known {
		return nil
	}
	return fmt.Errorf("store: %s: %w (its schema is at migration %d, this labserver knows up to %d): "+
		"run that release or a later one, or restore a backup made by this release (labserver restore); "+
		"the database was left as it was", path, ErrNewerSchema, newest, known)
}

// LatestMigration is the highest migration this build embeds (labserver
// doctor compares a database's schema with it).
func LatestMigration() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}
