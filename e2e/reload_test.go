package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// liveLesson is a one-lesson course page whose body says body.
func liveLesson(title, body string) string {
	return "---\ntitle: " + title + "\nsummary: Live reload.\norder: 1\n---\n\n## Section\n\n" + body + "\n"
}

// TestLiveReloadInBrowser: `serve --lessons DIR` with a learner and an
// instructor on the same lesson. Saving a file reloads both pages; a broken
// save shows the instructor an overlay with file:line while the learner's
// page stays as it was; the fix clears the overlay and reloads both.
func TestLiveReloadInBrowser(t *testing.T) {
	need(t)
	flow(t)
	course := t.TempDir()
	idx := filepath.Join(course, "01-live", "index.en.md")
	write := func(content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(idx), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(idx, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(liveLesson("Live", "Version one."))
	l, err := startLab(filepath.Join(t.TempDir(), "lab"), []string{"LAB_LESSONS=" + course})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop(labStopTimeout)

	learner := newBrowser(t, l)
	learner.open("/lessons/01-live?lang=en")
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
	instr.open("/lessons/01-live?lang=en")
	for _, b := range []*browser{learner, instr} {
		b.waitFor("the reload stream", `document.documentElement.dataset.liveReload === "on"`, stepTimeout)
		b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__e2eOld = true`))
	}

	// A good edit reloads both pages with the new text.
	start := time.Now()
	write(liveLesson("Live", "Version two."))
	learner.waitFor("the learner's page to reload", `!window.__e2eOld && document.readyState === "complete" && document.body.textContent.includes("Version two.")`, stepTimeout)
	t.Logf("save → learner page reloaded with the new text in %s", time.Since(start).Round(10*time.Millisecond))
	instr.waitFor("the instructor's page to reload", `!window.__e2eOld && document.body.textContent.includes("Version two.")`, stepTimeout)

	// A broken edit: the instructor sees file:line, the learner keeps the page.
	for _, b := range []*browser{learner, instr} {
		b.waitFor("the reload stream", `document.documentElement.dataset.liveReload === "on"`, stepTimeout)
		b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__e2eOld = true`))
	}
	write("---\ntitle: Live\nsummary: Live reload.\norder: 1\n---\n\n::nosuch directive\n")
	instr.waitFor("the error overlay", `(document.querySelector("[data-testid=reload-errors]")||{}).textContent?.includes("01-live/index.en.md:7: unknown directive ::nosuch")`, stepTimeout)
	if !eval[bool](instr, `window.__e2eOld === true`) {
		t.Error("the instructor's page reloaded on a broken save")
	}
	if !eval[bool](learner, `window.__e2eOld === true && document.body.textContent.includes("Version two.")`) {
		t.Error("the learner's page changed on a broken save")
	}
	if learner.count("[data-testid=reload-errors]") != 0 {
		t.Error("the learner sees the error overlay")
	}

	// The fix: the overlay goes away and both pages show the new text.
	write(liveLesson("Live", "Version three."))
	instr.waitFor("the fixed page", `!window.__e2eOld && document.body.textContent.includes("Version three.") && !document.querySelector("[data-testid=reload-errors]")`, stepTimeout)
	learner.waitFor("the learner's fixed page", `!window.__e2eOld && document.body.textContent.includes("Version three.")`, stepTimeout)
}
