package lessons

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	yamlast "github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// frontMatter is the parsed YAML header of one index.<lang>.md file. Line
// numbers are file lines, so diagnostics point into the real file.
type frontMatter struct {
	Title         string
	Summary       string
	Order         int
	HasOrder      bool
	OrderLine     int // file line of `order:`
	Duration      string
	Objectives    []string
	Prerequisites []string
	Aliases       []string // old slugs of this lesson (redirected, progress moved)
	PrereqLines   []int    // file line of each prerequisite, for "unknown slug" errors
	References    []Reference
	Checkpoint    string // "all" or "" (the default: only questions the text did not ask)
	RevealAfter   int    // wrong attempts after which a question shows its answer; -1: not set
}

// frontMatterKeys are the keys an author may use; anything else is a warning
// because a typo ("sumary") would otherwise silently drop content.
var frontMatterKeys = []string{"title", "summary", "order", "duration", "objectives", "prerequisites", "references", "checkpoint", "reveal_after", "aliases"}

// splitFrontMatter separates "---\nYAML\n---\n" from the Markdown body.
// It returns the YAML, the body and the file line on which the body starts.
// ok is false when the file does not start with a front matter block; a
// block that is opened but never closed is reported through errLine.
func splitFrontMatter(src []byte) (yamlSrc, body []byte, bodyLine int, ok bool, errLine int) {
	src = bytes.TrimPrefix(src, []byte("\ufeff"))
	first, rest, found := bytes.Cut(src, []byte("\n"))
	if strings.TrimRight(string(first), " \t\r") != "---" || !found {
		return nil, src, 1, false, 0
	}
	line := 2
	off := len(first) + 1
	for len(rest) > 0 {
		l, next, more := bytes.Cut(rest, []byte("\n"))
		if s := strings.TrimRight(string(l), " \t\r"); s == "---" || s == "..." {
			yamlSrc = src[len(first)+1 : off]
			if more {
				return yamlSrc, next, line + 1, true, 0
			}
			return yamlSrc, nil, line + 1, true, 0
		}
		off += len(l) + 1
		line++
		rest = next
		if !more {
			break
		}
	}
	return nil, src, 1, false, 1
}

