package lessons

import (
	"strings"
	"testing"
	"testing/fstest"
)

// draftCourse is a course of one lesson with a _drafts/ folder beside it.
func draftCourse() fstest.MapFS {
	page := func(title, fm, body string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("---\ntitle: " + title + "\nsummary: S.\norder: 1\n" + fm + "---\n\n" + body + "\n")}
	}
	quizYAML := func(id string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("questions:\n  - id: " + id + "\n    type: single\n    prompt: {en: Which?, zh: 哪个？}\n    options:\n      - {id: a, text: {en: A, zh: 甲}, correct: true}\n      - {id: b, text: {en: B, zh: 乙}}\n    explanation: {en: Because., zh: 因为。}\n")}
	}
	return fstest.MapFS{
		"01-real/index.en.md": page("Real", "", "## Setup\n\nText.\n\n::checkpoint"),
		"01-real/quiz.yaml":   quizYAML("real/q1"),
		// A clean draft: requires and links to the course, links another
		// draft, shows its own image and question.
		"_drafts/06-new/index.en.md": page("New", "prerequisites: [01-real]\n",
			"See [the setup](../01-real/#setup) and [the other draft](../07-broken/).\n\n![d](diagram.png)\n\n::quiz new/q1"),
		"_drafts/06-new/index.zh.md": page("新", "prerequisites: [01-real]\n", "正文。\n\n::checkpoint"),
		"_drafts/06-new/diagram.png": {Data: []byte("\x89PNG\r\n")},
		"_drafts/06-new/quiz.yaml":   quizYAML("new/q1"),
		// A broken draft: unknown directive id, a question id the course uses.
		"_drafts/07-broken/index.en.md": page("Broken", "", "::quiz nope/q"),
		"_drafts/07-broken/quiz.yaml":   quizYAML("real/q1"),
	}
}

func TestDraftsLoadBesideTheCourse(t *testing.T) {
	fsys := draftCourse()
	c, err := Load(fsys, Options{})
	if err != nil {
		t.Fatalf("a draft's errors must not stop the course: %v", err)
	}
	if len(c.Lessons) != 1 || c.Lesson("06-new") != nil || c.Lesson("07-broken") != nil {
		t.Fatalf("course lessons %v: drafts leaked into the course", slugsOf(c))
	}
	if c.Questions["new/q1"] != nil {
		t.Error("a draft's question is in the course's questions")
	}
	if c.Drafts == nil || c.Drafts.Lesson("06-new") == nil || c.Drafts.Lesson("07-broken") == nil {
		t.Fatalf("drafts not loaded: %+v", c.Drafts)
	}
	if c.Drafts.Questions["new/q1"] == nil {
		t.Error("the draft's question is not in the drafts' questions")
	}
	// Links: the course's lesson at /lessons/, another draft and the
	// draft's own files under the preview path.
	html := bodyHTML(c.Drafts.Lesson("06-new").Page("en"))
	for _, want := range []string{`href="/lessons/01-real#setup"`, `href="/instructor/drafts/07-broken"`, `src="/instructor/drafts/06-new/assets/diagram.png"`} {
		if !strings.Contains(html, want) {
			t.Errorf("draft page lacks %s:\n%s", want, html)
		}
	}
	if f, err := c.Drafts.OpenAsset("06-new", "diagram.png"); err != nil {
		t.Errorf("draft asset: %v", err)
	} else {
		f.Close()
	}
	if _, err := c.OpenAsset("06-new", "diagram.png"); err == nil {
		t.Error("the course serves a draft's asset")
	}
	// Findings name the files under _drafts/; the clean draft has none.
	got := joinDiags(c.DraftFindings)
	for _, want := range []string{
		`_drafts/07-broken/index.en.md:7: ::quiz nope/q: no question with this id`,
		`_drafts/07-broken/quiz.yaml:2: question id "real/q1" is already used by the course at 01-real/quiz.yaml:2`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("draft findings lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "06-new") {
		t.Errorf("the clean draft has findings:\n%s", got)
	}
	if strings.Contains(joinDiags(c.Warnings), DraftsDir) {
		t.Errorf("draft findings leaked into the course's warnings: %v", c.Warnings)
	}
	// Check reports the course's and the drafts' findings.
	if got := joinDiags(Check(fsys, Options{})); !strings.Contains(got, "_drafts/07-broken/quiz.yaml:2:") {
		t.Errorf("check does not report the draft:\n%s", got)
	}

	// No _drafts/ folder: no drafts.
	delete(fsys, "_drafts/06-new/index.en.md")
	for name := range fsys {
		if strings.HasPrefix(name, "_drafts/") {
			delete(fsys, name)
		}
	}
	if c, err := Load(fsys, Options{}); err != nil || c.Drafts != nil || c.DraftFindings != nil {
		t.Errorf("no _drafts/: drafts %v, findings %v, err %v", c.Drafts, c.DraftFindings, err)
	}
}

func TestDraftSlugTakenByTheCourse(t *testing.T) {
	fsys := draftCourse()
	fsys["_drafts/01-real/index.en.md"] = &fstest.MapFile{Data: []byte("---\ntitle: Again\nsummary: S.\norder: 1\n---\n\nText.\n")}
	got := joinDiags(Check(fsys, Options{}))
	if !strings.Contains(got, "_drafts/01-real: a draft named like the course's lesson 01-real") {
		t.Errorf("findings:\n%s", got)
	}
	if _, err := Load(fsys, Options{}); err != nil {
		t.Errorf("the course must still load: %v", err)
	}
}

func slugsOf(c *Course) []string {
	var out []string
	for _, l := range c.Lessons {
		out = append(out, l.Slug)
	}
	return out
}

func bodyHTML(p *Page) string {
	var b strings.Builder
	for _, s := range p.Body {
		b.WriteString(string(s.HTML))
	}
	return b.String()
}

func joinDiags(ds []Diagnostic) string {
	var out []string
	for _, d := range ds {
		out = append(out, d.String())
	}
	return strings.Join(out, "\n")
}
