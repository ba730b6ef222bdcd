package web

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rdmalab/rdmalab/lessons"
)

// TestCrawlBuiltinCourse serves the real built-in course and follows every
// internal link, image, stylesheet and script from the home page, in both
// languages: every page answers 200 and every #fragment exists on its page.
func TestCrawlBuiltinCourse(t *testing.T) {
	course, err := lessons.Load(lessons.Builtin, lessons.Options{})
	if err != nil {
		t.Fatalf("built-in course: %v", err)
	}
	env := newEnv(t, course)
	for _, lang := range lessons.Langs {
		t.Run(lang, func(t *testing.T) {
			c := crawl(t, t.Errorf, env, lang)
			lessonPages := 0
			for p := range c.pages {
				if strings.HasPrefix(p, "/lessons/") && !strings.ContainsAny(strings.TrimPrefix(p, "/lessons/"), "/?") {
					lessonPages++
				}
			}
			if lessonPages != len(course.Lessons) {
				t.Errorf("crawled %d lesson pages, the course has %d lessons", lessonPages, len(course.Lessons))
			}
			ui.Missing(func(k, v string) {
				t.Errorf("UI string %q (%s) is not defined: the page shows the key", k, v)
			})
			t.Logf("%s: %d pages and assets checked, %d fragments", lang, len(c.status), len(c.fragments))
		})
	}
}

// crawl visits everything reachable from / as a learner preferring lang and
// reports every broken page, link, image or fragment through errorf.
func crawl(t *testing.T, errorf func(string, ...any), env *testEnv, lang string) *crawler {
	c := &crawler{t: t, errorf: errorf, env: env, lang: lang, pages: map[string]*goquery.Document{}, status: map[string]int{}}
	c.visit("/", "(start)")
	// Fragments are checked once every page is known.
	for _, f := range c.fragments {
		d := c.pages[f.path]
		if d == nil {
			continue // the page itself failed and was reported
		}
		if d.Find("#"+cssEscape(f.id)).Length() == 0 {
			errorf("%s links to %s#%s: no element with that id", f.from, f.path, f.id)
		}
	}
	return c
}

// The crawler must notice what it is there to notice.
func TestCrawlerFindsBrokenLinks(t *testing.T) {
	course := fixtureCourse()
	course.Lessons[0].Pages["zh"].Body = append(course.Lessons[0].Pages["zh"].Body, lessons.Segment{
		Kind: lessons.SegHTML,
		HTML: `<p><a href="#nowhere">a</a> <a href="/lessons/02-two#intro">b</a> <img src="/lessons/01-one/assets/missing.png"> <a href="/lessons/03-gone">c</a> <a href="https://example.org/x">ext</a></p>`,
	})
	env := newEnv(t, course)
	var found []string
	crawl(t, func(f string, a ...any) { found = append(found, fmt.Sprintf(f, a...)) }, env, "zh")
	want := []string{"#nowhere: no element", "missing.png: status 404", "03-gone: status 404"}
	for _, w := range want {
		ok := false
		for _, f := range found {
			ok = ok || strings.Contains(f, w)
		}
		if !ok {
			t.Errorf("crawler did not report %q; it reported %q", w, found)
		}
	}
	// Nothing else: the external link and the good fragment are fine. (A
	// problem may be reported once per URL that reaches it, e.g. ?lang=zh.)
	for _, f := range found {
		ok := false
		for _, w := range want {
			ok = ok || strings.Contains(f, w)
		}
		if !ok {
			t.Errorf("crawler reported a non-problem: %q", f)
		}
	}
}

type fragmentRef struct{ from, path, id string }

type crawler struct {
	t         *testing.T
	errorf    func(string, ...any)
	env       *testEnv
	lang      string
	pages     map[string]*goquery.Document // HTML pages by path
	status    map[string]int               // every fetched URL
	fragments []fragmentRef
}

// visit fetches path (once) as a learner whose browser prefers c.lang.
// No cookie jar: ?lang= links cannot switch the crawl's language.
func (c *crawler) visit(path, from string) {
	if _, seen := c.status[path]; seen {
		return
	}
	res := c.env.get(http.DefaultClient, path, "Accept-Language", c.lang)
	defer res.Body.Close()
	c.status[path] = res.StatusCode
	if res.StatusCode != 200 {
		c.errorf("%s → %s: status %d", from, path, res.StatusCode)
		return
	}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		io.Copy(io.Discard, res.Body)
		return
	}
	d, err := goquery.NewDocumentFromReader(res.Body)
	if err != nil {
		c.errorf("%s: %v", path, err)
		return
	}
	c.pages[path] = d
	u, _ := url.Parse(path)
	if q := u.Query().Get("lang"); q == "" {
		want := c.lang
		if want == "zh" {
			want = "zh-CN"
		}
		if got, _ := d.Find("html").Attr("lang"); got != want {
			c.errorf("%s: <html lang=%q>, want %q", path, got, want)
		}
	}
	base, _ := url.Parse("http://lab" + path)
	d.Find("a[href], link[href], img[src], script[src], form[action]").Each(func(_ int, s *goquery.Selection) {
		attr := "href"
		switch goquery.NodeName(s) {
		case "img", "script":
			attr = "src"
		case "form":
			attr = "action"
		}
		raw, _ := s.Attr(attr)
		ref, err := base.Parse(raw)
		if err != nil {
			c.errorf("%s: bad %s %q: %v", path, attr, raw, err)
			return
		}
		if ref.Host != "lab" {
			return // external: not ours to check (and no network in tests)
		}
		target := ref.EscapedPath()
		if ref.RawQuery != "" {
			target += "?" + ref.RawQuery
		}
		if ref.Fragment != "" {
			c.fragments = append(c.fragments, fragmentRef{from: path, path: target, id: ref.Fragment})
		}
		if goquery.NodeName(s) == "form" {
			return // a POST target; its page is the lesson itself
		}
		c.visit(target, path)
	})
}

// cssEscape makes an id usable in a #selector (ids from headings may hold
// characters CSS gives a meaning to).
func cssEscape(id string) string {
	var b strings.Builder
	for _, r := range id {
		if r < 0x80 && !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
