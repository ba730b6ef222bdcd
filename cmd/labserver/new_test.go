package main

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/syncbuf"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/quiz"
)

func TestNewLessonPassesCheck(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := dispatch(context.Background(), []string{"new", "lesson", "queue-pairs", "--dir", dir}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	folder := filepath.Join(dir, "01-queue-pairs")
	for _, f := range []string{"index.zh.md", "index.en.md", "quiz.yaml", "images/diagram.svg"} {
		if _, err := os.Stat(filepath.Join(folder, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	// Slug before or after the flag; the number follows the highest folder.
	if code := dispatch(context.Background(), []string{"new", "lesson", "--dir", dir, "verbs"}, &out, &errOut); code != 0 {
		t.Fatalf("second lesson: exit %d\n%s", code, errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "02-verbs", "quiz.yaml")); err != nil {
		t.Fatal(err)
	}

	// check with the real experiment registry: no findings at all, not even warnings.
	if diags := lessons.Check(os.DirFS(dir), lessonOptions()); len(diags) != 0 {
		t.Fatalf("scaffold findings: %v", diags)
	}
	var cout, cerr bytes.Buffer
	if code := runCheck(context.Background(), []string{dir}, &cout, &cerr); code != 0 {
		t.Fatalf("labserver check: exit %d\n%s%s", code, cout.String(), cerr.String())
	}

	// Every directive and every question type is in the scaffold.
	c, err := lessons.Load(os.DirFS(dir), lessonOptions())
	if err != nil {
		t.Fatal(err)
	}
	l := c.Lesson("01-queue-pairs")
	for _, lang := range lessons.Langs {
		p := l.Page(lang)
		if p.Fallback {
			t.Errorf("%s page is a fallback", lang)
		}
		kinds := map[lessons.SegmentKind]bool{}
		for _, s := range p.Body {
			kinds[s.Kind] = true
		}
		for _, k := range []lessons.SegmentKind{lessons.SegHTML, lessons.SegExperiment, lessons.SegQuiz, lessons.SegCheckpoint, lessons.SegDiagram} {
			if !kinds[k] {
				t.Errorf("%s page has no %s segment", lang, k)
			}
		}
		for _, callout := range []string{"note", "warning", "takeaway"} {
			src, _ := os.ReadFile(filepath.Join(dir, p.File))
			if !strings.Contains(string(src), ":::"+callout) {
				t.Errorf("%s page has no :::%s", lang, callout)
			}
		}
		if len(p.Objectives) == 0 || len(p.References) == 0 || p.Duration == "" {
			t.Errorf("%s front matter incomplete: %+v", lang, p)
		}
	}
	types := map[quiz.Type]bool{}
	for _, q := range l.Quiz.Questions {
		types[q.Type] = true
		if !strings.HasPrefix(q.ID, "queue-pairs/") {
			t.Errorf("question id %q not under the lesson's name", q.ID)
		}
	}
	for _, typ := range []quiz.Type{quiz.Single, quiz.Multi, quiz.Numeric, quiz.Order} {
		if !types[typ] {
			t.Errorf("no %s question", typ)
		}
	}
}

func TestNewLessonRefuses(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	run := func(args ...string) int {
		out.Reset()
		errOut.Reset()
		return dispatch(context.Background(), append([]string{"new"}, args...), &out, &errOut)
	}
	if code := run("lesson", "03-rc", "--dir", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if code := run("lesson", "03-rc", "--dir", dir); code != 1 || !strings.Contains(errOut.String(), "already exists") {
		t.Fatalf("existing folder: exit %d %q", code, errOut.String())
	}
	if code := run("lesson", "Bad Slug", "--dir", dir); code != 1 || !strings.Contains(errOut.String(), "lower-case") {
		t.Fatalf("bad slug: exit %d %q", code, errOut.String())
	}
	if code := run("lesson", "--dir", dir); code != 2 {
		t.Fatalf("no slug: exit %d", code)
	}
	if code := run("quiz", "x"); code != 2 {
		t.Fatalf("unknown kind: exit %d", code)
	}
}

// serve --lessons DIR watches the folder: an edit is served without a
// restart, the first start prints the setup link, and Close does not hang
// on an open live-reload stream.
func TestServeWatchesLessons(t *testing.T) {
	dir := t.TempDir()
	if _, err := newLesson(dir, "01-alpha"); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"LAB_ADDR": "127.0.0.1:0", "LAB_DB": filepath.Join(t.TempDir(), "lab.db"), "LAB_LESSONS": dir,
		"LAB_BACKEND": "none"} // no Soft-RoCE guest: this test is about lessons
	m := NewMain()
	out := new(syncbuf.Buffer) // the logger and the setup link write concurrently
	m.Stdout, m.Stderr = out, out
	m.Getenv = func(k string) string { return env[k] }
	if err := m.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	defer m.Close()
	base := "http://" + m.Addr()
	if !strings.Contains(out.String(), base+"/instructor/setup?token=") {
		t.Errorf("no setup link printed:\n%s", out)
	}

	// An open reload stream, as a browser tab keeps it.
	res, err := http.Get(base + "/api/reload")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	events := bufio.NewReader(res.Body)
	if line, _ := events.ReadString('\n'); line != "event: state\n" {
		t.Fatalf("first stream line %q", line)
	}

	idx := filepath.Join(dir, "01-alpha", "index.en.md")
	src, _ := os.ReadFile(idx)
	edited := strings.Replace(string(src), "Replace this text with the introduction.", "Edited while serving.", 1)
	if err := os.WriteFile(idx, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := get(t, base+"/lessons/01-alpha?lang=en")
		if strings.Contains(body, "Edited while serving.") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the edit was not served")
		}
		time.Sleep(50 * time.Millisecond)
	}

	done := make(chan error, 1)
	go func() { done <- m.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("Close hangs on the open reload stream")
	}
}
