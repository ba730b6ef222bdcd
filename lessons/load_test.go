package lessons

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden")

// dumpPage writes a page the way the golden files hold it: metadata, TOC,
// then each segment (HTML verbatim, directives as one bracketed line).
func dumpPage(p *Page) string {
	var b strings.Builder
	fmt.Fprintf(&b, "lang=%s source=%s fallback=%v file=%s\n", p.Lang, p.SourceLang, p.Fallback, p.File)
	fmt.Fprintf(&b, "title=%q summary=%q order=%d duration=%q\n", p.Title, p.Summary, p.Order, p.Duration)
	fmt.Fprintf(&b, "objectives=%q prerequisites=%q\n", p.Objectives, p.Prerequisites)
	for _, r := range p.References {
		fmt.Fprintf(&b, "reference %q %s\n", r.Title, r.URL)
	}
	for _, h := range p.TOC {
		fmt.Fprintf(&b, "toc h%d #%s %q\n", h.Level, h.ID, h.Text)
	}
	fmt.Fprintf(&b, "questions=%q\n", p.QuestionIDs)
	for _, s := range p.Body {
		switch s.Kind {
		case SegHTML:
			fmt.Fprintf(&b, "--- html\n%s", s.HTML)
		case SegDiagram:
			// The drawing itself is tested in diagram_test.go; here only its placement.
			fmt.Fprintf(&b, "--- diagram %s line=%d figure=%v\n", s.ID, s.Line, strings.HasPrefix(string(s.HTML), "<figure"))
		default:
			keys := make([]string, 0, len(s.Params))
			for k := range s.Params {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var ps []string
			for _, k := range keys {
				ps = append(ps, k+"="+s.Params[k])
			}
			if s.Kind == SegCheckpoint {
				ps = append(ps, fmt.Sprintf("questions=%q", s.Questions))
			}
			fmt.Fprintf(&b, "--- %s %s line=%d %s\n", s.Kind, s.ID, s.Line, strings.Join(ps, " "))
		}
	}
	return b.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if string(want) != got {
		t.Errorf("%s differs from the rendering (go test -update rewrites it):\n%s", file, diffLines(string(want), got))
	}
}

// diffLines shows the first differing lines, enough to see what changed.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d\nwant: %s\n got: %s", i+1, a, b)
		}
	}
	return "(same lines, different line endings)"
}

