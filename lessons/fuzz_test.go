package lessons

import (
	"bytes"
	"strings"
	"testing"
	"testing/fstest"
)

// checkDiagLines holds Check to its promise: whatever the input, it returns
// (no panic) and every line it names exists in the file it names.
func checkDiagLines(t *testing.T, fsys fstest.MapFS, diags []Diagnostic) {
	t.Helper()
	for _, d := range diags {
		f, ok := fsys[d.File]
		if !ok {
			if d.Line != 0 {
				t.Fatalf("diagnostic on a line of a non-file: %s", d)
			}
			continue
		}
		lines := bytes.Count(f.Data, []byte("\n")) + 1
		if d.Line < 0 || d.Line > lines {
			t.Fatalf("line %d outside %s (%d lines): %s", d.Line, d.File, lines, d)
		}
	}
}

func FuzzFrontMatter(f *testing.F) {
	f.Add([]byte("---\ntitle: T\nsummary: S\norder: 1\n---\nbody\n"))
	f.Add([]byte("---\ntitle: [\n---\n"))
	f.Add([]byte("---\nreferences:\n  - {title: a, url: 'http://x'}\n  - 3\nprerequisites: [01-a, 01-a]\n---\n"))
	f.Add([]byte("---\n&a title: *a\n---\n"))
	f.Add([]byte("---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := fstest.MapFS{"01-a/index.zh.md": {Data: data}}
		checkDiagLines(t, fsys, Check(fsys, Options{}))
	})
}

func FuzzDirectives(f *testing.F) {
	f.Add("::experiment tcp-cost msg_size=65536 seconds=3\n")
	f.Add(":::note\n::quiz a/b\n:::\n:::\n")
	f.Add("```\n::nope\n```\n:::warning x\n## 标题\n")
	f.Add("::experiment x a=\"b c\" a=1\n[l](../01-a#h) ![i](x.png)\n")
	f.Add("::checkpoint\n::diagram tcp-vs-rdma\n")
	f.Add("::terminal\n:::task t tasks/t.sh\nDo **it**.\n:::note\nx\n:::\n:::\n:::task t tasks/t.sh\n:::task u x\n")
	f.Add(":::note\n:::task a tasks/t.sh\n::quiz a/b\ntext\n:::\n")
	const head = "---\ntitle: T\nsummary: S\norder: 1\n---\n"
	quiz := []byte("questions:\n  - id: a/b\n    type: single\n    prompt: {zh: x, en: y}\n    options:\n      - {id: a, correct: true, text: {zh: x, en: y}}\n      - {id: b, text: {zh: x, en: y}}\n    explanation: {zh: x, en: y}\n")
	f.Fuzz(func(t *testing.T, body string) {
		fsys := fstest.MapFS{
			"01-a/index.en.md": {Data: []byte(head + body)},
			"01-a/quiz.yaml":   {Data: quiz},
			"01-a/tasks/t.sh":  {Data: []byte("exit 0\n")},
		}
		diags := Check(fsys, Options{})
		checkDiagLines(t, fsys, diags)
		c, err := Load(fsys, Options{})
		if err != nil {
			return
		}
		p := c.Lesson("01-a").Page("en")
		var html strings.Builder
		for _, s := range p.Body {
			if s.Kind != SegHTML && (s.Line <= 5 || s.Line > strings.Count(head+body, "\n")+1) {
				t.Fatalf("%s segment at line %d, outside the body", s.Kind, s.Line)
			}
			html.WriteString(string(s.HTML))
		}
		// Callouts open and close in pairs even when segments cut through them.
		if o, c := strings.Count(html.String(), "<aside "), strings.Count(html.String(), "</aside>"); o != c {
			t.Fatalf("%d <aside> opened, %d closed", o, c)
		}
		// Raw HTML never reaches the page.
		if strings.Contains(html.String(), "<script") {
			t.Fatalf("raw <script> rendered")
		}
	})
}
