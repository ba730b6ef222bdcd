package e2e

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDraftPreviewInBrowser: a course with a lesson in _drafts/. A learner
// gets the 404 page at the draft's URL; the instructor finds it under
// Drafts on the dashboard, previews it (banner, its image loaded, its
// question shown but not answerable), and the preview reloads when the
// draft is saved.
func TestDraftPreviewInBrowser(t *testing.T) {
	need(t)
	flow(t)
	course := t.TempDir()
	write := func(name string, data []byte) {
		t.Helper()
		p := filepath.Join(course, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	draft := func(body string) []byte {
		return []byte("---\ntitle: Coming soon\nsummary: A draft.\norder: 2\nprerequisites: [01-live]\n---\n\n" + body +
			"\n\n![a square](square.png)\n\n::quiz soon/pick\n")
	}
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for i := range img.Pix {
		img.Pix[i] = 0x80
	}
	img.Set(0, 0, color.Black)
	var sq bytes.Buffer
	if err := png.Encode(&sq, img); err != nil {
		t.Fatal(err)
	}
	write("01-live/index.en.md", []byte(liveLesson("Live", "The course.")))
	write("_drafts/02-soon/square.png", sq.Bytes())
	write("_drafts/02-soon/quiz.yaml", []byte(`questions:
  - id: soon/pick
    type: single
    prompt: {zh: 选一个, en: Pick one}
    options:
      - {id: a, correct: true, text: {zh: 甲, en: Option A}}
      - {id: b, text: {zh: 乙, en: Option B}}
    explanation: {zh: 因为甲。, en: Because A.}
`))
	write("_drafts/02-soon/index.en.md", draft("Draft text one."))
	write("_drafts/02-soon/index.zh.md", draft("草稿第一版。"))
	l, err := startLab(filepath.Join(t.TempDir(), "lab"), []string{"LAB_LESSONS=" + course})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop(labStopTimeout)

	learner := newBrowser(t, l)
	learner.open("/lessons/02-soon?lang=en")
	if st := eval[string](learner, `(document.querySelector("[data-testid=error]")||{dataset:{}}).dataset.status || ""`); st != "404" {
		t.Errorf("a learner at the draft's URL sees error page %q, want 404", st)
	}
	learner.open("/?lang=en")
	if eval[bool](learner, `document.body.textContent.includes("Coming soon")`) {
		t.Error("the home page lists the draft")
	}

	instr := newBrowser(t, l)
	instr.open("/instructor/login?lang=en")
	instr.do("fill the login form",
		chromedp.SendKeys(chromedp.CSS(`[data-testid=instructor-login] input[name=username]`), "admin"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=instructor-login] input[name=password]`), instructorPassword),
	)
	instr.navigates("log in", chromedp.Click(chromedp.CSS(`[data-testid=instructor-login] button[type=submit]`)))
	if instr.count("[data-testid=dashboard]") != 1 {
		t.Fatal("instructor login failed")
	}
	instr.navigates("open Drafts", chromedpClick(`[data-testid=drafts-link]`))
	if instr.count(`[data-testid=draft][data-slug="02-soon"] [data-testid=draft-clean]`) != 1 {
		t.Fatalf("the drafts page does not list 02-soon as clean:\n%s", instr.text("main"))
	}
	instr.navigates("open the draft", chromedpClick(`[data-testid=draft][data-slug="02-soon"] [data-testid=draft-link]`))
	if got := instr.text("[data-testid=draft-banner]"); !bytes.Contains([]byte(got), []byte("Draft preview")) {
		t.Errorf("banner %q", got)
	}
	instr.waitFor("the draft's image", `(() => { const i = document.querySelector("[data-testid=body] img"); return i && i.complete && i.naturalWidth === 8 })()`, stepTimeout)
	if !eval[bool](instr, `document.querySelector("[data-testid=quiz] button[type=submit]").disabled && document.querySelector("[data-testid=quiz] fieldset").disabled`) {
		t.Error("the draft's question can be answered")
	}
	if instr.count("[data-testid=quiz-preview]") != 1 {
		t.Error("the draft's question has no preview note")
	}
	// The language switch stays on the preview.
	instr.navigates("switch to Chinese", chromedpClick(`a[href$="?lang=zh"]`))
	if p := eval[string](instr, `location.pathname`); p != "/instructor/drafts/02-soon" {
		t.Errorf("the language switch led to %s", p)
	}
	if got := instr.text("[data-testid=draft-banner]"); !bytes.Contains([]byte(got), []byte("草稿预览")) {
		t.Errorf("zh banner %q", got)
	}

	// Saving the draft reloads the preview.
	instr.waitFor("the reload stream", `document.documentElement.dataset.liveReload === "on"`, stepTimeout)
	instr.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__e2eOld = true`))
	write("_drafts/02-soon/index.en.md", draft("Draft text two."))
	write("_drafts/02-soon/index.zh.md", draft("草稿第二版。"))
	instr.waitFor("the preview to reload", `!window.__e2eOld && document.body.textContent.includes("草稿第二版。")`, stepTimeout)
}
