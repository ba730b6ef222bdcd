package web

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rdmalab/rdmalab/lessons"
)

// hostileLesson is an instructor's lesson written to attack its readers:
// raw HTML blocks and inline tags, event handlers, javascript: and data:
// links, markup in front matter and in quiz texts. Lessons do not render
// raw HTML (there is no flag to allow it), so none of it may reach the
// page as markup.
const hostileLesson = `---
title: "Evil <script>alert('title')</script> lesson"
summary: "<img src=x onerror=alert('summary')>"
order: 1
objectives:
  - "<b onmouseover=alert('objective')>hover</b>"
---

Intro <img src=x onerror="alert('inline')"> and <a href="javascript:alert('a')">a tag</a>.

<script>alert('block')</script>

<iframe src="https://evil.example/"></iframe>

<div onclick="alert('div')">click</div>

<style>body{display:none}</style>

[markdown js link](javascript:alert('md'))
[markdown vbscript link](vbscript:msgbox('md'))
[markdown data link](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)
![markdown js image](javascript:alert('img'))

<https://example.com/"onmouseover="alert('autolink')>

## Heading <script>alert('heading')</script> {#evil}

` + "```html\n<script>alert('code is text')</script>\n```" + `

::quiz evil/one
`

const hostileQuiz = `questions:
  - id: evil/one
    type: single
    prompt: {zh: "<script>alert('prompt')</script>选", en: "<img src=x onerror=alert('prompt')> pick"}
    options:
      - id: a
        correct: true
        text: {zh: "<b onclick=alert(1)>甲</b>", en: "<b onclick=alert(1)>A</b>"}
        feedback: {zh: "[x](javascript:alert('fb'))", en: "[x](javascript:alert('fb'))"}
      - id: b
        text: {zh: "乙", en: "B"}
        feedback: {zh: "错", en: "Wrong"}
    explanation: {zh: "<iframe src=//evil.example></iframe>", en: "<iframe src=//evil.example></iframe>"}
`

func TestHostileLessonRendersNoMarkup(t *testing.T) {
	dir := t.TempDir()
	lesson := filepath.Join(dir, "01-evil")
	if err := os.MkdirAll(lesson, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"index.en.md": hostileLesson,
		"index.zh.md": hostileLesson,
		"quiz.yaml":   hostileQuiz,
	} {
		if err := os.WriteFile(filepath.Join(lesson, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	course, err := lessons.Load(os.DirFS(dir), lessons.Options{})
	if err != nil {
		t.Fatalf("the hostile lesson should load (with warnings): %v", err)
	}
	warned := false
	for _, d := range course.Warnings {
		warned = warned || strings.Contains(d.Message, "raw HTML")
	}
	if !warned {
		t.Errorf("no raw-HTML warning for the author: %v", course.Warnings)
	}
	env := newEnv(t, course)

	for _, path := range []string{"/lessons/01-evil?lang=en", "/lessons/01-evil?lang=zh", "/?lang=en"} {
		res := env.get(env.client(), path)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, res.StatusCode)
		}
		checkNoInjectedMarkup(t, path, string(body))
	}

	// The quiz answer comes back as HTML too (quiz.js swaps it in).
	c := env.client()
	env.get(c, "/lessons/01-evil").Body.Close()
	req, _ := http.NewRequest("POST", env.HTTP.URL+"/api/quiz/evil/one/attempts?lang=en", strings.NewReader(`{"answer":"b"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("attempt: %d %s", res.StatusCode, b)
	}
	// Decoded JSON: the html field as a browser would insert it.
	var ans struct {
		HTML string `json:"html"`
	}
	if err := json.Unmarshal(b, &ans); err != nil || ans.HTML == "" {
		t.Fatalf("no html in attempt answer: %v %s", err, b)
	}
	checkNoInjectedMarkup(t, "attempt html", "<html><body>"+ans.HTML+"</body></html>")
}

// checkNoInjectedMarkup fails if the page holds anything the hostile
// lesson tried to inject: a script that is not one of ours, an event
// handler attribute, an iframe/object/embed/style element, or a URL with a
// script scheme.
func checkNoInjectedMarkup(t *testing.T, where, page string) {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	doc.Find("script").Each(func(_ int, s *goquery.Selection) {
		src, hasSrc := s.Attr("src")
		if strings.Contains(s.Text(), "alert(") || (hasSrc && !strings.HasPrefix(src, staticPrefix)) {
			t.Errorf("%s: injected script %q src=%q", where, s.Text(), src)
		}
	})
	doc.Find("iframe, object, embed, frame, base, meta[http-equiv]").Each(func(_ int, s *goquery.Selection) {
		t.Errorf("%s: injected <%s>", where, goquery.NodeName(s))
	})
	doc.Find("style").Each(func(_ int, s *goquery.Selection) {
		if strings.Contains(s.Text(), "display:none") {
			t.Errorf("%s: injected <style>", where)
		}
	})
	doc.Find("*").Each(func(_ int, s *goquery.Selection) {
		for _, a := range s.Nodes[0].Attr {
			key := strings.ToLower(a.Key)
			val := strings.ToLower(strings.TrimSpace(a.Val))
			if strings.HasPrefix(key, "on") {
				t.Errorf("%s: event handler %s=%q on <%s>", where, a.Key, a.Val, goquery.NodeName(s))
			}
			switch key {
			case "href", "src", "action", "formaction", "xlink:href", "data":
				if strings.HasPrefix(val, "javascript:") || strings.HasPrefix(val, "vbscript:") || strings.HasPrefix(val, "data:text/html") {
					t.Errorf("%s: script URL %s=%q on <%s>", where, a.Key, a.Val, goquery.NodeName(s))
				}
			}
		}
	})
}
