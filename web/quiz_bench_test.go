package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/store"
)

// BenchmarkQuizSubmitVsInsert measures a quiz submission through the whole
// production handler stack (middleware, JSON decoding, grading, the
// attempt's transaction, the learner's status read, the re-rendered
// question) against the one thing it cannot avoid: a plain SQLite INSERT
// of the same attempt row into the same database. The two alternate
// request by request, so load from other processes hits both alike.
// "ratio" is the handler's throughput over the bare insert's; `make bench`
// (cmd/benchreport) prints it with submissions/s.
func BenchmarkQuizSubmitVsInsert(b *testing.B) {
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var q *quiz.Question
	for _, id := range slices.Sorted(mapsKeys(course.Questions)) {
		if course.Questions[id].Type == quiz.Multi {
			q = course.Questions[id]
			break
		}
	}
	if q == nil {
		b.Fatal("the built-in course has no multi-choice question")
	}
	answer, _ := json.Marshal([]string{q.Options[0].ID, q.Options[1].ID})
	body := `{"answer":` + string(answer) + `}`

	db, err := store.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	// The per-address limits (limits.go) are not what this measures: every
	// request comes from httptest's one address, which they would refuse
	// after WriteBurst submissions (429). Negative values turn them off.
	srv, err := New(Config{Course: func() *lessons.Course { return course }, Store: db,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Limits: Limits{WriteBurst: -1, NewLearnerBurst: -1}})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	learner := store.NewLearnerID()
	cookie := &http.Cookie{Name: learnerCookie, Value: learner}
	if err := db.EnsureLearner(context.Background(), learner); err != nil {
		b.Fatal(err)
	}
	insert, err := rawDB(b, db).Prepare(`INSERT INTO attempts (learner, question_id, answer, correct, created_at) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	defer insert.Close()

	w := &discardWriter{h: http.Header{}}
	var handlerTime, insertTime time.Duration
	n := 0
	b.ResetTimer()
	for b.Loop() {
		// A learner answers a question a few times, not thousands: a new
		// learner every 5 submissions keeps the per-learner reads realistic.
		if n++; n%5 == 0 {
			b.StopTimer()
			learner = store.NewLearnerID()
			cookie = &http.Cookie{Name: learnerCookie, Value: learner}
			if err := db.EnsureLearner(context.Background(), learner); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		r := httptest.NewRequest("POST", "/api/quiz/"+q.ID+"/attempts", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.AddCookie(cookie)
		w.reset()
		t0 := time.Now()
		h.ServeHTTP(w, r)
		t1 := time.Now()
		if w.status != http.StatusOK {
			b.Fatalf("submission: status %d", w.status)
		}
		if _, err := insert.Exec(learner, q.ID, string(answer), false, t1.UTC().Format(time.RFC3339Nano)); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		handlerTime += t1.Sub(t0)
		insertTime += t2.Sub(t1)
	}
	b.StopTimer()
	b.ReportMetric(float64(insertTime)/float64(handlerTime), "ratio")
	b.ReportMetric(float64(handlerTime.Nanoseconds())/float64(b.N), "handler-ns/op")
	b.ReportMetric(float64(insertTime.Nanoseconds())/float64(b.N), "insert-ns/op")
	b.ReportMetric(float64(b.N)/handlerTime.Seconds(), "submissions/s")
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
