package web

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/web/views"
)

// Requests that miss the same page together share one build, and a
// failed build is not kept (the next request builds again).
func TestSkeletonBuiltOnce(t *testing.T) {
	c := &lessons.Course{}
	l := &lessons.Lesson{Slug: "x"}
	var sc skeletonCache
	var builds atomic.Int32
	release := make(chan struct{})
	build := func(*lessons.Course, *lessons.Lesson, string, bool) (*skeleton, error) {
		builds.Add(1)
		<-release
		return &skeleton{}, nil
	}
	var wg sync.WaitGroup
	got := make([]*skeleton, 20)
	for i := range got {
		wg.Go(func() {
			sk, err := sc.get(c, l, "zh", false, build)
			if err != nil {
				t.Error(err)
			}
			got[i] = sk
		})
	}
	time.Sleep(50 * time.Millisecond) // every request is in, waiting
	close(release)
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Errorf("20 requests together built the page %d times, want 1", n)
	}
	for _, sk := range got {
		if sk != got[0] || sk == nil {
			t.Fatal("the requests got different skeletons")
		}
	}

	fails := 0
	bad := func(*lessons.Course, *lessons.Lesson, string, bool) (*skeleton, error) {
		fails++
		return nil, errors.New("broken component")
	}
	for range 2 {
		if _, err := sc.get(c, l, "en", false, bad); err == nil {
			t.Error("a failed build gave no error")
		}
	}
	if fails != 2 {
		t.Errorf("a failed build was kept: %d builds for 2 requests", fails)
	}
	// A new content load starts afresh.
	if _, err := sc.get(&lessons.Course{}, l, "zh", false, build); err != nil || builds.Load() != 2 {
		t.Errorf("a new course reused the old page (builds %d, err %v)", builds.Load(), err)
	}
}

// WarmPages builds every page of the built-in course without an error.
func TestWarmPages(t *testing.T) {
	c, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := newEnv(t, c).Server
	if err := s.WarmPages(); err != nil {
		t.Fatal(err)
	}
	s.skeletons.mu.Lock()
	n := len(s.skeletons.m)
	s.skeletons.mu.Unlock()
	if want := 4 * len(s.course().Lessons); n != want {
		t.Errorf("%d pages prepared, want %d (each lesson, two languages, two kinds)", n, want)
	}
}

// An unanswered question's status line, taken from its own memo, is the
// one the template renders.
func TestBlankStatusLine(t *testing.T) {
	for _, lang := range []string{"zh", "en"} {
		var fast, slow bytes.Buffer
		if err := statusLine(lang, views.QuizStatus{}).Render(context.Background(), &fast); err != nil {
			t.Fatal(err)
		}
		if err := views.QuizStatusLine(tr(lang), views.QuizStatus{}).Render(context.Background(), &slow); err != nil {
			t.Fatal(err)
		}
		if fast.String() != slow.String() || fast.Len() == 0 {
			t.Errorf("%s: %q, the template renders %q", lang, fast.String(), slow.String())
		}
	}
}
