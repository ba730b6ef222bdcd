package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestLiveReloadKeepsAnswers: an edit of another lesson does not reload
// the learner's page; an edit of this lesson while the learner has chosen
// an answer but not submitted it offers a reload instead of wiping the
// choice; with nothing typed, an edit reloads the page as before.
func TestLiveReloadKeepsAnswers(t *testing.T) {
	need(t)
	flow(t)
	course := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(course, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	page := func(title, body string, order string) string {
		return "---\ntitle: " + title + "\nsummary: Live reload.\norder: " + order + "\n---\n\n" + body + "\n"
	}
	write("01-live/index.en.md", page("Live", "Version one.\n\n::checkpoint", "1"))
	write("01-live/quiz.yaml", `questions:
  - id: live/pick
    type: single
    prompt: {zh: 选, en: Pick}
    options:
      - {id: a, correct: true, text: {zh: 甲, en: Alpha}}
      - {id: b, text: {zh: 乙, en: Beta}}
    explanation: {zh: 甲。, en: Alpha.}
`)
	write("02-other/index.en.md", page("Other", "Other one.", "2"))
	l, err := startLab(filepath.Join(t.TempDir(), "lab"), []string{"LAB_LESSONS=" + course})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop(labStopTimeout)

	b := newBrowser(t, l)
	b.open("/lessons/01-live?lang=en")
	b.waitFor("the reload stream", `document.documentElement.dataset.liveReload === "on"`, stepTimeout)
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__e2eOld = true`))

	// Another lesson changes, then this one while an answer is chosen.
	write("02-other/index.en.md", page("Other", "Other two.", "2"))
	b.click(`main form input[type=radio]`)
	write("01-live/index.en.md", page("Live", "Version two.\n\n::checkpoint", "1"))
	b.waitFor("the reload offer", `!!document.querySelector("[data-testid=reload-offer]")`, stepTimeout)
	if !eval[bool](b, `window.__e2eOld === true && !!document.querySelector("main form input[type=radio]:checked")`) {
		t.Fatal("the page reloaded (or lost the chosen answer) under the learner")
	}
	b.navigates("reload now", chromedpClick(`[data-testid=reload-offer] button`))
	if !eval[bool](b, `document.body.textContent.includes("Version two.")`) {
		t.Error("the offered reload did not show the new version")
	}

	// Nothing chosen: an edit of this lesson reloads the page by itself.
	b.waitFor("the reload stream", `document.documentElement.dataset.liveReload === "on"`, stepTimeout)
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__e2eOld = true`))
	write("01-live/index.en.md", page("Live", "Version three.\n\n::checkpoint", "1"))
	b.waitFor("the page to reload", `!window.__e2eOld && document.readyState === "complete" && document.body.textContent.includes("Version three.")`, stepTimeout)
}
