package web

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/store"
)

const draftQuiz = `questions:
  - id: draft/q1
    type: single
    prompt: {zh: 草稿题, en: A draft question}
    options:
      - id: a
        correct: true
        text: {zh: 甲, en: Option A}
      - id: b
        text: {zh: 乙, en: Option B}
    explanation: {zh: 因为甲。, en: Because A.}
`

// pngBytes is a file the asset handler serves as an image.
const pngBytes = "\x89PNG\r\n\x1a\nnot really an image"

// writeDrafts adds two drafts to e's course: 06-draft (clean: requires the
// course's lesson, shows an image and a question) and 07-bad (an unknown
// question id), and waits until a reload has loaded both (instr is an
// instructor's client: only instructors' pages reload for a draft).
func writeDrafts(t *testing.T, e *instrEnv, instr *http.Client) {
	t.Helper()
	ls := e.openReload(instr)
	nextEvent(t, ls, "state")
	nextEvent(t, ls, "errors")
	draft := func(title, body string) string {
		return "---\ntitle: " + title + "\nsummary: A draft.\norder: 6\nprerequisites: [01-alpha]\n---\n\n" + body + "\n"
	}
	dir := filepath.Join(e.Dir, "_drafts")
	writeTestFile(t, filepath.Join(dir, "06-draft", "diagram.png"), pngBytes)
	writeTestFile(t, filepath.Join(dir, "06-draft", "quiz.yaml"), draftQuiz)
	const task = "\n\n::terminal\n\n:::task raise tasks/check.sh\nRaise the limit.\n:::"
	writeTestFile(t, filepath.Join(dir, "06-draft", "tasks", "check.sh"), "#!/bin/sh\nexit 0\n")
	writeTestFile(t, filepath.Join(dir, "06-draft", "index.zh.md"), draft("草稿课", "草稿正文。\n\n![图](diagram.png)\n\n::quiz draft/q1"+task))
	writeTestFile(t, filepath.Join(dir, "06-draft", "index.en.md"), draft("Draft lesson", "Draft body.\n\n![diagram](diagram.png)\n\n::quiz draft/q1\n\n::diagram tcp-vs-rdma\n\n::experiment memlock"+task))
	writeTestFile(t, filepath.Join(dir, "07-bad", "index.en.md"), draft("Bad draft", "::quiz nope/q"))
	for {
		c := e.Live.Course()
		if d := c.Drafts; d != nil && d.Lesson("06-draft") != nil && d.Lesson("07-bad") != nil &&
			len(d.Lesson("06-draft").Pages["zh"].Body) > 1 && d.Questions["draft/q1"] != nil {
			return
		}
		nextEvent(t, ls, "reload with the drafts")
	}
}

