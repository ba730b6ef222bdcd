package lessons

import (
	"strings"
	"testing"
	"testing/fstest"
)

// renderBody loads a one-lesson course whose page in lang has body md and
// returns the page's HTML.
func renderBody(t *testing.T, lang, md string) string {
	t.Helper()
	fsys := fstest.MapFS{
		"01-a/index." + lang + ".md": {Data: []byte("---\ntitle: A\nsummary: S\norder: 1\n---\n" + md)},
	}
	c, err := Load(fsys, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, s := range c.Lesson("01-a").Page(lang).Body {
		b.WriteString(string(s.HTML))
	}
	return b.String()
}

// TestSoftLineBreaks (issue 29 finding 1): a soft line break is a space
// (CommonMark) unless both sides are Chinese characters; punctuation before
// the break or emphasis after it must not swallow it.
func TestSoftLineBreaks(t *testing.T) {
	for _, c := range []struct{ lang, md, want string }{
		{"en", "First sentence.\nSecond sentence.\n", "First sentence.\nSecond sentence."},
		{"en", "Fabrics,\niSER and NFS\n", "Fabrics,\niSER"},
		{"en", "a;\nb: c\nd?\ne!\n(f)\ng\n", "a;\nb: c\nd?\ne!\n(f)\ng"},
		{"en", "Post a receive.\n`ibv_post_recv` does it.\n", "Post a receive.\n<code>ibv_post_recv</code>"},
		{"en", "See this.\n**Then** that.\n", "See this.\n<strong>Then</strong>"},
		{"zh", "第一句话，\n第二句话。\n", "第一句话，第二句话。"},
		{"zh", "内核\n旁路\n", "内核旁路"},
		{"zh", "先注册\n**内存**再发送\n", "先注册<strong>内存</strong>再发送"},
		{"zh", "使用\nRDMA 网卡\n", "使用\nRDMA 网卡"},
	} {
		got := renderBody(t, c.lang, c.md)
		if !strings.Contains(got, c.want) {
			t.Errorf("%s %q rendered\n%s\nwant it to contain %q", c.lang, c.md, got, c.want)
		}
	}
}

// TestCJKEmphasis (issue 29 finding 2): emphasis that ends on full-width
// punctuation right before a Chinese character (and the mirror case) is
// emphasis, not literal asterisks.
func TestCJKEmphasis(t *testing.T) {
	for _, c := range []struct{ md, want string }{
		{"**胶囊（capsule）**发送\n", "<strong>胶囊（capsule）</strong>发送"},
		{"这是**（注意）**文字\n", "这是<strong>（注意）</strong>文字"},
		{"用「*零拷贝*」一词\n", "用「<em>零拷贝</em>」一词"},
		{"先**注册内存**，再发送\n", "先<strong>注册内存</strong>，再发送"},
		{"snake_case_name 不是强调\n", "snake_case_name"},
		{"**bold**text and *a*b\n", "<strong>bold</strong>text and <em>a</em>b"},
	} {
		got := renderBody(t, "zh", c.md)
		if !strings.Contains(got, c.want) || strings.Contains(got, "**") {
			t.Errorf("%q rendered\n%s\nwant it to contain %q", c.md, got, c.want)
		}
	}
}
