package e2e

import (
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
)

// TestChinesePages: the Chinese pages a learner reads besides the
// experiments' output — home, every lesson, the run history and the lab
// page — hold no Western punctuation in a Chinese sentence and no English
// label word (zhcheck.Leaks; issue 30 item 8: "时长: 50 分钟", captions ending
// "ms.", "(index 1)"). Code, raw output and quotations are not read.
func TestChinesePages(t *testing.T) {
	flow(t)
	b := newBrowser(t, shared)
	b.open("/?lang=zh")
	slugs := eval[[]string](b, `Array.prototype.map.call(document.querySelectorAll("[data-testid=lessons] [data-testid=lesson]"), function (e) { return e.dataset.slug; })`)
	if len(slugs) < 5 {
		t.Fatalf("home lists %d lessons", len(slugs))
	}
	pages := []string{"/?lang=zh", "/runs?lang=zh", "/lab?lang=zh"}
	for _, s := range slugs {
		pages = append(pages, "/lessons/"+s+"?lang=zh")
	}
	for _, p := range pages {
		b.open(p)
		// diagrams and animations caption what they show: every step's
		// caption is read, not only the first
		var bad []string
		for _, s := range append(eval[[]string](b, pageTextJS), eval[[]string](b, captionsJS)...) {
			if strings.HasPrefix(s, "$ ") {
				continue
			}
			bad = append(bad, zhcheck.Leaks(s)...)
		}
		if len(bad) > 0 {
			t.Errorf("%s shows Western punctuation or English labels:\n  %s", p, strings.Join(limit(uniq(bad), 30), "\n  "))
		}
	}
	t.Logf("read %d Chinese pages", len(pages))
}

// pageTextJS is visibleTextJS without the program editor (C code) and the
// titles of the documents a lesson cites (links out: an English paper is
// cited by its English title).
var pageTextJS = strings.Replace(visibleTextJS, `.exp-id";`, `.exp-id, .cm-editor, a[href^=http]";`, 1)

// captionsJS is the text of the page's diagram captions and step
// descriptions kept in data attributes (shown one at a time).
const captionsJS = `(function(){ var out = [];
  document.querySelectorAll("[data-caption], [data-captions]").forEach(function (e) {
    var c = e.dataset.caption || e.dataset.captions; if (c) out.push(c);
  }); return out; })()`
