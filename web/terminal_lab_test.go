package web

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
)

// /lab and /api/lab say how many learner terminals are in use of the cap
// and how many learners wait; a lab without terminals says nothing of them.
func TestLabTerminals(t *testing.T) {
	fake := &fakeTerms{max: 2, queueMax: 4, sessions: map[string]*fakeShell{"a": {}}, waiting: []string{"b"}}
	for _, tc := range []struct {
		name  string
		terms rdmalab.TermHost
		api   *labTerminals
		zh    string
		en    string
	}{
		{"on", fake, &labTerminals{InUse: 1, Max: 2, Waiting: 1}, "1 / 2，排队 1 人", "1 / 2, 1 waiting"},
		{"off", nil, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := store.Open(filepath.Join(t.TempDir(), "lab.db"))
			if err != nil {
				t.Fatal(err)
			}
			var course atomic.Pointer[lessons.Course]
			course.Store(fixtureCourse())
			srv, err := New(Config{Course: course.Load, Store: db, Logger: slog.New(slog.DiscardHandler),
				Lab: labFunc(func(context.Context) sandbox.Lab { return readyLab }), Terminals: tc.terms})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv.Handler())
			t.Cleanup(func() { ts.Close(); db.Close() })

			res, err := http.Get(ts.URL + "/api/lab")
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Terminals *labTerminals `json:"terminals"`
			}
			err = json.NewDecoder(res.Body).Decode(&got)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if (got.Terminals == nil) != (tc.api == nil) || got.Terminals != nil && *got.Terminals != *tc.api {
				t.Errorf("/api/lab terminals: %+v, want %+v", got.Terminals, tc.api)
			}
			for lang, want := range map[string]string{"zh": tc.zh, "en": tc.en} {
				sel := labDoc(t, ts, lang).Find(`[data-testid=lab-terminals]`)
				if sel.Text() != want || (want == "") != (sel.Length() == 0) {
					t.Errorf("/lab?lang=%s terminals: %q (%d elements), want %q", lang, sel.Text(), sel.Length(), want)
				}
			}
		})
	}
}
