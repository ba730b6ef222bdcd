package lessons

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// The body of a lesson is pre-split into pieces before Markdown sees it:
// runs of Markdown, directive lines ("::name args") and callout fences
// (":::name" … ":::"). A line scanner keeps this simple and exact: a
// directive is a whole line at column 0 by definition, line numbers come
// for free, and fenced code is skipped so code samples may show directives.

type pieceKind int

const (
	pieceMarkdown pieceKind = iota
	pieceDirective
	pieceOpen  // ":::name [title]"
	pieceClose // ":::"
	// pieceMistyped is a line that looks meant as a directive or callout
	// but is not one (indented, a space after the colons, one colon): it
	// would render as text, so check reports it with the fix. It is also
	// kept as Markdown (src) so the page still renders.
	pieceMistyped
)

// piece is one unit of a lesson body.
type piece struct {
	kind pieceKind
	line int    // file line of the piece's first line
	src  []byte // pieceMarkdown: the Markdown text, newline-terminated lines
	name string // directive or container name
	args string // rest of the line after the name, trimmed
}

// splitBody cuts body (whose first line is file line firstLine) into pieces.
func splitBody(body []byte, firstLine int) []piece {
	var (
		out       []piece
		md        []byte
		mdLine    int
		fenceChar byte
		fenceLen  int
	)
	flush := func() {
		if len(md) > 0 {
			out = append(out, piece{kind: pieceMarkdown, line: mdLine, src: md})
			md = nil
		}
	}
	line := firstLine
	for len(body) > 0 {
		raw, rest, _ := bytes.Cut(body, []byte("\n"))
		body = rest
		l := strings.TrimRight(string(raw), "\r")
		n := line
		line++

		if fenceChar != 0 {
			if c, k, info := fenceOf(l); c == fenceChar && k >= fenceLen && strings.TrimSpace(info) == "" {
				fenceChar = 0
			}
		} else if c, k, _ := fenceOf(l); c != 0 {
			fenceChar, fenceLen = c, k
		} else if strings.HasPrefix(l, ":::") {
			flush()
			rest := strings.TrimSpace(l[3:])
			if rest == "" {
				out = append(out, piece{kind: pieceClose, line: n})
			} else {
				name, args, _ := strings.Cut(rest, " ")
				out = append(out, piece{kind: pieceOpen, line: n, name: name, args: strings.TrimSpace(args)})
			}
			continue
		} else if fix := mistypedDirective(l); fix != "" {
			flush()
			out = append(out, piece{kind: pieceMistyped, line: n, src: []byte(l + "\n"), args: fix})
			continue
		} else if len(l) > 2 && strings.HasPrefix(l, "::") && isASCIILetter(l[2]) {
			flush()
			name, args, _ := strings.Cut(strings.TrimSpace(l[2:]), " ")
			out = append(out, piece{kind: pieceDirective, line: n, name: name, args: strings.TrimSpace(args)})
			continue
		}
		if len(md) == 0 {
			mdLine = n
		}
		md = append(md, l...)
		md = append(md, '\n')
	}
	flush()
	return out
}

// fenceOf reports whether l opens or closes a fenced code block: the fence
// character, its length and the info string. Any indentation is accepted so
// that fences inside list items are skipped too (being too eager here only
// means a directive-looking line inside odd indentation stays text).
func fenceOf(l string) (c byte, n int, info string) {
	t := strings.TrimLeft(l, " \t")
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return 0, 0, ""
	}
	c = t[0]
	for n < len(t) && t[n] == c {
		n++
	}
	if n < 3 {
		return 0, 0, ""
	}
	info = t[n:]
	if c == '`' && strings.Contains(info, "`") {
		return 0, 0, "" // an inline code span, not a fence (CommonMark rule)
	}
	return c, n, info
}

// knownDirectiveWords are the directive and callout names a mistyped line
// is recognised by.
var knownDirectiveWords = map[string]bool{
	"experiment": true, "quiz": true, "checkpoint": true, "diagram": true, "terminal": true, "task": true,
	"note": true, "warning": true, "takeaway": true,
}

// mistypedDirective returns how to fix l when it looks like a directive or
// callout that is not one ("" when it is fine): "  ::checkpoint" (indented),
// ":: quiz x" (space after the colons), ":checkpoint" (one colon).
func mistypedDirective(l string) string {
	t := strings.TrimLeft(l, " \t")
	colons := len(t) - len(strings.TrimLeft(t, ":"))
	if colons == 0 || colons > 3 {
		return ""
	}
	rest := t[colons:]
	word := strings.TrimLeft(rest, " \t")
	name := word
	if i := strings.IndexAny(name, " \t"); i >= 0 {
		name = name[:i]
	}
	if !knownDirectiveWords[name] {
		return ""
	}
	want := "::" + name
	if colons == 3 || name == "note" || name == "warning" || name == "takeaway" || name == "task" {
		want = ":::" + name
	}
	switch {
	case t != l:
		return fmt.Sprintf("a directive must start at column 1: remove the indentation before %s", want)
	case word != rest:
		return fmt.Sprintf("no space between the colons and the name: write %s", want)
	case colons == 1:
		return fmt.Sprintf("a directive starts with two colons: write %s", want)
	}
	return ""
}

func isASCIILetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

var (
	// idPattern is the form of experiment and diagram ids.
	idPattern       = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	paramKeyPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

// splitArgs splits directive arguments at spaces; a double-quoted part may
// hold spaces (k="two words"), using Go string quoting.
func splitArgs(s string) ([]string, error) {
	var out []string
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return out, nil
		}
		var b strings.Builder
		for s != "" && !unicode.IsSpace(rune(s[0])) {
			if s[0] == '"' {
				q, err := strconv.QuotedPrefix(s)
				if err != nil {
					return nil, fmt.Errorf("unterminated quoted value in %q", s)
				}
				v, _ := strconv.Unquote(q)
				b.WriteString(v)
				s = s[len(q):]
				continue
			}
			b.WriteByte(s[0])
			s = s[1:]
		}
		out = append(out, b.String())
	}
}

// parseParams reads key=value pairs of an ::experiment line.
func parseParams(args []string) (map[string]string, error) {
	params := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return nil, fmt.Errorf("parameter %q is not key=value", a)
		}
		if !paramKeyPattern.MatchString(k) {
			return nil, fmt.Errorf("parameter name %q must be lower case letters, digits and _", k)
		}
		if v == "" {
			return nil, fmt.Errorf("parameter %s has an empty value", k)
		}
		if _, dup := params[k]; dup {
			return nil, fmt.Errorf("parameter %s is given twice", k)
		}
		params[k] = v
	}
	return params, nil
}