// TestDraftPreview: instructors list and preview drafts (both languages,
// the draft's image, its question shown but not answerable); learners get
// 404 or the login's 403, and nothing of a draft is recorded or listed.
func TestDraftPreview(t *testing.T) {
	e := newInstrEnv(t)
	learner := e.browser()
	e.page(e.do(learner, "GET", "/lessons/01-alpha", nil), http.StatusOK) // gets a learner cookie
	instr := e.instructor("ada", "correct horse battery")
	writeDrafts(t, e, instr)
	if errs := e.Live.Snapshot().Errors; len(errs) != 0 {
		t.Fatalf("a draft's errors reached the course: %v", errs)
	}

	// Learners: no draft anywhere.
	for _, p := range []string{"/lessons/06-draft", "/lessons/07-bad", "/lessons/06-draft/assets/diagram.png"} {
		res := e.do(learner, "GET", p, nil)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("learner GET %s: %d, want 404", p, res.StatusCode)
		}
	}
	for _, p := range []string{"/instructor/drafts", "/instructor/drafts/06-draft", "/instructor/drafts/06-draft/assets/diagram.png"} {
		res := e.do(learner, "GET", p, nil)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden || strings.Contains(string(b), "Draft body") || strings.Contains(string(b), "not really") {
			t.Errorf("learner GET %s: %d, want 403 without the draft", p, res.StatusCode)
		}
	}
	home := e.page(e.do(learner, "GET", "/?lang=en", nil), http.StatusOK)
	if h, _ := home.Html(); strings.Contains(h, "06-draft") || strings.Contains(h, "Draft lesson") {
		t.Error("the home page lists a draft")
	}
	e.page(e.do(learner, "GET", "/lessons/01-alpha", nil), http.StatusOK) // the course is served as before

	// The instructor: the nav, the list with findings.
	dash := e.page(e.do(instr, "GET", "/instructor?lang=en", nil), http.StatusOK)
	if href, _ := dash.Find(`[data-testid=drafts-link]`).Attr("href"); href != "/instructor/drafts" {
		t.Errorf("dashboard drafts link %q", href)
	}
	list := e.page(e.do(instr, "GET", "/instructor/drafts?lang=en", nil), http.StatusOK)
	good := list.Find(`[data-testid=draft][data-slug="06-draft"]`)
	if href, _ := good.Find(`[data-testid=draft-link]`).Attr("href"); href != "/instructor/drafts/06-draft" || good.Find(`[data-testid=draft-clean]`).Length() != 1 {
		t.Errorf("clean draft entry: href %q\n%s", href, good.Text())
	}
	bad := list.Find(`[data-testid=draft][data-slug="07-bad"] [data-testid=draft-findings]`)
	if n, _ := bad.Attr("data-errors"); n != "1" || !strings.Contains(bad.Text(), "_drafts/07-bad/index.en.md:8: ::quiz nope/q") {
		t.Errorf("bad draft findings (%s errors):\n%s", n, bad.Text())
	}
	zhList := e.page(e.do(instr, "GET", "/instructor/drafts?lang=zh", nil), http.StatusOK)
	if !strings.Contains(zhList.Find("h1").Text(), "草稿课程") {
		t.Errorf("zh list title %q", zhList.Find("h1").Text())
	}

	// The preview in both languages.
	for _, tc := range []struct{ lang, banner, title, body, note string }{
		{"zh", "草稿预览", "草稿课", "草稿正文。", "不能在草稿里作答"},
		{"en", "Draft preview", "Draft lesson", "Draft body.", "cannot be answered in a draft"},
	} {
		doc := e.page(e.do(instr, "GET", "/instructor/drafts/06-draft?lang="+tc.lang, nil), http.StatusOK)
		if got := doc.Find(`[data-testid=draft-banner]`).Text(); !strings.Contains(got, tc.banner) {
			t.Errorf("%s banner %q", tc.lang, got)
		}
		if doc.Find(`[data-testid=draft-banner-errors]`).Length() != 0 {
			t.Errorf("%s: the clean draft's banner links to errors", tc.lang)
		}
		if got := doc.Find("h1").Text(); got != tc.title || !strings.Contains(doc.Find(`[data-testid=body]`).Text(), tc.body) {
			t.Errorf("%s page: title %q body %q", tc.lang, got, doc.Find(`[data-testid=body]`).Text())
		}
		src, _ := doc.Find(`[data-testid=body] img`).Attr("src")
		if src != "/instructor/drafts/06-draft/assets/diagram.png" {
			t.Errorf("%s image src %q", tc.lang, src)
		}
		q := doc.Find(`[data-testid=quiz][data-question="draft/q1"]`)
		if q.Length() != 1 || q.Find(`fieldset[disabled]`).Length() != 1 || q.Find(`button[type=submit]:not([disabled])`).Length() != 0 ||
			!strings.Contains(q.Find(`[data-testid=quiz-preview]`).Text(), tc.note) {
			h, _ := q.Html()
			t.Errorf("%s: the draft's question is not shown disabled with the note:\n%s", tc.lang, h)
		}
		if doc.Find(`[data-testid=task-check][disabled]`).Length() != 1 || !strings.Contains(doc.Find(`[data-testid=task-preview]`).Text(), map[string]string{"zh": "不能检查", "en": "cannot be checked"}[tc.lang]) {
			h, _ := doc.Find(`[data-testid=task]`).Html()
			t.Errorf("%s: the draft's task can be checked:\n%s", tc.lang, h)
		}
		if doc.Find(`[data-testid=complete] form`).Length() != 0 || doc.Find(`[data-testid=draft-complete]`).Length() != 1 {
			t.Errorf("%s: the completion box of a draft must be the preview note", tc.lang)
		}
		if href, _ := doc.Find(`[data-testid=prereqs] a`).Attr("href"); href != "/lessons/01-alpha" {
			t.Errorf("%s prerequisite link %q", tc.lang, href)
		}
		other := map[string]string{"zh": "en", "en": "zh"}[tc.lang]
		if href, ok := doc.Find(`a[href$="?lang=` + other + `"]`).First().Attr("href"); !ok || href != "/instructor/drafts/06-draft?lang="+other {
			t.Errorf("%s language switch %q", tc.lang, href)
		}
	}
	// Diagrams and experiment widgets render as on a lesson page.
	en := e.page(e.do(instr, "GET", "/instructor/drafts/06-draft?lang=en", nil), http.StatusOK)
	if en.Find(`[data-testid=body] svg`).Length() == 0 || en.Find(`[data-testid=experiment][data-experiment="memlock"], [data-testid=experiment]`).Length() != 1 {
		h, _ := en.Find(`[data-testid=body]`).Html()
		t.Errorf("the draft's diagram or experiment widget is missing:\n%s", h)
	}
	res := e.do(instr, "GET", "/instructor/drafts/06-draft/assets/diagram.png", nil)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(b) != pngBytes || res.Header.Get("Content-Type") != "image/png" {
		t.Errorf("draft asset: %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	for _, p := range []string{"/instructor/drafts/06-draft/assets/quiz.yaml", "/instructor/drafts/01-alpha", "/instructor/drafts/nope"} {
		res := e.do(instr, "GET", p, nil)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("instructor GET %s: %d, want 404", p, res.StatusCode)
		}
	}
	// A draft with errors still previews, its banner pointing at them.
	badDoc := e.page(e.do(instr, "GET", "/instructor/drafts/07-bad?lang=en", nil), http.StatusOK)
	if badDoc.Find(`[data-testid=draft-banner-errors]`).Length() != 1 {
		t.Error("the broken draft's banner does not point at its errors")
	}

	// Nothing recorded: a draft question cannot be answered through the
	// API, and no learner has progress on a draft.
	res, err := learner.Post(e.HTTP.URL+attemptsPath("draft/q1"), "application/json", strings.NewReader(`{"answer":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("answering a draft's question: %d, want 404", res.StatusCode)
	}
	id := learnerOf(t, learner, e.HTTP.URL)
	var prog map[string]store.Progress
	prog, err = e.DB.LearnerProgress(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for slug := range prog {
		if strings.HasPrefix(slug, "06") || strings.HasPrefix(slug, "07") {
			t.Errorf("progress recorded on draft %s", slug)
		}
	}
}

// TestDraftSaveReloadsNoLearner: saving a draft reloads instructors' pages
// (the preview among them) but sends learners no reload; the learner's
// next reload is the next change to the course itself.
func TestDraftSaveReloadsNoLearner(t *testing.T) {
	e := newInstrEnv(t)
	learner := e.browser()
	instr := e.instructor("ada", "correct horse battery")
	ls, is := e.openReload(learner), e.openReload(instr)
	nextEvent(t, ls, "learner state")
	nextEvent(t, is, "instructor state")
	nextEvent(t, is, "instructor errors")

	writeTestFile(t, filepath.Join(e.Dir, "_drafts", "06-draft", "index.en.md"),
		"---\ntitle: Draft lesson\nsummary: A draft.\norder: 6\n---\n\nDraft body.\n")
	for {
		if ev := nextEvent(t, is, "instructor reload for the draft"); ev.Event != "reload" {
			t.Fatalf("instructor got %+v", ev)
		}
		if d := e.Live.Course().Drafts; d != nil && d.Lesson("06-draft") != nil {
			break
		}
	}
	writeTestFile(t, filepath.Join(e.Dir, "01-alpha", "index.en.md"), alphaPage("en", "Alpha", "Second version."))
	for !strings.Contains(e.lessonBody(learner), "Second version.") {
		nextEvent(t, is, "instructor reload for the lesson")
	}
	// A draft-only reload would carry the old lesson hashes.
	ev := nextEvent(t, ls, "learner reload")
	if _, hashes, _ := strings.Cut(ev.Data, " "); ev.Event != "reload" || hashes != lessonHashes(e.Live.Snapshot()) {
		t.Fatalf("the learner's first event after the draft was saved is %+v, want the lesson's reload (hashes %s)", ev, lessonHashes(e.Live.Snapshot()))
	}
}