// parseFrontMatter reads the YAML header. base is the file line of the first
// YAML line (2 for a file starting with "---"). Problems are appended to
// diags; the returned value holds whatever could be read.
func parseFrontMatter(file string, yamlSrc []byte, base int, diags *[]Diagnostic) (fm frontMatter) {
	fm.RevealAfter = -1
	errAt := func(line int, format string, args ...any) {
		*diags = append(*diags, Diagnostic{File: file, Line: line, Severity: Error, Message: fmt.Sprintf(format, args...)})
	}
	warnAt := func(line int, format string, args ...any) {
		*diags = append(*diags, Diagnostic{File: file, Line: line, Severity: Warning, Message: fmt.Sprintf(format, args...)})
	}
	lineOf := func(n yamlast.Node) int {
		if n == nil || n.GetToken() == nil {
			return base
		}
		return base + n.GetToken().Position.Line - 1
	}

	f, err := parseYAML(yamlSrc)
	if err != nil {
		line := base
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil {
			line = base + ye.GetToken().Position.Line - 1
			errAt(line, "front matter: invalid YAML: %s", ye.GetMessage())
		} else {
			errAt(line, "front matter: invalid YAML: %v", err)
		}
		return fm
	}
	var root yamlast.Node
	if len(f.Docs) > 0 {
		root = f.Docs[0].Body
	}
	if len(f.Docs) > 1 {
		errAt(base, "front matter: holds more than one YAML document")
	}
	m, isMap := root.(*yamlast.MappingNode)
	if root == nil || !isMap {
		if root != nil {
			errAt(lineOf(root), "front matter: must be a mapping of keys (title: ..., order: ...)")
		} else {
			errAt(base-1, "front matter: is empty")
		}
		return fm
	}

	seen := map[string]int{}
	for _, kv := range m.Values {
		key := keyString(kv.Key)
		kline := lineOf(kv.Key)
		if prev, dup := seen[key]; dup {
			errAt(kline, "front matter: duplicate key %q (first on line %d)", key, prev)
			continue
		}
		seen[key] = kline
		v := unwrap(kv.Value)
		vline := lineOf(v)
		if v == nil {
			vline = kline
		}
		switch key {
		case "title", "summary":
			s, ok := scalarString(v)
			if !ok {
				errAt(vline, "front matter: %s must be text, got %s", key, nodeKind(v))
				continue
			}
			if strings.TrimSpace(s) == "" {
				errAt(vline, "front matter: %s is empty", key)
				continue
			}
			if key == "title" {
				fm.Title = strings.TrimSpace(s)
			} else {
				fm.Summary = strings.TrimSpace(s)
			}
		case "order":
			n, ok := v.(*yamlast.IntegerNode)
			if !ok {
				errAt(vline, "front matter: order must be a whole number, got %s", nodeKind(v))
				continue
			}
			i, err := strconv.Atoi(n.GetToken().Value)
			if err != nil {
				i, ok = intValue(n.Value)
				if !ok {
					errAt(vline, "front matter: order %s is out of range", n.GetToken().Value)
					continue
				}
			}
			if i < 0 {
				errAt(vline, "front matter: order must not be negative")
				continue
			}
			fm.Order, fm.HasOrder, fm.OrderLine = i, true, vline
		case "duration":
			switch d := v.(type) {
			case *yamlast.IntegerNode:
				// A bare number means minutes; the page language decides the unit word later.
				i, ok := intValue(d.Value)
				if !ok || i <= 0 {
					errAt(vline, "front matter: duration must be a positive number of minutes or text like \"40 min\"")
					continue
				}
				fm.Duration = strconv.Itoa(i)
			default:
				s, ok := scalarString(v)
				if !ok || strings.TrimSpace(s) == "" {
					errAt(vline, "front matter: duration must be a number of minutes or text like \"40 min\", got %s", nodeKind(v))
					continue
				}
				fm.Duration = strings.TrimSpace(s)
			}
		case "objectives":
			fm.Objectives = stringList(v, key, vline, lineOf, errAt)
		case "aliases":
			fm.Aliases = stringList(v, key, vline, lineOf, errAt)
		case "prerequisites":
			seq, ok := v.(*yamlast.SequenceNode)
			if v == nil {
				continue
			}
			if !ok {
				errAt(vline, "front matter: prerequisites must be a list of lesson slugs, got %s", nodeKind(v))
				continue
			}
			for _, it := range seq.Values {
				s, ok := scalarString(unwrap(it))
				if !ok || strings.TrimSpace(s) == "" {
					errAt(lineOf(it), "front matter: prerequisites: each item must be a lesson slug like 01-why-rdma, got %s", nodeKind(unwrap(it)))
					continue
				}
				fm.Prerequisites = append(fm.Prerequisites, strings.TrimSpace(s))
				fm.PrereqLines = append(fm.PrereqLines, lineOf(it))
			}
		case "references":
			fm.References = references(v, vline, lineOf, errAt, warnAt)
		case "checkpoint":
			s, ok := scalarString(v)
			s = strings.TrimSpace(s)
			if !ok || (s != "all" && s != "new") {
				errAt(vline, "front matter: checkpoint must be \"new\" (the default: only the questions the text did not ask) or \"all\"")
				continue
			}
			if s == "all" {
				fm.Checkpoint = "all"
			}
		case "reveal_after":
			n, ok := v.(*yamlast.IntegerNode)
			i, ok2 := 0, false
			if ok {
				i, ok2 = intValue(n.Value)
			}
			if !ok2 || i < 0 {
				errAt(vline, "front matter: reveal_after must be a whole number of wrong attempts (0: only \"show answer\" or a right answer reveal it)")
				continue
			}
			fm.RevealAfter = i
		default:
			warnAt(kline, "front matter: unknown key %q (known: %s)", key, strings.Join(frontMatterKeys, ", "))
		}
	}
	for _, req := range []string{"title", "summary", "order"} {
		if _, ok := seen[req]; !ok {
			errAt(base-1, "front matter: missing required key %q", req)
		}
	}
	return fm
}

// parseYAML parses without decoding so every node keeps its position. The
// parser is third-party code fed with author input: a panic in it must become
// a diagnostic, not take the server down.
func parseYAML(src []byte) (f *yamlast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("YAML parser failed: %v", r)
		}
	}()
	return parser.ParseBytes(src, 0)
}

