package instructor

import (
	"testing"
)

// TestCSVFormulaGuard is issue 18.9: the guard looked at the first byte only.
func TestCSVFormulaGuard(t *testing.T) {
	for in, want := range map[string]string{
		"Ada":            "Ada",
		"=HYPERLINK(1)":  "'=HYPERLINK(1)",
		"  =1+1":         "'  =1+1",
		"\u3000@SUM(A1)": "'\u3000@SUM(A1)",
		"＝1+1":           "'＝1+1",
		"\t1":            "'\t1",
		"\n=1":           "'\n=1",
		"|calc":          "'|calc",
		"a = b":          "a = b",
		"":               "",
		"-":              "'-",
		"李雷":             "李雷",
	} {
		if got := csvText(in); got != want {
			t.Errorf("csvText(%q) = %q, want %q", in, got, want)
		}
	}
}
