package e2e

import (
	"testing"
)

// lesson01 is the built-in course's first lesson.
const lesson01 = "01-why-rdma"

// hasCJK is a JavaScript test for Chinese text.
const hasCJK = `/[\u4e00-\u9fff]/.test`

// TestCourseFlow: a new learner opens the course, switches language and
// theme (the theme survives a reload), reads lesson 01, marks it complete
// and sees the progress on the home page.
func TestCourseFlow(t *testing.T) {
	flow(t)
	b := newBrowser(t, shared)

	// Home: the course with lesson 01 not started yet.
	b.open("/")
	card := `[data-testid=lessons] [data-testid=lesson][data-slug="` + lesson01 + `"]`
	if n := b.count(card); n != 1 {
		t.Fatalf("home lists lesson %s %d times, want once", lesson01, n)
	}
	if s := eval[string](b, `document.querySelector('`+card+` [data-testid=status]').dataset.status`); s != "new" {
		t.Errorf("a new learner's lesson status = %q, want new", s)
	}

	// Language: the browser asks for English; switch to Chinese and back.
	if lang := eval[string](b, `document.documentElement.lang`); lang != "en" {
		t.Errorf("<html lang> with Accept-Language en = %q, want en", lang)
	}
	if eval[bool](b, hasCJK+`(document.querySelector("h1").textContent)`) {
		t.Errorf("English home heading has Chinese text: %q", b.text("h1"))
	}
	b.navigates("switch to Chinese", chromedpClick(`[data-testid=langs] a[hreflang=zh]`))
	if lang := eval[string](b, `document.documentElement.lang`); lang != "zh-CN" {
		t.Errorf("<html lang> after choosing 中文 = %q, want zh-CN", lang)
	}
	if !eval[bool](b, hasCJK+`(document.querySelector("h1").textContent)`) {
		t.Errorf("Chinese home heading has no Chinese text: %q", b.text("h1"))
	}
	// The choice is remembered (cookie): a plain reload stays Chinese.
	b.open("/")
	if lang := eval[string](b, `document.documentElement.lang`); lang != "zh-CN" {
		t.Errorf("<html lang> after reload = %q, want the remembered zh-CN", lang)
	}
	b.navigates("switch to English", chromedpClick(`[data-testid=langs] a[hreflang=en]`))
	if lang := eval[string](b, `document.documentElement.lang`); lang != "en" {
		t.Errorf("<html lang> after choosing English = %q, want en", lang)
	}

	// Theme: the toggle is shown with JavaScript, flips to dark, and the
	// choice survives a reload (localStorage, applied before first paint).
	b.waitFor("theme toggle shown", `!document.getElementById("theme-toggle").hidden`, stepTimeout)
	lightBG := eval[float64](b, luminanceJS+`(getComputedStyle(document.body).backgroundColor)`)
	if lightBG < 0.5 {
		t.Errorf("default (light) page background luminance = %.2f, want a light colour", lightBG)
	}
	b.click("#theme-toggle")
	if th := eval[string](b, `document.documentElement.dataset.theme || ""`); th != "dark" {
		t.Fatalf("theme after toggling = %q, want dark", th)
	}
	if p := eval[string](b, `document.getElementById("theme-toggle").getAttribute("aria-pressed")`); p != "true" {
		t.Errorf("theme toggle aria-pressed = %q in dark mode, want true", p)
	}
	b.open("/")
	if th := eval[string](b, `document.documentElement.dataset.theme || ""`); th != "dark" {
		t.Errorf("theme after reload = %q, want the remembered dark", th)
	}
	if bg := eval[float64](b, luminanceJS+`(getComputedStyle(document.body).backgroundColor)`); bg > 0.2 {
		t.Errorf("dark page background luminance = %.2f after reload, want a dark colour", bg)
	}
	b.click("#theme-toggle") // back to light for the rest
	if th := eval[string](b, `document.documentElement.dataset.theme || ""`); th != "light" {
		t.Errorf("theme after toggling back = %q, want light", th)
	}

	// Read lesson 01: title, objectives, a table of contents whose links
	// all land on a heading, the TCP vs RDMA diagram and the references.
	b.navigates("open lesson 01 from home", chromedpClick(card+` h2 a`))
	if slug := eval[string](b, `(document.querySelector("[data-testid=lesson]")||{dataset:{}}).dataset.slug || ""`); slug != lesson01 {
		t.Fatalf("lesson page slug = %q, want %s", slug, lesson01)
	}
	if h := b.text("article h1"); h == "" {
		t.Error("lesson 01 has an empty title")
	}
	if n := b.count("[data-testid=objectives] li"); n < 3 {
		t.Errorf("lesson 01 lists %d objectives, want at least 3", n)
	}
	tocBroken := eval[[]string](b, `Array.from(document.querySelectorAll("[data-testid=toc] a")).map(a => a.getAttribute("href")).filter(h => !document.getElementById(decodeURIComponent(h.slice(1))))`)
	if n := b.count("[data-testid=toc] a"); n < 8 || len(tocBroken) > 0 {
		t.Errorf("table of contents: %d links, broken %v", n, tocBroken)
	}
	if n := b.count(`figure[data-diagram="tcp-vs-rdma"] [data-step]`); n < 10 {
		t.Errorf("TCP vs RDMA diagram has %d steps, want both paths", n)
	}
	// Further reading: the author's own section, plus a references box
	// holding only what that section does not link already.
	if n := b.count("[data-testid=references] a[href^=http], h2#further-reading + ul a[href^=http]"); n < 2 {
		t.Errorf("lesson 01 has %d further-reading links, want at least 2", n)
	}
	if dup := eval[[]string](b, `(function(){var seen={},d=[];document.querySelectorAll("[data-testid=references] a[href^=http], h2#further-reading + ul a[href^=http]").forEach(function(a){if(seen[a.href])d.push(a.href);seen[a.href]=1});return d})()`); len(dup) > 0 {
		t.Errorf("further reading lists %v twice", dup)
	}
	b.do("follow a TOC link", chromedpClick(`[data-testid=toc] a[href="#costs"]`))
	if h := eval[string](b, `location.hash`); h != "#costs" {
		t.Errorf("after the TOC link location.hash = %q, want #costs", h)
	}

	// Home now says "in progress"; completing the lesson says "completed".
	b.navigates("home via the brand link", chromedpClick(`[data-testid=brand]`))
	if s := eval[string](b, `document.querySelector('`+card+` [data-testid=status]').dataset.status`); s != "opened" {
		t.Errorf("status after reading = %q, want opened", s)
	}
	b.open("/lessons/" + lesson01)
	b.navigates("mark complete", chromedpClick(`[data-testid=complete] button[type=submit]`))
	if n := b.count("[data-testid=completed]"); n != 1 {
		t.Fatalf("after marking complete the lesson shows %d completion notes, want 1", n)
	}
	b.navigates("home via the brand link", chromedpClick(`[data-testid=brand]`))
	if s := eval[string](b, `document.querySelector('`+card+` [data-testid=status]').dataset.status`); s != "completed" {
		t.Errorf("home status after completing = %q, want completed", s)
	}
	if !eval[bool](b, `document.querySelector('`+card+`').classList.contains("done")`) {
		t.Error("home card of a completed lesson is not marked done")
	}
}