func TestLoadFixtureGolden(t *testing.T) {
	c, err := Load(os.DirFS("testdata/course"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var slugs []string
	for _, l := range c.Lessons {
		slugs = append(slugs, l.Slug)
		for _, lang := range Langs {
			golden(t, l.Slug+"."+lang+".golden", dumpPage(l.Page(lang)))
		}
	}
	if got := strings.Join(slugs, " "); got != "01-basics 02-next" {
		t.Errorf("lessons = %s", got)
	}
	var warns []string
	for _, w := range c.Warnings {
		warns = append(warns, w.String())
	}
	golden(t, "fixture.warnings.golden", strings.Join(warns, "\n")+"\n")
	if len(c.Questions) != 2 || c.Questions["basics/two"] == nil {
		t.Errorf("questions = %v", c.Questions)
	}
}

func TestPageFallbackAndNeighbours(t *testing.T) {
	c, err := Load(os.DirFS("testdata/course"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	next := c.Lesson("02-next")
	if next == nil || c.Lesson("nope") != nil {
		t.Fatal("Lesson lookup broken")
	}
	zh := next.Page("zh")
	if !zh.Fallback || zh.Lang != "zh" || zh.SourceLang != "en" || zh.Title != "Next" {
		t.Errorf("zh page of an en-only lesson = %+v", zh)
	}
	if en := next.Page("en"); en.Fallback || en.Lang != "en" {
		t.Errorf("en page = lang %s fallback %v", en.Lang, en.Fallback)
	}
	if p := c.Lesson("01-basics").Page("fr"); p == nil || p.Lang != "zh" {
		t.Errorf("unknown language should give the default language page, got %+v", p)
	}
	prev, nxt := c.Neighbours("01-basics")
	if prev != nil || nxt == nil || nxt.Slug != "02-next" {
		t.Errorf("Neighbours(01-basics) = %v, %v", prev, nxt)
	}
	prev, nxt = c.Neighbours("02-next")
	if prev == nil || prev.Slug != "01-basics" || nxt != nil {
		t.Errorf("Neighbours(02-next) = %v, %v", prev, nxt)
	}
	if p, n := c.Neighbours("nope"); p != nil || n != nil {
		t.Error("Neighbours of an unknown slug should be nil, nil")
	}
}

func TestOpenAsset(t *testing.T) {
	c, err := Load(os.DirFS("testdata/course"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.OpenAsset("01-basics", "images/pic.svg")
	if err != nil {
		t.Fatalf("OpenAsset of a real image: %v", err)
	}
	f.Close()
	for _, bad := range [][2]string{
		{"01-basics", "quiz.yaml"},   // holds the answers
		{"01-basics", "index.en.md"}, // source, not an asset
		{"01-basics", "../02-next/x.png"},
		{"01-basics", "/etc/passwd.png"},
		{"01-basics", "images/missing.svg"},
		{"99-nope", "images/pic.svg"},
	} {
		if f, err := c.OpenAsset(bad[0], bad[1]); err == nil {
			f.Close()
			t.Errorf("OpenAsset(%q, %q) should fail", bad[0], bad[1])
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("OpenAsset(%q, %q) = %v, want a not-exist error (404)", bad[0], bad[1], err)
		}
	}
}

// TestCheckExperimentOption: the loader hands every ::experiment to the
// sandbox's validator and reports its verdict at the directive's line.
func TestCheckExperimentOption(t *testing.T) {
	var seen []string
	opt := Options{CheckExperiment: func(id string, params map[string]string) error {
		seen = append(seen, id+" "+params["msg_size"])
		if id == "tcp-cost" && params["seconds"] == "3" {
			return errors.New("seconds: must be at least 5")
		}
		return nil
	}}
	diags := Check(os.DirFS("testdata/course"), opt)
	found := false
	for _, d := range diags {
		if d.Severity == Error {
			if d.File != "01-basics/index.en.md" || d.Line != 37 || !strings.Contains(d.Message, "seconds: must be at least 5") {
				t.Errorf("unexpected error %s", d)
			}
			found = true
		}
	}
	if !found || len(seen) != 1 || seen[0] != "tcp-cost 65536" {
		t.Errorf("validator saw %q, error reported: %v", seen, found)
	}
}

func TestHeadingIDs(t *testing.T) {
	for in, want := range map[string]string{
		"为什么需要 RDMA：内核旁路与零拷贝":     "为什么需要-rdma-内核旁路与零拷贝",
		"One-sided vs. two-sided": "one-sided-vs-two-sided",
		"  **Bold** `code`  ":     "bold-code",
		"!!!":                     "section",
		"QP/CQ/MR":                "qp-cq-mr",
	} {
		if got := slugify(in); got != want {
			t.Errorf("slugify(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDirectivesAcrossPieces: heading ids stay unique across the Markdown
// pieces between directives, and fenced code hides directive-looking lines.
func TestDirectivesAcrossPieces(t *testing.T) {
	fsys := fstest.MapFS{
		"01-a/index.zh.md": {Data: []byte("---\ntitle: A\nsummary: S\norder: 1\n---\n## 同名\n\n::diagram tcp-vs-rdma\n\n## 同名\n\n~~~\n::nope\n:::\n~~~\n")},
	}
	c, err := Load(fsys, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := c.Lesson("01-a").Page("zh")
	if len(p.TOC) != 2 || p.TOC[0].ID != "同名" || p.TOC[1].ID != "同名-1" {
		t.Errorf("TOC = %+v", p.TOC)
	}
	if len(p.Body) != 3 || p.Body[1].Kind != SegDiagram || p.Body[1].Line != 8 {
		t.Fatalf("body kinds = %+v", p.Body)
	}
	if !strings.Contains(string(p.Body[2].HTML), "::nope\n:::") {
		t.Errorf("fenced directive text lost: %s", p.Body[2].HTML)
	}
}

// chromaSpans are the highlighter's token spans. chroma gives each of its
// regular expressions a 250 ms match timeout (wall clock): on a machine
// loaded enough a match times out and a token falls back to a plainer
// class ("l" for "nt"), so highlighting may differ between loads without
// anything being shared wrongly. The text inside stays the same.
var chromaSpans = regexp.MustCompile(`<span class="[a-z0-9 ]*">|</span>`)

// TestLoadConcurrent: loads share one goldmark instance; run under -race to
// hold that sharing to account (live reload and requests may overlap).
// Highlighting classes are left out of the comparison (chromaSpans).
func TestLoadConcurrent(t *testing.T) {
	done := make(chan string)
	for i := 0; i < 4; i++ {
		go func() {
			c, err := Load(Builtin, Options{})
			if err != nil {
				done <- err.Error()
				return
			}
			done <- chromaSpans.ReplaceAllString(dumpPage(c.Lesson("01-why-rdma").Page("en")), "")
		}()
	}
	first := <-done
	for i := 1; i < 4; i++ {
		if got := <-done; got != first {
			t.Errorf("concurrent loads rendered differently:\n%s", diffLines(first, got))
		}
	}
}

// TestCheckpointAllInBody (issue 30 item 9): when the text places every
// question, the checkpoint asks none of them again (it used to re-ask all)
// and check warns the author.
func TestCheckpointAllInBody(t *testing.T) {
	const q = "questions:\n  - id: a/one\n    type: numeric\n    prompt: {en: One?}\n    value: 1\n    tolerance: 0\n    explanation: {en: One.}\n"
	fsys := fstest.MapFS{
		"01-a/index.en.md": {Data: []byte("---\ntitle: A\nsummary: S\norder: 1\n---\n::quiz a/one\n\n## Checkpoint\n\n::checkpoint\n")},
		"01-a/quiz.yaml":   {Data: []byte(q)},
	}
	c, err := Load(fsys, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var cp *Segment
	for i, s := range c.Lesson("01-a").Page("en").Body {
		if s.Kind == SegCheckpoint {
			cp = &c.Lesson("01-a").Page("en").Body[i]
		}
	}
	if cp == nil || len(cp.Questions) != 0 || !cp.AllInBody {
		t.Fatalf("checkpoint = %+v", cp)
	}
	warned := false
	for _, w := range c.Warnings {
		warned = warned || strings.Contains(w.Message, "::checkpoint asks nothing the text did not")
	}
	if !warned {
		t.Errorf("no warning: %v", c.Warnings)
	}
}

// TestFolderNumberVsOrder (issue 29 item 8): a folder "06-…" with order: 2
// showed a second "02" silently; check warns at the order line.
func TestFolderNumberVsOrder(t *testing.T) {
	page := func(order string) []byte {
		return []byte("---\ntitle: T\nsummary: S\norder: " + order + "\n---\nText.\n")
	}
	fsys := fstest.MapFS{
		"02-b/index.en.md":  {Data: page("2")},
		"06-f/index.en.md":  {Data: page("2")},
		"intro/index.en.md": {Data: page("7")},
	}
	var found []string
	for _, d := range Check(fsys, Options{}) {
		if strings.Contains(d.Message, "the folder is numbered") {
			found = append(found, d.String())
		}
	}
	if len(found) != 1 || !strings.HasPrefix(found[0], "06-f/index.en.md:4: warning: order 2 but the folder is numbered 06") {
		t.Errorf("findings %q", found)
	}
}
