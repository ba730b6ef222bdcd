// Package roster reads a class roster: a CSV of student ids and names as a
// school's records system or a spreadsheet exports it (UTF-8, with or
// without a byte-order mark and a header row, comma, semicolon or tab
// separated). Problems are reported per line, by kind, so the page can say
// them in the instructor's language.
package roster

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"strings"
	"unicode/utf8"
)

// Entry is one student of the roster.
type Entry struct {
	Line      int // 1-based line in the file
	StudentID string
	Name      string
}

// Kind names a problem of a roster line.
type Kind string

// The problems Parse reports.
const (
	NotUTF8   Kind = "utf8"    // the file is not UTF-8 (the whole file)
	BadCSV    Kind = "csv"     // a line the CSV reader cannot read (an open quote…)
	Columns   Kind = "columns" // fewer than two columns
	NoID      Kind = "noid"    // the student id is empty
	NoName    Kind = "noname"  // the name is empty
	Duplicate Kind = "dup"     // the student id came on an earlier line
	TooMany   Kind = "toomany" // more lines than Parse reads
	Invalid   Kind = "invalid" // read, but refused by the store's check (set by web.ParseRoster)
)

// Problem is one line Parse skipped.
type Problem struct {
	Line int
	Kind Kind
}

// MaxLines bounds the lines Parse reads.
const MaxLines = 2000

// headerWords are first-row cells that make it a header (lower-cased).
var headerWords = map[string]bool{
	"id": true, "student_id": true, "student id": true, "studentid": true, "number": true,
	"学号": true, "编号": true, "name": true, "姓名": true, "名字": true,
}

// Parse reads a roster. The first column is the student id, the second the
// name; further columns are ignored. A first row whose first cell is a
// header word ("student_id", "学号"…) is skipped.
func Parse(data []byte) ([]Entry, []Problem) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		return nil, []Problem{{Line: 0, Kind: NotUTF8}}
	}
	cr := csv.NewReader(bytes.NewReader(data))
	cr.Comma = separator(data)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	var (
		out      []Entry
		problems []Problem
		seen     = map[string]int{}
	)
	for rec := 0; ; rec++ {
		fields, err := cr.Read()
		line, _ := cr.FieldPos(0)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.StartLine
			}
			problems = append(problems, Problem{Line: line, Kind: BadCSV})
			if len(problems) > MaxLines {
				break
			}
			continue
		}
		if rec >= MaxLines {
			problems = append(problems, Problem{Line: line, Kind: TooMany})
			break
		}
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		if rec == 0 && headerWords[strings.ToLower(fields[0])] {
			continue
		}
		if len(fields) == 1 && fields[0] == "" {
			continue // a blank line inside quotes-free CSV
		}
		switch {
		case len(fields) < 2:
			problems = append(problems, Problem{Line: line, Kind: Columns})
		case fields[0] == "":
			problems = append(problems, Problem{Line: line, Kind: NoID})
		case fields[1] == "":
			problems = append(problems, Problem{Line: line, Kind: NoName})
		case seen[fields[0]] > 0:
			problems = append(problems, Problem{Line: line, Kind: Duplicate})
		default:
			seen[fields[0]] = line
			out = append(out, Entry{Line: line, StudentID: fields[0], Name: fields[1]})
		}
	}
	return out, problems
}

// separator is the column separator of the first line: a tab or a
// semicolon (spreadsheets in locales with a decimal comma) when the line
// has one and no comma, else a comma.
func separator(data []byte) rune {
	first, _, _ := bytes.Cut(data, []byte("\n"))
	switch {
	case bytes.ContainsRune(first, ','):
		return ','
	case bytes.ContainsRune(first, '\t'):
		return '\t'
	case bytes.ContainsRune(first, ';'):
		return ';'
	}
	return ','
}
