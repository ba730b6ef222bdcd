package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestQuizEvents(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "lab.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	l1, l2 := strings.Repeat("a", LearnerIDLen), strings.Repeat("b", LearnerIDLen)
	if ok, _ := db.Revealed(ctx, l1, "x/q"); ok {
		t.Fatal("revealed before any event")
	}
	for _, e := range []struct{ l, q, kind, d string }{
		{l1, "x/q", QuizReveal, ""}, {l1, "x/q", QuizReveal, ""}, {l2, "x/q", QuizReveal, ""},
		{l1, "x/n", QuizFormat, "12,5"}, {l2, "x/n", QuizFormat, "twelve"},
	} {
		if err := db.AddQuizEvent(ctx, e.l, e.q, e.kind, e.d); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := db.Revealed(ctx, l1, "x/q"); !ok {
		t.Error("reveal not recorded")
	}
	if ok, _ := db.Revealed(ctx, l1, "x/n"); ok {
		t.Error("a format error counts as a reveal")
	}
	c, err := db.AllQuizEventCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c["x/q"].Reveals != 2 || c["x/n"].FormatErrors != 2 || c["x/q"].FormatErrors != 0 {
		t.Errorf("counts %+v", c)
	}
	// Statistics of answers are unchanged: no attempt was stored.
	if a, _ := db.AllAttempts(ctx, "x/q", "x/n"); len(a) != 0 {
		t.Errorf("attempts %v", a)
	}
	if db.AddQuizEvent(ctx, l1, "x/q", "bogus", "") == nil {
		t.Error("unknown kind accepted")
	}
}
