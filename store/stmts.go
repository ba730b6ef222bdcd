package store

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCacheMax bounds the statements kept: queries are constants, except
// those with an IN list, one per list length.
const stmtCacheMax = 512

// readers is the reader pool with its statements prepared once each.
// Parsing a statement on every query was a tenth of the server's CPU under
// make load (SQLite's parser, in modernc's pure-Go build); database/sql
// prepares a cached statement once on each connection that runs it.
type readers struct {
	db *sql.DB
	mu sync.RWMutex
	m  map[string]*sql.Stmt
}

func newReaders(db *sql.DB) *readers { return &readers{db: db, m: map[string]*sql.Stmt{}} }

// stmt returns q prepared, or nil (the caller queries unprepared) when it
// cannot be or the cache is full.
func (r *readers) stmt(ctx context.Context, q string) *sql.Stmt {
	r.mu.RLock()
	st := r.m[q]
	r.mu.RUnlock()
	if st != nil {
		return st
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.m[q]; st != nil {
		return st
	}
	if len(r.m) >= stmtCacheMax {
		return nil
	}
	// Prepared outside the request's context: the statement outlives it.
	st, err := r.db.PrepareContext(context.WithoutCancel(ctx), q)
	if err != nil {
		return nil // the unprepared query reports the error
	}
	r.m[q] = st
	return st
}

// QueryContext is sql.DB's, through the prepared statement.
func (r *readers) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := r.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return r.db.QueryContext(ctx, q, args...)
}

// QueryRowContext is sql.DB's, through the prepared statement.
func (r *readers) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := r.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return r.db.QueryRowContext(ctx, q, args...)
}

// Close closes the statements, then the pool.
func (r *readers) Close() error {
	r.mu.Lock()
	for q, st := range r.m {
		st.Close()
		delete(r.m, q)
	}
	r.mu.Unlock()
	return r.db.Close()
}
