package web

import (
	"regexp"
	"strings"

	"github.com/rdmalab/rdmalab/sandbox"
)

// semicolonExpected matches tcc's message for a missing ';': it names the
// token it got instead, which is where it noticed, not where the ';' goes.
var semicolonExpected = regexp.MustCompile(`^';' expected \(got "(.*)"\)`)

// placeMissingSemicolons moves each "';' expected" diagnostic from the
// line of the token tcc got (the next statement, often below blank lines
// and the starter's instruction comments: "int n = 0" on line 5 is
// reported on line 10) to the line that lacks the ';': the last line
// before it with code on it, unless code precedes the token on its own
// line ("n = 1 return n;" stays where it is). The line tcc gave stays in
// Figures "reported_line".
func placeMissingSemicolons(evs []sandbox.Event, src string) []sandbox.Event {
	var code []string // each line with comments and literals blanked; built once
	for i, ev := range evs {
		m := semicolonExpected.FindStringSubmatch(ev.Message)
		if m == nil || ev.Figures == nil {
			continue
		}
		if code == nil {
			code = codeLines(src)
		}
		line := int(ev.Figures["line"])
		if line < 2 || line > len(code) {
			continue
		}
		at := strings.Index(code[line-1], m[1])
		if at < 0 || strings.TrimSpace(code[line-1][:at]) != "" {
			continue
		}
		for l := line - 1; l >= 1; l-- {
			if strings.TrimSpace(code[l-1]) != "" {
				figs := make(map[string]float64, len(ev.Figures)+1)
				for k, v := range ev.Figures {
					figs[k] = v
				}
				figs["reported_line"] = float64(line)
				figs["line"] = float64(l)
				figs["column"] = float64(len([]rune(strings.TrimRight(code[l-1], " \t"))) + 1)
				evs[i].Figures = figs
				break
			}
		}
	}
	return evs
}

// codeLines splits C source into lines with comments and the insides of
// string and character literals replaced by spaces (columns kept), so a
// line holds code exactly when it holds something but blanks.
func codeLines(src string) []string {
	var out []string
	var b strings.Builder
	const (
		plain = iota
		block
		line
		str
		chr
	)
	state := plain
	rs := []rune(src)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		next := rune(0)
		if i+1 < len(rs) {
			next = rs[i+1]
		}
		if c == '\n' {
			out = append(out, b.String())
			b.Reset()
			if state == line || state == str || state == chr {
				state = plain // an unterminated literal ends with its line, as in C
			}
			continue
		}
		switch state {
		case plain:
			switch {
			case c == '/' && next == '*':
				state = block
				b.WriteString("  ")
				i++
			case c == '/' && next == '/':
				state = line
				b.WriteString("  ")
				i++
			case c == '"':
				state = str
				b.WriteRune(c)
			case c == '\'':
				state = chr
				b.WriteRune(c)
			default:
				b.WriteRune(c)
			}
		case block:
			if c == '*' && next == '/' {
				state = plain
				b.WriteString("  ")
				i++
			} else {
				b.WriteByte(' ')
			}
		case line:
			b.WriteByte(' ')
		case str, chr:
			quote := '"'
			if state == chr {
				quote = '\''
			}
			switch {
			case c == '\\' && next != 0 && next != '\n':
				b.WriteString("  ")
				i++
			case c == quote:
				state = plain
				b.WriteRune(c)
			default:
				b.WriteByte(' ')
			}
		}
	}
	return append(out, b.String())
}
