package store

import (
	"context"
	"fmt"
	"testing"
)

// A reader query is prepared once and reused; past the bound, queries
// still answer, unprepared; a query that cannot be prepared reports its
// error as before.
func TestReadersPrepareOnce(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	q := `SELECT COUNT(*) FROM learners WHERE id = ?`
	var n int
	for range 3 {
		if err := db.r.QueryRowContext(ctx, q, "nobody").Scan(&n); err != nil || n != 0 {
			t.Fatalf("count %d, %v", n, err)
		}
	}
	first := db.r.m[q]
	if first == nil || db.r.stmt(ctx, q) != first {
		t.Fatal("the query was not prepared once and reused")
	}
	for i := range stmtCacheMax + 10 {
		var got int
		if err := db.r.QueryRowContext(ctx, fmt.Sprintf(`SELECT %d`, i)).Scan(&got); err != nil || got != i {
			t.Fatalf("query %d: %d, %v", i, got, err)
		}
	}
	if len(db.r.m) != stmtCacheMax {
		t.Errorf("%d statements kept, bound %d", len(db.r.m), stmtCacheMax)
	}
	if _, err := db.r.QueryContext(ctx, `SELECT nope FROM nowhere`); err == nil {
		t.Error("a bad query gave no error")
	}
}
