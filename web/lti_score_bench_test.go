package web

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/lti"
	"github.com/rdmalab/rdmalab/store"
)

// BenchmarkLTIScore is the cost of one learner's LMS score on a graded
// lesson link (issue 41): "learner-rows" is what an answer now pays
// (linkScore: that learner's attempts, reveals, tasks and programs), and
// "class-gradebook" what it paid before (the class's whole gradebook,
// seven class-wide queries, for one cell). Each runs in a class of 40 and
// of 4,000 learners with four answers each to the lesson's questions; the
// first should not grow with the class.
func BenchmarkLTIScore(b *testing.B) {
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var les *lessons.Lesson
	for _, l := range course.Lessons {
		if l.Quiz != nil && len(l.Quiz.Questions) > 0 {
			les = l
			break
		}
	}
	for _, n := range []int{40, 4000} {
		srv, learners, one := ltiScoreClass(b, course, les, n)
		learner := learners[n/2]
		ctx := context.Background()
		b.Run(fmt.Sprintf("learners=%d/learner-rows", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := srv.linkScore(ctx, learner, one, les); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("learners=%d/class-gradebook", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := srv.instructors.LessonScore(ctx, one.Cohort, learner, les.Slug); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// ltiScoreClass is an LMS course's class of n learners, each with a graded
// link to les and four answers to it (some right), les graded in the
// class (open now, best of 3): the server, the learners, and a link.
func ltiScoreClass(tb testing.TB, course *lessons.Course, les *lessons.Lesson, n int) (*Server, []string, store.LTIGradeLink) {
	tb.Helper()
	db, err := store.Open(filepath.Join(tb.TempDir(), "lti-score.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	srv, err := New(Config{Course: func() *lessons.Course { return course }, Store: db,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LTI: &LTI{}})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	pid, err := db.AddLTIPlatform(ctx, lti.Platform{Issuer: "https://lms.example", ClientID: "c1", Deployments: []string{"d1"},
		AuthURL: "https://lms.example/auth", TokenURL: "https://lms.example/token", JWKSURL: "https://lms.example/jwks"})
	if err != nil {
		tb.Fatal(err)
	}
	var learners []string
	for i := range n {
		sub := fmt.Sprintf("s-%d", i)
		done, err := db.RecordLTILaunch(ctx, store.LTILaunch{PlatformID: pid, Sub: sub, Role: "learner", ContextID: "course-1",
			LineItem: "https://lms.example/li/1", Lesson: les.Slug})
		if err != nil {
			tb.Fatal(err)
		}
		learners = append(learners, done.Learner)
	}
	raw := rawDB(tb, db)
	tx, err := raw.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	ts := time.Now().UTC().Format("2006-01-02T15:04:05.000000000Z")
	for k, q := range les.Quiz.Questions[:4] { // four answers each, some right
		if _, err := tx.Exec(`INSERT INTO attempts (learner, question_id, answer, correct, seen, created_at)
			SELECT u.learner, ?, '"a"', (u.rowid + ?) % 2, 0, ? FROM lti_users u`, q.ID, k, ts); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	links, err := db.LTIGradeLinks(ctx, learners[0])
	if err != nil || len(links) != 1 {
		tb.Fatalf("links: %v %v", links, err)
	}
	one := links[0]
	if err := db.SetGradedLesson(ctx, store.GradedLesson{Cohort: one.Cohort, Lesson: les.Slug, Opens: time.Now().Add(-time.Hour),
		Closes: time.Now().Add(time.Hour), Limit: 3, Counts: "best"}, 0); err != nil {
		tb.Fatal(err)
	}
	return srv, learners, one
}

// TestLTIScoreIsTheGradebooks: the score computed from one learner's rows
// is the class gradebook's cell, graded and (after the setting is
// cleared) practice, for every learner of a small class.
func TestLTIScoreIsTheGradebooks(t *testing.T) {
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	les := course.Lesson("01-why-rdma")
	srv, learners, one := ltiScoreClass(t, course, les, 6)
	ctx := context.Background()
	// A reveal scores a graded question 0.
	if err := srv.cfg.Store.AddQuizEvent(ctx, learners[1], les.Quiz.Questions[1].ID, "reveal", ""); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"graded", "practice"} {
		if mode == "practice" {
			if err := srv.cfg.Store.ClearGradedLesson(ctx, one.Cohort, les.Slug); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range learners {
			got, err := srv.linkScore(ctx, id, one, les)
			if err != nil {
				t.Fatal(err)
			}
			want, err := srv.instructors.LessonScore(ctx, one.Cohort, id, les.Slug)
			if err != nil {
				t.Fatal(err)
			}
			if got.Given != want.Score || got.Max != want.Questions {
				t.Errorf("%s, learner %s: %d/%d from the learner's rows, the gradebook %d/%d", mode, id, got.Given, got.Max, want.Score, want.Questions)
			}
		}
	}
}
