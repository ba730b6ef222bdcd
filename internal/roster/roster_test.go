package roster

import (
	"reflect"
	"testing"
)

// TestParse: a spreadsheet's export with a BOM, a header, quotes, blank
// lines and mistakes; each mistake reported on its own line.
func TestParse(t *testing.T) {
	in := "\xef\xbb\xbf学号,姓名,班\n" +
		"2026001, 张三 ,A\n" +
		"\n" +
		"2026002,\"Li, Si\"\n" +
		"2026003\n" +
		",Nobody\n" +
		"2026004,\n" +
		"2026001,Again\n" +
		"2026005,王五\n"
	got, problems := Parse([]byte(in))
	want := []Entry{{2, "2026001", "张三"}, {4, "2026002", "Li, Si"}, {9, "2026005", "王五"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entries %+v, want %+v", got, want)
	}
	wantP := []Problem{{5, Columns}, {6, NoID}, {7, NoName}, {8, Duplicate}}
	if !reflect.DeepEqual(problems, wantP) {
		t.Errorf("problems %+v, want %+v", problems, wantP)
	}
}

func TestParseSeparatorsAndEncoding(t *testing.T) {
	got, p := Parse([]byte("s1\tAnn Lee\ns2\tBo\n"))
	if len(got) != 2 || got[0].Name != "Ann Lee" || len(p) != 0 {
		t.Errorf("tab: %+v %+v", got, p)
	}
	got, p = Parse([]byte("s1;Ann\n"))
	if len(got) != 1 || got[0].Name != "Ann" || len(p) != 0 {
		t.Errorf("semicolon: %+v %+v", got, p)
	}
	// GBK bytes of 张三, as an old spreadsheet saves them.
	if got, p := Parse([]byte("1,\xd5\xc5\xc8\xfd\n")); len(got) != 0 || len(p) != 1 || p[0].Kind != NotUTF8 {
		t.Errorf("GBK: %+v %+v", got, p)
	}
	if _, p := Parse([]byte("1,\"open\n")); len(p) != 1 || p[0].Kind != BadCSV || p[0].Line != 1 {
		t.Errorf("open quote: %+v", p)
	}
}
