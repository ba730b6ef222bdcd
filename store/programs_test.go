package store

import (
	"context"
	"fmt"
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

// TestProgramHintsSubmissionsResets: hints are revealed in order, one row
// each, never past the last; a learner who only read hints is in the
// gradebook; the last submission replaces the one before; a reset keeps
// the code it replaced, unless that was the starter.
func TestProgramHintsSubmissionsResets(t *testing.T) {
	db := openTest(t)
	la := strings.Repeat("a", LearnerIDLen)
	ctx := context.Background()
	for want := 1; want <= 3; want++ {
		n, err := db.RevealProgramHint(ctx, la, "04-x", "p", 2)
		if err != nil {
			t.Fatal(err)
		}
		if exp := min(want, 2); n != exp {
			t.Errorf("reveal %d: %d revealed, want %d", want, n, exp)
		}
	}
	all, err := db.ClassProgramsIn(ctx, Scope{})
	if err != nil || len(all) != 1 || all[0].Hints != 2 || all[0].Attempts != 0 {
		t.Fatalf("gradebook rows after hints only: %+v err %v", all, err)
	}
	if err := db.RecordProgramRun(ctx, la, "04-x", "p", true); err != nil {
		t.Fatal(err)
	}
	if m, _ := db.LessonPrograms(ctx, la, "04-x"); m["p"].Hints != 2 || m["p"].Attempts != 1 {
		t.Errorf("record %+v; want 2 hints, 1 attempt", m["p"])
	}

	for i, src := range []string{"int main(){return 1;}", "int main(){return 0;}"} {
		if err := db.RecordProgramSubmission(ctx, la, "04-x", "p", fmt.Sprintf("run%d", i), src); err != nil {
			t.Fatal(err)
		}
	}
	subs, err := db.ProgramSubmissions(ctx, la)
	if err != nil || len(subs) != 1 || subs[0].RunID != "run1" || subs[0].Source != "int main(){return 0;}" || subs[0].At.IsZero() {
		t.Fatalf("submissions %+v err %v", subs, err)
	}

	const starter = "int main(){ /* TODO */ }"
	if err := db.ResetProgramCode(ctx, la, "04-x", "q", starter); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.ProgramCodeBeforeReset(ctx, la, "04-x", "q"); ok {
		t.Error("a reset of code never saved kept something")
	}
	if err := db.SaveProgramCode(ctx, la, "04-x", "q", "mine"); err != nil {
		t.Fatal(err)
	}
	if err := db.ResetProgramCode(ctx, la, "04-x", "q", starter); err != nil {
		t.Fatal(err)
	}
	if src, _, _ := db.ProgramCode(ctx, la, "04-x", "q"); src != starter {
		t.Errorf("code after a reset: %q", src)
	}
	if src, ok, _ := db.ProgramCodeBeforeReset(ctx, la, "04-x", "q"); !ok || src != "mine" {
		t.Errorf("code before the reset: %q %v", src, ok)
	}
	// A second reset while the code is the starter keeps "mine".
	if err := db.ResetProgramCode(ctx, la, "04-x", "q", starter); err != nil {
		t.Fatal(err)
	}
	if src, _, _ := db.ProgramCodeBeforeReset(ctx, la, "04-x", "q"); src != "mine" {
		t.Errorf("a second reset lost the code: %q", src)
	}
}
