package zhcheck

import (
	"regexp"
	"strings"
	"unicode"
)

// What e2e's TestEveryExperimentReplay and TestChinesePages call a leak in
// Chinese text besides English prose (englishProse): Western punctuation in
// a Chinese sentence ("打开设备. ", "范围: 3 ms", "日志 (2)", "RDMA 19 (0–31) %")
// and English words that label something ("1024 bytes", "(set)", "(index
// 1)", "(client)"). Chinese writes ，。：；（）and “” (docs: the rules of how
// we write).

// hanRE finds Chinese text: a Chinese character or a full-width mark.
var hanRE = regexp.MustCompile(`[\p{Han}\x{3000}-\x{303f}\x{ff00}-\x{ffef}]`)

// punctRules are Western punctuation marks as a Chinese sentence must not
// have them; each is a leak only in text that holds a Chinese character.
var punctRules = []struct {
	name string
	re   *regexp.Regexp
}{
	// an aside in ASCII parentheses: "(" after a space, a Chinese
	// character or at the start — not a call (write(), ECT(0)), not "()"
	{"(", regexp.MustCompile(`(?:^|[^A-Za-z0-9_\]>])\([^)]`)},
	{":", regexp.MustCompile(`:(?:\s|$|\p{Han})`)},
	{";", regexp.MustCompile(`;(?:\s|$|\p{Han})`)},
	{",", regexp.MustCompile(`\p{Han},|,\s*\p{Han}`)},
	{".", regexp.MustCompile(`\p{Han}\.|[^\s\d.]\.\s*$`)},
	{`"`, regexp.MustCompile(`"`)},
	{"!?", regexp.MustCompile(`\p{Han}[!?]`)},
}

// spreadRE is a figure with its spread in ASCII parentheses, "2.0 (0.0–7.7)":
// a leak in a Chinese page even in a cell that holds only figures.
var spreadRE = regexp.MustCompile(`\d \(\d[\d.]*–`)

// formulaRE is an aside that is a formula, "(retry_cnt + 1) × 4.0": ASCII
// parentheses belong to it.
var formulaRE = regexp.MustCompile(`\([^()]*[+×*/=−·][^()]*\)`)

// labelWords are English words that show up alone in Chinese text when a
// label, unit or status was not translated. Names (rkey, veth, netem) and
// verbs' operations (write, send, poll) are not in it: those stay English.
var labelWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`bytes byte set unset correct wrong index client server
		requester responder packets packet switches resent sent received yes no ok
		and or the of to in on at for with from by is are was not per round trip trips expected
		error failed done running queued cancelled calls polling events message messages side value
		field state returned peer ours first captured truncated counter every process try above below
		ready more less than out band`) {
		m[w] = true
	}
	return m
}()

// Leaks returns what in s (one text node of a Chinese page) is Western
// punctuation or an English label word, outside quotations (“…”) and hex
// dumps.
func Leaks(s string) []string {
	s = hexBytes.ReplaceAllString(zhQuoted.ReplaceAllString(s, "“”"), " ")
	s = formulaRE.ReplaceAllString(s, "F")
	var out []string
	if spreadRE.MatchString(s) {
		out = append(out, "“(”: "+around(s, spreadRE.FindStringIndex(s)))
	}
	if hanRE.MatchString(s) {
		for _, r := range punctRules {
			if loc := r.re.FindStringIndex(s); loc != nil {
				out = append(out, "“"+r.name+"”: "+around(s, loc))
			}
		}
	}
	// a label word is a leak with or without Chinese around it: "(index 1)"
	// alone in a cell of a Chinese page
	for _, loc := range tokenRE.FindAllStringIndex(s, -1) {
		w := strings.TrimRight(s[loc[0]:loc[1]], ".")
		if labelWords[w] && !partOfName(s, loc) && !inTitle(s, loc) {
			out = append(out, "“"+w+"”: "+around(s, loc))
		}
	}
	return out
}

// zhQuoted is a quotation in Chinese quotation or title marks: what a
// system or a peer said, or a work's title, shown as is.
var zhQuoted = regexp.MustCompile(`“[^”]*”|‘[^’]*’|「[^」]*」|《[^》]*》`)

// partOfName reports a word that is part of an identifier or key=value
// ("case=all", "is_set", "--no"): joined to its neighbours without a space.
func partOfName(s string, loc []int) bool {
	if loc[0] > 0 {
		if r := rune(s[loc[0]-1]); r == '=' || r == '-' || r == '_' {
			return true
		}
		// an argument of a call: "ibv_modify_qp(client, RTR)"
		if s[loc[0]-1] == '(' && loc[0] > 1 && isIdent(s[loc[0]-2]) {
			return true
		}
	}
	if loc[1] < len(s) {
		if r := rune(s[loc[1]]); r == '=' || r == '(' || r == '_' || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// inTitle reports a word between two capitalised words: part of a title or
// a name from the spec ("Poll for Completion", "Analysis of the Memory
// Registration Process").
func inTitle(s string, loc []int) bool {
	before := tokenRE.FindAllString(s[:loc[0]], -1)
	after := tokenRE.FindAllString(s[loc[1]:], -1)
	capital := func(w string) bool { return w != "" && unicode.IsUpper([]rune(w)[0]) }
	// "Analysis of the Memory": walk over other small words each way
	capitalNext := func(ws []string, step int) bool {
		i := 0
		if step < 0 {
			i = len(ws) - 1
		}
		for ; i >= 0 && i < len(ws); i += step {
			if capital(ws[i]) {
				return true
			}
			if !labelWords[ws[i]] {
				return false
			}
		}
		return false
	}
	return capitalNext(before, -1) && capitalNext(after, 1)
}

// around is s near loc, for the report.
func around(s string, loc []int) string {
	from, to := max(0, loc[0]-24), min(len(s), loc[1]+24)
	for from > 0 && !utf8Start(s[from]) {
		from--
	}
	for to < len(s) && !utf8Start(s[to]) {
		to++
	}
	return "…" + s[from:to] + "…"
}

func isIdent(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
