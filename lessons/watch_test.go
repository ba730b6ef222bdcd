package lessons

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lessonMD is a minimal valid lesson page whose body says body.
func lessonMD(title, body string, extra ...string) string {
	return "---\ntitle: " + title + "\nsummary: A test lesson.\norder: 1\n" + strings.Join(extra, "") +
		"---\n\n" + body + "\n"
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// bodyText is the concatenated HTML of a lesson page.
func bodyText(c *Course, slug, lang string) string {
	l := c.Lesson(slug)
	if l == nil {
		return ""
	}
	var b strings.Builder
	for _, s := range l.Page(lang).Body {
		b.WriteString(string(s.HTML))
	}
	return b.String()
}

// startWatch loads dir and watches it until the test ends.
func startWatch(t *testing.T, dir string) (*Live, *Watcher) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	live, w, err := Watch(ctx, dir, Options{}, log)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		<-w.Done()
	})
	return live, w
}

// waitFor waits until the published snapshot satisfies ok, or fails the test
// after a deadline that is generous for a loaded CI machine. It returns the
// first snapshot after seq that satisfies ok.
func waitFor(t *testing.T, live *Live, what string, ok func(*Snapshot) bool) *Snapshot {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		ch := live.Changed()
		if s := live.Snapshot(); ok(s) {
			return s
		}
		select {
		case <-ch:
		case <-deadline:
			s := live.Snapshot()
			t.Fatalf("timed out waiting for %s; last snapshot: version %d seq %d errors %v", what, s.Version, s.Seq, s.Errors)
		}
	}
}

func TestWatchReload(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "01-alpha", "index.en.md")
	writeFile(t, idx, lessonMD("Alpha", "First version."))
	live, _ := startWatch(t, dir)

	if got := bodyText(live.Course(), "01-alpha", "en"); !strings.Contains(got, "First version.") {
		t.Fatalf("initial body = %q", got)
	}

	// Edit → the new content is served.
	writeFile(t, idx, lessonMD("Alpha", "Second version."))
	s := waitFor(t, live, "the edit", func(s *Snapshot) bool { return s.Version == 2 })
	if len(s.Errors) != 0 {
		t.Fatalf("errors after a good edit: %v", s.Errors)
	}
	if got := bodyText(s.Course, "01-alpha", "en"); !strings.Contains(got, "Second version.") {
		t.Fatalf("after edit body = %q", got)
	}

	// Broken edit (front matter never closed) → old content still served,
	// the error reported with file and line.
	writeFile(t, idx, "---\ntitle: Alpha\nsummary: broken\norder: 1\n\nBody without the closing line.\n")
	s = waitFor(t, live, "the error", func(s *Snapshot) bool { return len(s.Errors) > 0 })
	if s.Version != 2 {
		t.Errorf("a failed reload changed the version to %d", s.Version)
	}
	if got := bodyText(s.Course, "01-alpha", "en"); !strings.Contains(got, "Second version.") {
		t.Fatalf("learners lost the last good version: body = %q", got)
	}
	d := s.Errors[0]
	if d.File != filepath.Join(dir, "01-alpha/index.en.md") || d.Line != 1 || !strings.Contains(d.Message, "never closed") {
		t.Errorf("error = %q, want 01-alpha/index.en.md:1: ... never closed", d.String())
	}
	if got := live.Course(); got != s.Course {
		t.Error("Live.Course differs from the snapshot's course")
	}

	// Fix → recovered, errors cleared.
	writeFile(t, idx, lessonMD("Alpha", "Third version."))
	s = waitFor(t, live, "the fix", func(s *Snapshot) bool { return s.Version == 3 })
	if len(s.Errors) != 0 {
		t.Fatalf("errors after the fix: %v", s.Errors)
	}
	if got := bodyText(s.Course, "01-alpha", "en"); !strings.Contains(got, "Third version.") {
		t.Fatalf("after fix body = %q", got)
	}
}

func TestWatchQuizYAMLError(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "01-alpha", "index.en.md"), lessonMD("Alpha", "Text.\n\n::quiz alpha/one"))
	q := filepath.Join(dir, "01-alpha", "quiz.yaml")
	good := `questions:
  - id: alpha/one
    type: single
    prompt: {zh: 选一个, en: Pick one}
    options:
      - id: a
        correct: true
        text: {zh: 甲, en: A}
      - id: b
        text: {zh: 乙, en: B}
    explanation: {zh: 因为甲。, en: Because A.}
`
	writeFile(t, q, good)
	live, _ := startWatch(t, dir)
	if live.Course().Questions["alpha/one"] == nil {
		t.Fatal("question not loaded")
	}

	writeFile(t, q, strings.Replace(good, "type: single", "type: [single", 1))
	s := waitFor(t, live, "the YAML error", func(s *Snapshot) bool { return len(s.Errors) > 0 })
	found := false
	for _, d := range s.Errors {
		if d.File == filepath.Join(dir, "01-alpha/quiz.yaml") && d.Line > 0 {
			found = true
		}
	}
	if !found {
		t.Fatalf("no quiz.yaml:line error in %v", s.Errors)
	}
	if s.Course.Questions["alpha/one"] == nil {
		t.Fatal("the last good quiz is gone")
	}
}

