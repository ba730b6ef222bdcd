package quiz

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Import of questions written for Moodle: the Aiken format and a subset of
// GIFT, converted into quiz.yaml text. What does not convert is reported as
// a Finding (source line and why) and left out; the output still needs an
// author: Aiken has no explanations, and quiz.yaml requires one, so
// `labserver check` lists each question that lacks it.
//
// Aiken: a question line, options "A. text" or "A) text", "ANSWER: B".
// GIFT: "::title:: prompt {…}" blocks separated by blank lines; inside the
// braces "=right ~wrong" (single), "~%50%a ~%50%b ~%-100%c" (multi: the
// options with a positive weight are correct), "#12.5:0.1" (numeric with
// tolerance), "#feedback" after an option, "####general feedback" (becomes
// the explanation). TRUE/FALSE, matching, short-answer and essay questions
// do not convert.

// Finding is one thing an import could not convert.
type Finding struct {
	Line    int
	Message string
}

type imported struct {
	id, typ, prompt, explanation string
	value, tolerance             float64
	options                      []importedOption
}

type importedOption struct {
	text, feedback string
	correct        bool
}

// The importers read text as UTF-8 (a zh course's options stay what they
// were), in time linear in the input: they slice the source and never
// build a string a byte at a time. The command bounds the input's size
// (MaxImport).

// MaxImport is the largest file `labserver import` converts: a course's
// question bank is a few hundred KiB; beyond this it is not one.
const MaxImport = 8 << 20

var (
	aikenOption = regexp.MustCompile(`^([A-Za-z])[.)]\s+(.*)$`)
	giftWeight  = regexp.MustCompile(`^%(-?[0-9.]+)%`)
)

// ImportAiken converts Aiken text; prefix starts every question id
// ("lesson/q1", "lesson/q2"…), lang is the language of the texts.
func ImportAiken(src, prefix, lang string) (yaml string, findings []Finding) {
	var qs []imported
	var cur *imported
	var prompt []string // the current question's prompt lines
	start := 0
	optRE := aikenOption
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	for i, raw := range lines {
		line := strings.TrimSpace(raw)
		n := i + 1
		switch {
		case line == "":
			continue
		case cur == nil:
			cur = &imported{typ: "single"}
			prompt = append(prompt[:0], line)
			start = n
		case strings.HasPrefix(strings.ToUpper(line), "ANSWER:"):
			ans := strings.ToUpper(strings.TrimSpace(line[len("ANSWER:"):]))
			ok := false
			for j := range cur.options {
				if len(ans) == 1 && int(ans[0]-'A') == j {
					cur.options[j].correct, ok = true, true
				}
			}
			switch {
			case !ok:
				findings = append(findings, Finding{n, fmt.Sprintf("ANSWER %q names no option of the question at line %d: skipped", ans, start)})
			case len(cur.options) < 2:
				findings = append(findings, Finding{start, "a question needs at least two options: skipped"})
			default:
				cur.prompt = strings.Join(prompt, "\n")
				qs = append(qs, *cur)
			}
			cur = nil
		default:
			if m := optRE.FindStringSubmatch(line); m != nil && int(strings.ToUpper(m[1])[0]-'A') == len(cur.options) {
				cur.options = append(cur.options, importedOption{text: m[2]})
			} else if len(cur.options) == 0 {
				prompt = append(prompt, line) // a prompt over several lines
			} else {
				findings = append(findings, Finding{n, fmt.Sprintf("not an option (%q) of the question at line %d", line, start)})
			}
		}
	}
	if cur != nil {
		findings = append(findings, Finding{start, "question without an ANSWER: line: skipped"})
	}
	return writeImported(qs, prefix, lang), findings
}

// ImportGIFT converts the GIFT subset described above.
func ImportGIFT(src, prefix, lang string) (yaml string, findings []Finding) {
	var qs []imported
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	var block []string
	start := 0
	flush := func() {
		if len(block) == 0 {
			return
		}
		q, err := giftQuestion(strings.Join(block, "\n"))
		if err != "" {
			findings = append(findings, Finding{start, err + ": skipped"})
		} else {
			qs = append(qs, q)
		}
		block = nil
	}
	for i, raw := range lines {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "//") || strings.HasPrefix(line, "$CATEGORY") {
			continue
		}
		if line == "" {
			flush()
			continue
		}
		if len(block) == 0 {
			start = i + 1
		}
		block = append(block, line)
	}
	flush()
	return writeImported(qs, prefix, lang), findings
}

var giftTitle = regexp.MustCompile(`^::([^:]*)::`)

