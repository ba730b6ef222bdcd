package store

import (
	"database/sql"
	"fmt"
)

// scanner is one row being read: *sql.Row or *sql.Rows.
type scanner interface{ Scan(...any) error }

// collect reads every row a query returned with scan, in order, and
// closes the rows. rows and err are the query's own results, so a call
// reads `rows, err := db.r.QueryContext(…); return collect(what, rows,
// err, scanX)`; what names the query in its errors ("store: what: …").
func collect[T any](what string, rows *sql.Rows, err error, scan func(scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("store: %s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	return out, nil
}