func TestWatchNewAndDeletedFolders(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "01-alpha", "index.en.md"), lessonMD("Alpha", "A."))
	live, _ := startWatch(t, dir)

	// A new folder (created after the watch started) is picked up, and so is
	// a later edit inside it: the watch is recursive and follows new folders.
	writeFile(t, filepath.Join(dir, "02-beta", "index.en.md"), lessonMD("Beta", "B one."))
	waitFor(t, live, "the new lesson", func(s *Snapshot) bool { return s.Course.Lesson("02-beta") != nil })
	v := live.Snapshot().Version
	writeFile(t, filepath.Join(dir, "02-beta", "index.en.md"), lessonMD("Beta", "B two."))
	waitFor(t, live, "the edit in the new folder", func(s *Snapshot) bool {
		return s.Version > v && strings.Contains(bodyText(s.Course, "02-beta", "en"), "B two.")
	})

	// A file in a sub-folder (images/) counts too.
	v = live.Snapshot().Version
	writeFile(t, filepath.Join(dir, "02-beta", "images", "x.svg"), `<svg xmlns="http://www.w3.org/2000/svg"/>`)
	waitFor(t, live, "the image", func(s *Snapshot) bool { return s.Version > v })
	v = live.Snapshot().Version
	writeFile(t, filepath.Join(dir, "02-beta", "images", "x.svg"), `<svg xmlns="http://www.w3.org/2000/svg"><g/></svg>`)
	waitFor(t, live, "the image edit", func(s *Snapshot) bool { return s.Version > v })

	// Deleting a folder removes the lesson.
	if err := os.RemoveAll(filepath.Join(dir, "02-beta")); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, live, "the deletion", func(s *Snapshot) bool { return s.Course.Lesson("02-beta") == nil })
	if len(s.Errors) != 0 || s.Course.Lesson("01-alpha") == nil {
		t.Fatalf("after deletion: errors %v, alpha %v", s.Errors, s.Course.Lesson("01-alpha"))
	}

	// Deleting a folder another lesson depends on is an error: both lessons
	// stay served until the reference is fixed.
	writeFile(t, filepath.Join(dir, "02-beta", "index.en.md"), lessonMD("Beta", "B."))
	waitFor(t, live, "beta again", func(s *Snapshot) bool { return s.Course.Lesson("02-beta") != nil })
	writeFile(t, filepath.Join(dir, "01-alpha", "index.en.md"), lessonMD("Alpha", "A.", "prerequisites:\n  - 02-beta\n"))
	waitFor(t, live, "the prerequisite", func(s *Snapshot) bool {
		p := s.Course.Lesson("01-alpha").Page("en")
		return len(p.Prerequisites) == 1
	})
	if err := os.RemoveAll(filepath.Join(dir, "02-beta")); err != nil {
		t.Fatal(err)
	}
	s = waitFor(t, live, "the broken prerequisite", func(s *Snapshot) bool { return len(s.Errors) > 0 })
	if s.Course.Lesson("02-beta") == nil {
		t.Error("the last good course lost 02-beta")
	}
	if !strings.Contains(s.Errors[0].String(), filepath.Join(dir, "01-alpha/index.en.md")+":6: front matter: prerequisites: unknown lesson") &&
		!strings.Contains(s.Errors[0].String(), filepath.Join(dir, "01-alpha/index.en.md")+":6: prerequisites: unknown lesson") {
		t.Errorf("error = %q", s.Errors[0].String())
	}
}

