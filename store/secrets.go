package store

import (
	"context"
	"crypto/rand"
	"fmt"
)

// Secret returns the server secret called name, creating it with size
// random bytes at first use. Concurrent first calls (or two processes)
// agree on one value: the insert keeps whichever row came first.
func (db *DB) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	if size < 16 {
		return nil, fmt.Errorf("store: secret %s: %d bytes is too short", name, size)
	}
	fresh := make([]byte, size)
	rand.Read(fresh) // never fails (crypto/rand panics rather than return short)
	if _, err := db.w.ExecContext(ctx,
		`INSERT INTO secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`,
		name, fresh, now()); err != nil {
		return nil, fmt.Errorf("store: secret %s: %w", name, err)
	}
	var v []byte
	if err := db.w.QueryRowContext(ctx, `SELECT value FROM secrets WHERE name = ?`, name).Scan(&v); err != nil {
		return nil, fmt.Errorf("store: secret %s: %w", name, err)
	}
	return v, nil
}
