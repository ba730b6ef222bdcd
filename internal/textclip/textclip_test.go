package textclip

import "testing"

func TestRunes(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"零一二三", 2, "零一…"}, // never inside a rune
		{"零一", 2, "零一"},
		{"\xff\xfeab", 2, "\xff\xfe…"}, // invalid bytes count one each
		{"abc", 0, "…"},
		{"abc", -1, "…"},
	} {
		if got := Runes(c.s, c.n); got != c.want {
			t.Errorf("Runes(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{{"abc", 3, "abc"}, {"abcd", 3, "abc…"}, {"内存不足", 4, "内…"}, {"内存", 2, "…"}, {"abc", -1, "…"}} {
		if got := Bytes(c.s, c.n); got != c.want {
			t.Errorf("Bytes(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
	if got := BytesOf([]byte("abcdef"), 2); got != "ab…" {
		t.Errorf("BytesOf = %q", got)
	}
}
