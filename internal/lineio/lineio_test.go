package lineio

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader("one\n\n  two  \r\n"+strings.Repeat("x", 100)+"\nthree"), 16)
	var got []string
	for {
		line, err := Read(br, 20)
		if errors.Is(err, ErrLongLine) {
			got = append(got, "LONG")
			continue
		}
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		got = append(got, string(line))
	}
	if strings.Join(got, "|") != "one|two|LONG|three" {
		t.Errorf("lines %q", got)
	}
}

func TestReadClipped(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader("short\r\n"+strings.Repeat("y", 50)+"\nend"), 16)
	for _, want := range []struct {
		line string
		cut  int
		err  error
	}{{"short", 0, nil}, {strings.Repeat("y", 10), 40, nil}, {"end", 0, io.EOF}} {
		line, cut, err := ReadClipped(br, 10)
		if string(line) != want.line || cut != want.cut || err != want.err {
			t.Errorf("ReadClipped = %q, %d, %v; want %q, %d, %v", line, cut, err, want.line, want.cut, want.err)
		}
	}
}