func giftQuestion(b string) (imported, string) {
	b = giftTitle.ReplaceAllString(b, "")
	open, closeAt := strings.Index(b, "{"), strings.LastIndex(b, "}")
	if open < 0 || closeAt < open {
		return imported{}, "no {answers} block"
	}
	q := imported{prompt: strings.TrimSpace(b[:open] + " " + b[closeAt+1:])}
	body := strings.TrimSpace(b[open+1 : closeAt])
	if g, rest, ok := strings.Cut(body, "####"); ok {
		q.explanation, body = strings.TrimSpace(rest), strings.TrimSpace(g)
	}
	switch {
	case body == "" || strings.EqualFold(body, "T") || strings.EqualFold(body, "F") || strings.EqualFold(body, "TRUE") || strings.EqualFold(body, "FALSE"):
		return imported{}, "true/false and essay questions do not convert (write them as single-choice questions)"
	case strings.HasPrefix(body, "#"):
		v, tol, ok := strings.Cut(strings.TrimSpace(body[1:]), ":")
		if strings.ContainsAny(v, "=~#") || strings.Contains(v, "..") {
			return imported{}, "numeric questions convert only as #value or #value:tolerance"
		}
		var err error
		if q.value, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
			return imported{}, fmt.Sprintf("numeric answer %q is not a number", v)
		}
		if ok {
			if q.tolerance, err = strconv.ParseFloat(strings.TrimSpace(tol), 64); err != nil || q.tolerance < 0 {
				return imported{}, fmt.Sprintf("tolerance %q is not a number >= 0", tol)
			}
		}
		q.typ = "numeric"
		return q, ""
	}
	if strings.Contains(body, "->") {
		return imported{}, "matching questions do not convert"
	}
	// Options start at '=' or '~' (not escaped with '\'); each is a slice
	// of body from its marker to the next ('=', '~' and '\' are ASCII, so
	// byte offsets never split a UTF-8 character).
	var opts []string
	from := -1
	for i := 0; i < len(body); i++ {
		c := body[i]
		if (c == '=' || c == '~') && (i == 0 || body[i-1] != '\\') {
			if from >= 0 {
				opts = append(opts, body[from:i])
			}
			from = i
			continue
		}
		if from < 0 {
			return imported{}, "answers must start with = or ~"
		}
	}
	if from >= 0 {
		opts = append(opts, body[from:])
	}
	weights := giftWeight
	multi := false
	for _, o := range opts {
		kind, text := o[0], strings.TrimSpace(o[1:])
		text, fb, _ := strings.Cut(text, "#")
		opt := importedOption{text: unescapeGIFT(strings.TrimSpace(text)), feedback: unescapeGIFT(strings.TrimSpace(fb)), correct: kind == '='}
		if m := weights.FindStringSubmatch(opt.text); m != nil {
			w, _ := strconv.ParseFloat(m[1], 64)
			opt.correct, multi = w > 0, true
			opt.text = strings.TrimSpace(opt.text[len(m[0]):])
		}
		q.options = append(q.options, opt)
	}
	right := 0
	for _, o := range q.options {
		if o.correct {
			right++
		}
	}
	switch {
	case len(q.options) < 2:
		return imported{}, "a question needs at least two options (short-answer questions do not convert)"
	case right == 0:
		return imported{}, "no correct option"
	case multi || right > 1:
		q.typ = "multi"
	default:
		q.typ = "single"
	}
	q.prompt = unescapeGIFT(q.prompt)
	q.explanation = unescapeGIFT(q.explanation)
	return q, ""
}

var giftUnescape = strings.NewReplacer(`\=`, "=", `\~`, "~", `\#`, "#", `\{`, "{", `\}`, "}", `\:`, ":")

func unescapeGIFT(s string) string { return giftUnescape.Replace(s) }

// writeImported prints quiz.yaml. Strings are double-quoted (JSON-style
// escapes are valid YAML), so commas, colons and braces need no care.
func writeImported(qs []imported, prefix, lang string) string {
	var b strings.Builder
	q := strconv.Quote
	text := func(s string) string { return "{" + lang + ": " + q(s) + "}" }
	b.WriteString("questions:\n")
	for i, iq := range qs {
		fmt.Fprintf(&b, "  - id: %s%d\n    type: %s\n    prompt: %s\n", prefix, i+1, iq.typ, text(iq.prompt))
		if iq.typ == "numeric" {
			fmt.Fprintf(&b, "    value: %s\n    tolerance: %s\n", strconv.FormatFloat(iq.value, 'g', -1, 64), strconv.FormatFloat(iq.tolerance, 'g', -1, 64))
		} else {
			b.WriteString("    options:\n")
			for j, o := range iq.options {
				fmt.Fprintf(&b, "      - id: %s\n", optionID(j))
				if o.correct {
					b.WriteString("        correct: true\n")
				}
				fmt.Fprintf(&b, "        text: %s\n", text(o.text))
				if o.feedback != "" {
					fmt.Fprintf(&b, "        feedback: %s\n", text(o.feedback))
				}
			}
		}
		if iq.explanation != "" {
			fmt.Fprintf(&b, "    explanation: %s\n", text(iq.explanation))
		}
	}
	return b.String()
}

// optionID is the id of the j-th option (from 0): a … z, then aa, ab, …
// (letters only, as quiz.yaml's option ids allow).
func optionID(j int) string {
	var b []byte
	for j++; j > 0; j = (j - 1) / 26 {
		b = append([]byte{byte('a' + (j-1)%26)}, b...)
	}
	return string(b)
}
