package lessons

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestSourcesHeading: a sources section reads the one title of its language
// under the one id, and ends the page; a page without one passes.
func TestSourcesHeading(t *testing.T) {
	page := func(body string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("---\ntitle: A\nsummary: S\norder: 1\n---\n## Intro {#intro}\n\nText.\n\n" + body)}
	}
	cases := []struct {
		name, file, body string
		want             []string // diagnostics, "" = none
	}{
		{"en right", "01-a/index.en.md", "## Sources and further reading {#further-reading}\n\n- IBTA.\n", nil},
		{"zh right", "01-a/index.zh.md", "## 来源与延伸阅读 {#further-reading}\n\n- IBTA。\n", nil},
		{"none", "01-a/index.en.md", "## More {#more}\n", nil},
		{"en variant", "01-a/index.en.md", "## Sources {#sources}\n\n- IBTA.\n",
			[]string{`01-a/index.en.md:10: sources heading "Sources" {#sources}: every lesson's en page calls it ` + "`## Sources and further reading {#further-reading}`"}},
		{"zh variant, right id", "01-a/index.zh.md", "## 来源与延伸资料 {#further-reading}\n\n- IBTA。\n",
			[]string{`01-a/index.zh.md:10: sources heading "来源与延伸资料" {#further-reading}: every lesson's zh page calls it ` + "`## 来源与延伸阅读 {#further-reading}`"}},
		{"zh title in an en page", "01-a/index.en.md", "## 参考来源 {#sources}\n",
			[]string{`01-a/index.en.md:10: sources heading "参考来源" {#sources}: every lesson's en page calls it ` + "`## Sources and further reading {#further-reading}`"}},
		{"not last", "01-a/index.en.md", "## Sources and further reading {#further-reading}\n\n- IBTA.\n\n## Takeaways {#takeaways}\n",
			[]string{`01-a/index.en.md:10: warning: sources heading "Sources and further reading" is not the page's last section: the sources end the lesson`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, d := range Check(fstest.MapFS{tc.file: page(tc.body)}, Options{}) {
				if strings.Contains(d.Message, "sources") {
					got = append(got, d.String())
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("diagnostics:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
