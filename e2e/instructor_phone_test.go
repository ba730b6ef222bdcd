package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestInstructorPhone: the instructor's pages on a 375 px phone, in both
// languages, never scroll sideways (wide tables scroll in their own box).
// The dashboard's row of buttons (gradebook, classes, answers, drafts,
// account, log out) wraps: it used to squeeze each zh label to one
// character a line and push "log out" off the screen.
func TestInstructorPhone(t *testing.T) {
	flow(t)
	b := newBrowser(t, shared)
	b.open("/instructor?lang=en")
	b.do("fill the login form",
		chromedp.SendKeys(chromedp.CSS(`[data-testid=instructor-login] input[name=username]`), "admin"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=instructor-login] input[name=password]`), instructorPassword))
	b.navigates("log in", chromedpClick(`[data-testid=instructor-login] button[type=submit]`))
	// A class with a roster (issue 29 item 4): its roster page is an instructor page too.
	b.open("/instructor/classes?lang=en")
	b.do("name a class", chromedp.SendKeys(chromedp.CSS(`input[name=name]`), "Phone class"))
	b.navigates("create the class", chromedpClick(`[data-testid=class-create]`))
	roster := eval[string](b, `document.querySelector('[data-testid=class] [data-testid=class-roster]').getAttribute('href')`)
	b.open(roster + "?lang=zh")
	b.do("paste a roster", chromedp.SendKeys(chromedp.CSS(`[data-testid=roster-import] textarea`), "学号,姓名\n2026001,张三\n2026002,李四\n"))
	b.navigates("import it", chromedpClick(`[data-testid=roster-submit]`))
	if n := eval[int](b, `document.querySelectorAll('[data-testid=seat]').length`); n != 2 {
		t.Fatalf("%d roster seats after the import, want 2", n)
	}
	b.do("375 px viewport", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile))
	for _, lang := range []string{"zh", "en"} {
		for _, page := range []string{"/instructor", "/instructor/gradebook", "/instructor/drafts", "/instructor/classes", roster, "/instructor/invitations", "/instructor/answers?lesson=01-why-rdma"} {
			sep := "?"
			if strings.Contains(page, "?") {
				sep = "&"
			}
			b.open(page + sep + "lang=" + lang)
			w := eval[map[string]float64](b, `({scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth})`)
			if w["scroll"] > w["client"]+1 {
				wide := eval[[]string](b, `(function(){ var describe = `+describeJS+`, cw = document.documentElement.clientWidth, out = [];
					document.querySelectorAll('body *').forEach(function(e){
						var r = e.getBoundingClientRect(); if (r.right <= cw + 1 || r.width === 0) return;
						for (var p = e.parentElement; p; p = p.parentElement) { var o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') return; }
						out.push(describe(e) + ' right=' + Math.round(r.right));
					}); return out; })()`)
				t.Errorf("%s?lang=%s at 375 px is %v px wide (scrolls sideways); too wide:\n  %s", page, lang, w["scroll"], strings.Join(limit(wide, 10), "\n  "))
			}
			if page != "/instructor" {
				continue
			}
			// Each button's label on one line: no taller than the log-out button's
			// own line box allows (a squeezed zh label is a column of characters).
			tall := eval[[]string](b, `Array.from(document.querySelectorAll('.logout .button')).filter(function(e){ var lh = parseFloat(getComputedStyle(e).lineHeight) || 20; var cs = getComputedStyle(e); return e.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom) > lh * 1.5; }).map(function(e){ return e.textContent.trim() + ' ' + e.clientHeight + 'px'; })`)
			if len(tall) > 0 {
				t.Errorf("%s?lang=%s at 375 px: header buttons wrapped inside: %q", page, lang, tall)
			}
		}
	}
}
