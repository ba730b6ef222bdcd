package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRosterClaimAndMerge: a roster imported into a class; a student
// claims a seat; the same codes on a second device sign it in as the same
// learner and merge what that device did anonymously, nothing lost; a
// shared PC still holding another student's seat is never merged; a wrong
// or reset code, an instructor's browser and a name change are refused.
func TestRosterClaimAndMerge(t *testing.T) {
	ctx := context.Background()
	db := openInstructorsDB(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	c, err := db.CreateCohort(ctx, "RDMA 2026", 0)
	must(err)
	added, updated, err := db.ImportRoster(ctx, c.ID, []RosterEntry{{"2026001", "张三"}, {"2026002", "Li Si"}})
	must(err)
	if added != 2 || updated != 0 {
		t.Fatalf("import: %d added, %d updated", added, updated)
	}
	// Importing again updates names and keeps codes.
	seats, err := db.Seats(ctx, c.ID)
	must(err)
	added, updated, err = db.ImportRoster(ctx, c.ID, []RosterEntry{{"2026002", "李四"}, {"2026003", "王五"}})
	must(err)
	again, _ := db.Seats(ctx, c.ID)
	if added != 1 || updated != 1 || len(again) != 3 || again[1].Code != seats[1].Code || again[1].Name != "李四" {
		t.Fatalf("re-import: %d/%d %+v", added, updated, again)
	}
	zhang, li := again[0], again[1]

	// Zhang's laptop: works anonymously first, then claims.
	laptop := NewLearnerID()
	must(db.MarkCompleted(ctx, laptop, "01-why-rdma"))
	_, err = db.AddAttempt(ctx, laptop, "why/q1", []byte(`"a"`), true, false)
	must(err)
	cl, err := db.ClaimSeat(ctx, laptop, c.Code, zhang.Code)
	must(err)
	if cl.Learner != laptop || cl.Merged {
		t.Fatalf("first claim: %+v", cl)
	}
	if name, _ := db.DisplayName(ctx, laptop); name != "张三" {
		t.Errorf("claimed learner's name %q", name)
	}
	if err := db.SetDisplayName(ctx, laptop, "Li Si"); !errors.Is(err, ErrRosterName) {
		t.Errorf("a seat holder renamed themselves: %v", err)
	}

	// Zhang's phone: answers, saves code, checks a task, then claims with
	// the same codes (typed in lower case).
	phone := NewLearnerID()
	must(db.MarkOpened(ctx, phone, "02-lossless-roce"))
	_, err = db.AddAttempt(ctx, phone, "why/q2", []byte(`"b"`), false, false)
	must(err)
	must(db.RecordTaskCheck(ctx, phone, "01-why-rdma", "t1", true))
	must(db.RecordTaskCheck(ctx, laptop, "01-why-rdma", "t1", false))
	must(db.SaveProgramCode(ctx, phone, "04-first-program", "open", "int main(){}"))
	must(db.RecordProgramRun(ctx, phone, "04-first-program", "open", true))
	must(db.RecordProgramRun(ctx, laptop, "04-first-program", "open", false))
	_, err = db.RevealProgramHint(ctx, phone, "04-first-program", "open", 3)
	must(err)
	must(db.RecordProgramSubmission(ctx, phone, "04-first-program", "open", "run-phone", "int main(){}"))
	must(db.ResetProgramCode(ctx, phone, "04-first-program", "other", "starter"))
	cl, err = db.ClaimSeat(ctx, phone, strings.ToLower(c.Code), strings.ToLower(zhang.Code))
	must(err)
	if cl.Learner != laptop || !cl.Merged {
		t.Fatalf("second device: %+v", cl)
	}
	prog, err := db.LearnerProgress(ctx, laptop)
	must(err)
	if !prog["01-why-rdma"].Completed() || prog["02-lossless-roce"].OpenedAt.IsZero() {
		t.Errorf("progress after merge: %+v", prog)
	}
	st, err := db.LearnerQuestionStatus(ctx, laptop, []string{"why/q1", "why/q2"})
	must(err)
	if st["why/q1"].Attempts != 1 || st["why/q2"].Attempts != 1 {
		t.Errorf("attempts after merge: %+v", st)
	}
	tasks, err := db.LessonTasks(ctx, laptop, "01-why-rdma")
	must(err)
	if tasks["t1"].Checks != 2 || tasks["t1"].DoneAt.IsZero() {
		t.Errorf("task after merge: %+v", tasks["t1"])
	}
	progs, err := db.LessonPrograms(ctx, laptop, "04-first-program")
	must(err)
	if progs["open"].Attempts != 2 || progs["open"].Passes != 1 || progs["open"].Hints != 1 {
		t.Errorf("program after merge: %+v", progs["open"])
	}
	if src, ok, _ := db.ProgramCode(ctx, laptop, "04-first-program", "open"); !ok || src != "int main(){}" {
		t.Errorf("program code after merge: %q %v", src, ok)
	}
	if subs, _ := db.ProgramSubmissions(ctx, laptop); len(subs) != 1 || subs[0].RunID != "run-phone" {
		t.Errorf("program submissions after merge: %+v", subs)
	}
	if known, _ := db.LearnerKnown(ctx, phone); known {
		t.Error("the merged-away learner id still exists")
	}

	// A shared PC still signed in as Zhang: Li claims there. Zhang's work
	// is not merged into Li; the PC becomes a fresh learner for Li.
	cl, err = db.ClaimSeat(ctx, laptop, c.Code, li.Code)
	must(err)
	if cl.Learner == laptop || cl.Merged {
		t.Fatalf("shared PC: %+v", cl)
	}
	if st, _ := db.LearnerQuestionStatus(ctx, cl.Learner, []string{"why/q1"}); st["why/q1"].Attempts != 0 {
		t.Error("Zhang's answers went to Li")
	}

	// Wrong codes, an archived class, an instructor's browser.
	if _, err := db.ClaimSeat(ctx, NewLearnerID(), c.Code, "WRONG234"); !errors.Is(err, ErrNoSeat) {
		t.Errorf("wrong code: %v", err)
	}
	staff := NewLearnerID()
	must(db.MarkStaff(ctx, staff, 0))
	if _, err := db.ClaimSeat(ctx, staff, c.Code, li.Code); !errors.Is(err, ErrStaffSeat) {
		t.Errorf("staff claim: %v", err)
	}
	// A leaked code is reset: the old one stops working, the seat stays.
	must(db.NewSeatCode(ctx, c.ID, zhang.ID))
	if _, err := db.ClaimSeat(ctx, NewLearnerID(), c.Code, zhang.Code); !errors.Is(err, ErrNoSeat) {
		t.Errorf("reset code still works: %v", err)
	}
	now, _ := db.LearnerSeats(ctx, laptop)
	if len(now) != 1 || now[0].Learner != laptop || now[0].Claims != 2 {
		t.Errorf("Zhang's seat after reset: %+v", now)
	}
	// Removing Zhang from the class frees the seat; their work stays.
	must(db.RemoveMember(ctx, c.ID, laptop))
	if s, _ := db.LearnerSeats(ctx, laptop); len(s) != 0 {
		t.Errorf("seat still held after removal: %+v", s)
	}
	if p, _ := db.LearnerProgress(ctx, laptop); !p["01-why-rdma"].Completed() {
		t.Error("removal from the class deleted work")
	}
	db.ArchiveCohort(ctx, c.ID, true)
	if _, err := db.ClaimSeat(ctx, NewLearnerID(), c.Code, li.Code); !errors.Is(err, ErrNoSeat) {
		t.Errorf("claim in an archived class: %v", err)
	}
	// Two seat holders are two students: never merged.
	if err := db.MergeLearners(ctx, cl.Learner, laptop); err != nil {
		t.Errorf("merge into a learner without a seat: %v", err)
	}
}

// TestMergeKnowsEveryTable: every table that references learners has a
// merge rule (a new table without one would lose its rows to the delete's
// cascade; MergeLearners refuses to run then, and this test names it).
func TestMergeKnowsEveryTable(t *testing.T) {
	db := openInstructorsDB(t)
	rows, err := db.r.db.Query(`SELECT DISTINCT m.name FROM sqlite_master m, pragma_foreign_key_list(m.name) f
		WHERE m.type = 'table' AND f."table" = 'learners'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var name string
		rows.Scan(&name)
		n++
		if _, ok := mergeSQL[name]; !ok {
			t.Errorf("table %s references learners: add its rule to mergeSQL (store/rosters.go)", name)
		}
	}
	if n < 9 {
		t.Errorf("found %d tables referencing learners; the query is broken", n)
	}
}