// An editor that writes a file in two steps must not flash an error: the
// debounce waits for the file system to go quiet.
func TestWatchHalfWrittenFile(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "01-alpha", "index.en.md")
	writeFile(t, idx, lessonMD("Alpha", "One."))
	c, err := Load(os.DirFS(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	live := NewLive(c)
	w, err := NewWatcher(dir, Options{}, live, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	w.debounce = time.Second // wide margin between the two writes on a busy machine
	ctx, cancel := context.WithCancel(context.Background())
	go w.Run(ctx)
	t.Cleanup(func() {
		cancel()
		<-w.Done()
	})

	full := lessonMD("Alpha", "Two.")
	f, err := os.OpenFile(idx, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(full[:10]); err != nil { // "---\ntitle:": unclosed front matter
		t.Fatal(err)
	}
	f.Sync()
	time.Sleep(50 * time.Millisecond)
	if _, err := f.WriteString(full[10:]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s := waitFor(t, live, "the reload", func(s *Snapshot) bool { return s.Seq > 1 })
	if len(s.Errors) != 0 || s.Version != 2 {
		t.Fatalf("half-written file was published: version %d errors %v", s.Version, s.Errors)
	}

	// A file left half-written is reported and the last good version stays.
	writeFile(t, idx, full[:10])
	s = waitFor(t, live, "the error", func(s *Snapshot) bool { return len(s.Errors) > 0 })
	if !strings.Contains(bodyText(s.Course, "01-alpha", "en"), "Two.") {
		t.Fatal("last good version lost")
	}
}

func TestWatchIgnoresEditorNoise(t *testing.T) {
	for _, name := range []string{".index.en.md.swp", "index.en.md~", "4913", ".git"} {
		if !ignored(name) {
			t.Errorf("ignored(%q) = false", name)
		}
	}
	for _, name := range []string{"index.en.md", "quiz.yaml", "images"} {
		if ignored(name) {
			t.Errorf("ignored(%q) = true", name)
		}
	}
}

func TestWatchFirstLoadFails(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "01-alpha", "index.en.md"), "no front matter\n")
	_, _, err := Watch(context.Background(), dir, Options{}, nil)
	if err == nil || !strings.Contains(err.Error(), "01-alpha/index.en.md:1: missing front matter") {
		t.Fatalf("err = %v", err)
	}
}

func TestDiagnosticsOfOtherErrors(t *testing.T) {
	ds := Diagnostics(os.ErrNotExist, "/some/dir")
	if len(ds) != 1 || ds[0].File != "/some/dir" || ds[0].Severity != Error {
		t.Fatalf("got %v", ds)
	}
}

// Readers never see a torn snapshot while reloads publish.
func TestLiveConcurrent(t *testing.T) {
	a, b := &Course{}, &Course{}
	live := NewLive(a)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ch := live.Changed()
				s := live.Snapshot()
				if s.Errors != nil && s.Course == nil {
					t.Error("torn snapshot")
				}
				select {
				case <-stop:
					return
				case <-ch:
				}
			}
		}()
	}
	for i := range 200 {
		if i%3 == 0 {
			live.Fail([]Diagnostic{{File: "x", Line: i, Severity: Error, Message: "m"}})
		} else if i%2 == 0 {
			live.Publish(a)
		} else {
			live.Publish(b)
		}
	}
	close(stop)
	wg.Wait()
	s := live.Snapshot()
	if s.Seq != 201 || s.Errors != nil {
		t.Fatalf("seq %d errors %v", s.Seq, s.Errors)
	}
}

func TestLiveClose(t *testing.T) {
	live := NewLive(&Course{})
	select {
	case <-live.Done():
		t.Fatal("done before Close")
	default:
	}
	live.Close()
	live.Close() // idempotent
	<-live.Done()
}

// TestWatchPublishDraftByMove (issue 29 finding 3): publishing a draft the
// documented way, `mv _drafts/X X`, keeps live reload working for X and its
// sub-folders (the move used to leave X unwatched: inotify reported the
// watched folder as moved away and fsnotify dropped its watch).
func TestWatchPublishDraftByMove(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "01-alpha", "index.en.md"), lessonMD("Alpha", "A."))
	writeFile(t, filepath.Join(dir, "_drafts", "02-beta", "index.en.md"), lessonMD("Beta", "B draft."))
	writeFile(t, filepath.Join(dir, "_drafts", "02-beta", "images", "x.svg"), `<svg xmlns="http://www.w3.org/2000/svg"/>`)
	live, _ := startWatch(t, dir)

	if err := os.Rename(filepath.Join(dir, "_drafts", "02-beta"), filepath.Join(dir, "02-beta")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, live, "the published lesson", func(s *Snapshot) bool { return s.Course.Lesson("02-beta") != nil })
	for i, text := range []string{"B one.", "B two."} {
		v := live.Snapshot().Version
		writeFile(t, filepath.Join(dir, "02-beta", "index.en.md"), lessonMD("Beta", text))
		waitFor(t, live, fmt.Sprintf("save %d in the published lesson", i+1), func(s *Snapshot) bool {
			return s.Version > v && strings.Contains(bodyText(s.Course, "02-beta", "en"), text)
		})
	}
	v := live.Snapshot().Version
	writeFile(t, filepath.Join(dir, "02-beta", "images", "x.svg"), `<svg xmlns="http://www.w3.org/2000/svg"><g/></svg>`)
	waitFor(t, live, "the image edit in the published lesson", func(s *Snapshot) bool { return s.Version > v })

	// And back: unpublishing by moving it into _drafts, then out again.
	if err := os.Rename(filepath.Join(dir, "02-beta"), filepath.Join(dir, "_drafts", "02-beta")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, live, "the unpublished lesson", func(s *Snapshot) bool { return s.Course.Lesson("02-beta") == nil })
	if err := os.Rename(filepath.Join(dir, "_drafts", "02-beta"), filepath.Join(dir, "02-beta")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, live, "the lesson published again", func(s *Snapshot) bool { return s.Course.Lesson("02-beta") != nil })
	v = live.Snapshot().Version
	writeFile(t, filepath.Join(dir, "02-beta", "index.en.md"), lessonMD("Beta", "B three."))
	waitFor(t, live, "a save after publishing again", func(s *Snapshot) bool {
		return s.Version > v && strings.Contains(bodyText(s.Course, "02-beta", "en"), "B three.")
	})
}
