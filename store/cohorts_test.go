package store

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCohortScopes: who the class statistics count, per class, and after
// a class is archived.
func TestCohortScopes(t *testing.T) {
	ctx := context.Background()
	db := openInstructorsDB(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	spring, err := db.CreateCohort(ctx, "2026 spring, group A", 0)
	must(err)
	autumn, err := db.CreateCohort(ctx, "2026 autumn", 0)
	must(err)
	if len(spring.Code) != 8 || spring.Code == autumn.Code {
		t.Fatalf("codes %q %q", spring.Code, autumn.Code)
	}
	var ve *ValidationError
	if _, err := db.CreateCohort(ctx, "  ", 0); !errors.As(err, &ve) {
		t.Errorf("empty name: %v", err)
	}

	ann, bob, cat, visitor, staff := NewLearnerID(), NewLearnerID(), NewLearnerID(), NewLearnerID(), NewLearnerID()
	// ann joins spring (typed in lower case with a dash) and answers;
	// bob joins autumn and does nothing else; cat answers, in no class;
	// visitor only reads a lesson; staff is an instructor's browser.
	_, err = db.JoinCohort(ctx, ann, strings.ToLower(spring.Code[:4])+"-"+spring.Code[4:])
	must(err)
	_, err = db.JoinCohort(ctx, ann, spring.Code) // twice is fine
	must(err)
	_, err = db.AddAttempt(ctx, ann, "q1", json.RawMessage(`"a"`), true, false)
	must(err)
	_, err = db.JoinCohort(ctx, bob, autumn.Code)
	must(err)
	_, err = db.AddAttempt(ctx, cat, "q1", json.RawMessage(`"b"`), false, false)
	must(err)
	must(db.MarkOpened(ctx, visitor, "01-a"))
	must(db.MarkStaff(ctx, staff, 0))
	_, err = db.AddAttempt(ctx, staff, "q1", json.RawMessage(`"b"`), false, false)
	must(err)
	must(db.MarkCompleted(ctx, staff, "01-a"))
	if _, err := db.JoinCohort(ctx, cat, "NOPE1234"); !errors.Is(err, ErrNoCohort) {
		t.Errorf("unknown code: %v", err)
	}

	ids := func(sc Scope) []string {
		t.Helper()
		p, err := db.ClassLearnersIn(ctx, sc, 0, 0, time.Now().Add(-time.Hour))
		must(err)
		var out []string
		for _, l := range p.Learners {
			out = append(out, l.ID)
		}
		slices.Sort(out)
		if p.Total != len(out) {
			t.Errorf("total %d for %d rows", p.Total, len(out))
		}
		return out
	}
	sorted := func(s ...string) []string { slices.Sort(s); return s }
	if got, want := ids(Scope{}), sorted(ann, bob, cat); !slices.Equal(got, want) {
		t.Errorf("all learners = %v, want %v (no visitor, no staff)", got, want)
	}
	if got := ids(Scope{Cohort: spring.ID}); !slices.Equal(got, []string{ann}) {
		t.Errorf("spring = %v", got)
	}
	att, err := db.ClassAttemptsIn(ctx, Scope{})
	must(err)
	if len(att) != 2 {
		t.Errorf("attempts counted = %d, want 2 (not staff's)", len(att))
	}
	lc, err := db.ClassLessonCountsIn(ctx, Scope{})
	must(err)
	if len(lc) != 0 {
		t.Errorf("lesson counts %v: the visitor and staff count", lc)
	}

	// Archive spring: its learners leave the "all" view and its code stops.
	must(db.ArchiveCohort(ctx, spring.ID, true))
	if got, want := ids(Scope{}), sorted(bob, cat); !slices.Equal(got, want) {
		t.Errorf("after archiving: %v, want %v", got, want)
	}
	if got := ids(Scope{Cohort: spring.ID}); !slices.Equal(got, []string{ann}) {
		t.Errorf("archived class view = %v", got)
	}
	if _, err := db.JoinCohort(ctx, cat, spring.Code); !errors.Is(err, ErrNoCohort) {
		t.Errorf("join archived: %v", err)
	}
	open, err := db.Cohorts(ctx, false)
	must(err)
	all, err := db.Cohorts(ctx, true)
	must(err)
	if len(open) != 1 || open[0].ID != autumn.ID || open[0].Members != 1 || len(all) != 2 {
		t.Errorf("open %+v, all %d", open, len(all))
	}
	c, err := db.Cohort(ctx, spring.ID)
	must(err)
	if !c.Archived() || c.Members != 1 || c.Name != "2026 spring, group A" {
		t.Errorf("spring = %+v", c)
	}
	must(db.ArchiveCohort(ctx, spring.ID, false))
	if got, want := ids(Scope{}), sorted(ann, bob, cat); !slices.Equal(got, want) {
		t.Errorf("reopened: %v", got)
	}
	mine, err := db.LearnerCohorts(ctx, ann)
	must(err)
	if len(mine) != 1 || mine[0].ID != spring.ID {
		t.Errorf("ann's classes %+v", mine)
	}
}
