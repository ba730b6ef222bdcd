package store

import (
	"context"
	"strings"
	"testing"
)

// TestProgramCodeAndProgress: code saves replace each other and stay per
// learner; runs count attempts and passes; the solution's first showing is kept.
func TestProgramCodeAndProgress(t *testing.T) {
	db := openTest(t)
	la, lb := strings.Repeat("a", LearnerIDLen), strings.Repeat("b", LearnerIDLen)
	ctx := context.Background()
	if _, ok, err := db.ProgramCode(ctx, la, "04-x", "p"); err != nil || ok {
		t.Fatalf("unsaved code: ok %v err %v", ok, err)
	}
	for _, src := range []string{"int main(){}", "int main(){return 0;}"} {
		if err := db.SaveProgramCode(ctx, la, "04-x", "p", src); err != nil {
			t.Fatal(err)
		}
	}
	if src, ok, err := db.ProgramCode(ctx, la, "04-x", "p"); err != nil || !ok || src != "int main(){return 0;}" {
		t.Fatalf("saved code %q ok %v err %v", src, ok, err)
	}
	if _, ok, _ := db.ProgramCode(ctx, lb, "04-x", "p"); ok {
		t.Fatal("learner-b sees learner-a's code")
	}
	for _, pass := range []bool{false, false, true, false} {
		if err := db.RecordProgramRun(ctx, la, "04-x", "p", pass); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.RecordSolutionShown(ctx, la, "04-x", "p"); err != nil {
		t.Fatal(err)
	}
	m, err := db.LessonPrograms(ctx, la, "04-x")
	if err != nil {
		t.Fatal(err)
	}
	p := m["p"]
	if p.Attempts != 4 || p.Passes != 1 || !p.Passed() || p.SolutionAt.IsZero() {
		t.Fatalf("progress %+v; want 4 attempts, 1 pass, passed, solution shown", p)
	}
	all, err := db.ClassProgramsIn(ctx, Scope{})
	if err != nil || len(all) != 1 || all[0].Learner != la || all[0].Passes != 1 {
		t.Fatalf("gradebook rows %+v err %v", all, err)
	}
}