func stringList(v yamlast.Node, key string, vline int, lineOf func(yamlast.Node) int, errAt func(int, string, ...any)) []string {
	if v == nil {
		return nil
	}
	seq, ok := v.(*yamlast.SequenceNode)
	if !ok {
		errAt(vline, "front matter: %s must be a list of text items, got %s", key, nodeKind(v))
		return nil
	}
	var out []string
	for _, it := range seq.Values {
		s, ok := scalarString(unwrap(it))
		if !ok || strings.TrimSpace(s) == "" {
			errAt(lineOf(it), "front matter: %s: each item must be non-empty text, got %s", key, nodeKind(unwrap(it)))
			continue
		}
		// "- one\n   - two" (the second dash indented one space more) is
		// one item "one - two" to YAML: say so instead of merging silently.
		if tok := unwrap(it).GetToken(); tok != nil {
			lines := strings.Split(tok.Origin, "\n")
			for i, l := range lines[1:] {
				if strings.HasPrefix(strings.TrimSpace(l), "- ") {
					errAt(lineOf(it)+i+1, "front matter: %s: this line is indented more than the item above, so YAML joins them into one item; start every item's dash in the same column", key)
					break
				}
			}
		}
		out = append(out, strings.TrimSpace(s))
	}
	return out
}

func references(v yamlast.Node, vline int, lineOf func(yamlast.Node) int, errAt, warnAt func(int, string, ...any)) []Reference {
	if v == nil {
		return nil
	}
	seq, ok := v.(*yamlast.SequenceNode)
	if !ok {
		errAt(vline, "front matter: references must be a list of {title, url}, got %s", nodeKind(v))
		return nil
	}
	var out []Reference
	for _, it := range seq.Values {
		m, ok := unwrap(it).(*yamlast.MappingNode)
		if !ok {
			errAt(lineOf(it), "front matter: references: each item needs title and url, got %s", nodeKind(unwrap(it)))
			continue
		}
		var r Reference
		for _, kv := range m.Values {
			k := keyString(kv.Key)
			s, ok := scalarString(unwrap(kv.Value))
			switch k {
			case "title", "url":
				if !ok || strings.TrimSpace(s) == "" {
					errAt(lineOf(kv.Key), "front matter: references: %s must be non-empty text", k)
					continue
				}
				if k == "title" {
					r.Title = strings.TrimSpace(s)
				} else {
					r.URL = strings.TrimSpace(s)
				}
			default:
				warnAt(lineOf(kv.Key), "front matter: references: unknown key %q (known: title, url)", k)
			}
		}
		line := lineOf(it)
		if r.Title == "" || r.URL == "" {
			errAt(line, "front matter: references: each item needs both title and url")
			continue
		}
		if u, err := url.Parse(r.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errAt(line, "front matter: references: url %q must be an absolute http(s) URL", r.URL)
			continue
		}
		out = append(out, r)
	}
	return out
}

// unwrap strips anchors and tags so "title: &t Foo" still reads as text.
func unwrap(n yamlast.Node) yamlast.Node {
	for {
		switch t := n.(type) {
		case *yamlast.AnchorNode:
			n = t.Value
		case *yamlast.TagNode:
			n = t.Value
		default:
			return n
		}
	}
}

func scalarString(n yamlast.Node) (string, bool) {
	switch t := n.(type) {
	case *yamlast.StringNode:
		return t.Value, true
	case *yamlast.LiteralNode:
		if t.Value == nil {
			return "", true
		}
		return t.Value.Value, true
	}
	return "", false
}

func keyString(k yamlast.MapKeyNode) string {
	if k == nil {
		return ""
	}
	if s, ok := scalarString(k); ok {
		return s
	}
	return k.String()
}

func intValue(v any) (int, bool) {
	switch x := v.(type) {
	case int64:
		if int64(int(x)) == x {
			return int(x), true
		}
	case uint64:
		if x <= uint64(^uint(0)>>1) {
			return int(x), true
		}
	}
	return 0, false
}

// nodeKind names a YAML value's type the way an author thinks of it.
func nodeKind(n yamlast.Node) string {
	switch n.(type) {
	case nil, *yamlast.NullNode:
		return "nothing"
	case *yamlast.StringNode, *yamlast.LiteralNode:
		return "text"
	case *yamlast.IntegerNode:
		return "a number"
	case *yamlast.FloatNode:
		return "a decimal number"
	case *yamlast.BoolNode:
		return "true/false"
	case *yamlast.SequenceNode:
		return "a list"
	case *yamlast.MappingNode, *yamlast.MappingValueNode:
		return "a mapping"
	}
	return n.Type().String()
}
