package quiz

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Langs are the languages every learner-facing text should exist in.
var Langs = []string{"zh", "en"}

var (
	// Question ids appear in URLs and HTML ids, so they stay plain:
	// lowercase words separated by '-', '_' or '.', joined by '/'.
	questionIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*$`)
	optionIDPattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
)

// Parse reads one quiz.yaml. The format is:
//
//	questions:
//	  - id: why-rdma/overheads
//	    type: multi                      # single | multi | numeric | order
//	    prompt: {zh: "…", en: "…"}       # Markdown
//	    options:                         # single/multi: choices; order: steps in the correct order
//	      - id: copies
//	        correct: true                # single/multi only
//	        text: {zh: "…", en: "…"}
//	        feedback: {zh: "…", en: "…"} # optional
//	    value: 12.5                      # numeric only
//	    tolerance: 0.1                   # numeric only, >= 0
//	    unit: GB/s                       # numeric only, optional
//	    explanation: {zh: "…", en: "…"}  # Markdown
//	    hint: {zh: "…", en: "…"}         # optional
//
// The returned Set holds every question that has an id, in file order, even
// when findings were made, so a caller can still resolve references and avoid
// cascading "unknown id" reports. Findings come back as FileErrors: when it
// holds only warnings (HasErrors is false) the Set is complete and usable.
// Only an unreadable file (YAML syntax) returns a nil Set.
func Parse(file string, data []byte) (*Set, error) {
	p := &fileParser{file: file}
	set := &Set{File: file}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		var syn *yaml.SyntaxError
		if errors.As(err, &syn) && syn.Token != nil && syn.Token.Position != nil {
			p.errs = append(p.errs, FileError{File: file, Line: syn.Token.Position.Line, Message: "YAML: " + syn.Message})
		} else {
			p.errs = append(p.errs, FileError{File: file, Line: 1, Message: "YAML: " + firstLine(err.Error())})
		}
		return nil, p.errs
	}
	p.parseFile(f, set)
	if len(p.errs) > 0 {
		slices.SortStableFunc(p.errs, func(a, b FileError) int { return a.Line - b.Line })
		return set, p.errs
	}
	return set, nil
}

type fileParser struct {
	file string
	errs FileErrors
}

func (p *fileParser) errorf(n ast.Node, format string, args ...any) {
	p.errs = append(p.errs, FileError{File: p.file, Line: lineOf(n), Message: fmt.Sprintf(format, args...)})
}

func (p *fileParser) warnf(n ast.Node, format string, args ...any) {
	p.errs = append(p.errs, FileError{File: p.file, Line: lineOf(n), Message: fmt.Sprintf(format, args...), Warning: true})
}

func (p *fileParser) parseFile(f *ast.File, set *Set) {
	var docs []*ast.DocumentNode
	for _, d := range f.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		p.errs = append(p.errs, FileError{File: p.file, Line: 1, Message: "the file is empty: expected a `questions:` list"})
		return
	}
	if len(docs) > 1 {
		p.errorf(docs[1].Body, "only one YAML document is allowed per quiz file")
	}
	top, ok := p.mapping(docs[0].Body, "the top level")
	if !ok {
		return
	}
	var list ast.Node
	for _, kv := range top {
		switch kv.key {
		case "questions":
			list = kv.value
		default:
			p.errorf(kv.keyNode, "unknown key %q at the top level (expected `questions`)", kv.key)
		}
	}
	if list == nil {
		p.errorf(docs[0].Body, "missing `questions:` list")
		return
	}
	items, ok := p.sequence(list, "questions")
	if !ok {
		return
	}
	if len(items) == 0 {
		p.errorf(list, "`questions` is empty")
	}
	seen := map[string]int{}
	for _, item := range items {
		q := p.parseQuestion(item)
		if q == nil || q.ID == "" {
			continue
		}
		if first, dup := seen[q.ID]; dup {
			p.errorf(item, "duplicate question id %q (first defined on line %d)", q.ID, first)
			continue
		}
		seen[q.ID] = q.Line
		set.Questions = append(set.Questions, q)
	}
}

// keyValue is one entry of a YAML mapping with its key as text.
type keyValue struct {
	key     string
	keyNode ast.Node
	value   ast.Node
}

func (p *fileParser) mapping(n ast.Node, what string) ([]keyValue, bool) {
	n = unwrap(n)
	var values []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		values = m.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{m}
	case *ast.AliasNode:
		p.errorf(n, "%s: YAML aliases are not supported in quiz files", what)
		return nil, false
	default:
		p.errorf(n, "%s must be a mapping (key: value), found %s", what, kindOf(n))
		return nil, false
	}
	out := make([]keyValue, 0, len(values))
	seen := map[string]bool{}
	for _, mv := range values {
		if mv.Key.IsMergeKey() {
			p.errorf(mv.Key, "%s: YAML merge keys (<<) are not supported in quiz files", what)
			continue
		}
		key, ok := scalarText(mv.Key)
		if !ok {
			p.errorf(mv.Key, "%s: keys must be plain words", what)
			continue
		}
		if seen[key] {
			p.errorf(mv.Key, "%s: duplicate key %q", what, key)
			continue
		}
		seen[key] = true
		out = append(out, keyValue{key: key, keyNode: mv.Key, value: mv.Value})
	}
	return out, true
}

func (p *fileParser) sequence(n ast.Node, what string) ([]ast.Node, bool) {
	n = unwrap(n)
	s, ok := n.(*ast.SequenceNode)
	if !ok {
		p.errorf(n, "`%s` must be a list (- item), found %s", what, kindOf(n))
		return nil, false
	}
	return s.Values, true
}

func (p *fileParser) str(n ast.Node, what string) (string, bool) {
	s, ok := scalarText(unwrap(n))
	if !ok {
		p.errorf(n, "`%s` must be a single value, found %s", what, kindOf(unwrap(n)))
		return "", false
	}
	return strings.TrimSpace(s), true
}

func (p *fileParser) number(n ast.Node, what string) (float64, bool) {
	n = unwrap(n)
	switch n.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
	default:
		p.errorf(n, "`%s` must be a number, found %s", what, kindOf(n))
		return 0, false
	}
	s, _ := scalarText(n)
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		p.errorf(n, "`%s` must be a finite number, found %q", what, s)
		return 0, false
	}
	return f, true
}

func (p *fileParser) boolean(n ast.Node, what string) (bool, bool) {
	b, ok := unwrap(n).(*ast.BoolNode)
	if !ok {
		p.errorf(n, "`%s` must be true or false, found %s", what, kindOf(unwrap(n)))
		return false, false
	}
	return b.Value, true
}

// text reads a {zh: …, en: …} mapping. A missing language is a warning when
// required is set (the page falls back to the other language); no text at all
// is an error.
func (p *fileParser) text(n ast.Node, what string, required bool) Text {
	kvs, ok := p.mapping(n, "`"+what+"`")
	if !ok {
		return nil
	}
	t := Text{}
	for _, kv := range kvs {
		if !slices.Contains(Langs, kv.key) {
			if _, null := kv.value.(*ast.NullNode); null || kv.value == nil {
				// {zh: 甲, 乙, en: …}: YAML split the text at the comma.
				p.errorf(kv.keyNode, "`%s`: %q is not a language: a comma or colon inside {zh: …, en: …} splits the text; quote it: {zh: \"…\", en: \"…\"}", what, kv.key)
				continue
			}
			p.errorf(kv.keyNode, "`%s`: unknown language %q (use %s)", what, kv.key, strings.Join(Langs, ", "))
			continue
		}
		s, ok := p.str(kv.value, what+"."+kv.key)
		if !ok {
			continue
		}
		if s == "" {
			p.errorf(kv.value, "`%s.%s` is empty", what, kv.key)
			continue
		}
		t[kv.key] = s
	}
	if len(t) == 0 {
		p.errorf(n, "`%s` has no text in any language", what)
		return nil
	}
	if required {
		for _, l := range Langs {
			if t[l] == "" {
				p.warnf(n, "`%s` has no %q text (the page falls back to another language)", what, l)
			}
		}
	}
	return t
}

var questionKeys = []string{"id", "type", "prompt", "options", "value", "tolerance", "unit", "explanation", "hint"}

func (p *fileParser) parseQuestion(item ast.Node) *Question {
	kvs, ok := p.mapping(item, "a question")
	if !ok {
		return nil
	}
	q := &Question{File: p.file, Line: lineOf(item)}
	fields := map[string]keyValue{}
	for _, kv := range kvs {
		if !slices.Contains(questionKeys, kv.key) {
			p.errorf(kv.keyNode, "unknown key %q in a question (known: %s)", kv.key, strings.Join(questionKeys, ", "))
			continue
		}
		fields[kv.key] = kv
	}
	if kv, ok := fields["id"]; ok {
		if id, ok := p.str(kv.value, "id"); ok {
			if ValidQuestionID(id) {
				q.ID = id
			} else {
				p.errorf(kv.value, "question id %q must be lowercase words (a-z, 0-9, '-', '_', '.') joined by '/'", id)
			}
		}
	} else {
		p.errorf(item, "question without `id`")
	}
	name := q.ID
	if name == "" {
		name = "question"
	}
	if kv, ok := fields["type"]; ok {
		if s, ok := p.str(kv.value, "type"); ok {
			switch t := Type(s); t {
			case Single, Multi, Numeric, Order:
				q.Type = t
			default:
				p.errorf(kv.value, "%s: unknown type %q (use single, multi, numeric or order)", name, s)
			}
		}
	} else {
		p.errorf(item, "%s: missing `type`", name)
	}
	if kv, ok := fields["prompt"]; ok {
		q.Prompt = p.text(kv.value, "prompt", true)
	} else {
		p.errorf(item, "%s: missing `prompt`", name)
	}
	if kv, ok := fields["explanation"]; ok {
		q.Explanation = p.text(kv.value, "explanation", true)
	} else {
		p.errorf(item, "%s: missing `explanation`", name)
	}
	if kv, ok := fields["hint"]; ok {
		q.Hint = p.text(kv.value, "hint", true)
	}

	switch q.Type {
	case Single, Multi, Order:
		for _, k := range []string{"value", "tolerance", "unit"} {
			if kv, ok := fields[k]; ok {
				p.errorf(kv.keyNode, "%s: `%s` applies only to numeric questions", name, k)
			}
		}
		kv, ok := fields["options"]
		if !ok {
			p.errorf(item, "%s: missing `options`", name)
			break
		}
		p.parseOptions(q, name, kv.value)
	case Numeric:
		if kv, ok := fields["options"]; ok {
			p.errorf(kv.keyNode, "%s: numeric questions take `value` and `tolerance`, not `options`", name)
		}
		if kv, ok := fields["value"]; ok {
			q.Value, _ = p.number(kv.value, "value")
		} else {
			p.errorf(item, "%s: numeric question without `value`", name)
		}
		if kv, ok := fields["tolerance"]; ok {
			if tol, ok := p.number(kv.value, "tolerance"); ok {
				if tol < 0 {
					p.errorf(kv.value, "%s: `tolerance` must be >= 0, found %v", name, tol)
				} else {
					q.Tolerance = tol
				}
			}
		} else {
			p.errorf(item, "%s: numeric question without `tolerance` (write 0 for an exact answer)", name)
		}
		if kv, ok := fields["unit"]; ok {
			q.Unit, _ = p.str(kv.value, "unit")
		}
	}
	return q
}

var optionKeys = []string{"id", "text", "correct", "feedback"}

func (p *fileParser) parseOptions(q *Question, name string, list ast.Node) {
	items, ok := p.sequence(list, "options")
	if !ok {
		return
	}
	seen := map[string]bool{}
	correct := 0
	for _, item := range items {
		kvs, ok := p.mapping(item, "an option")
		if !ok {
			continue
		}
		o := Option{}
		hasID, hasText := false, false
		for _, kv := range kvs {
			switch kv.key {
			case "id":
				hasID = true
				id, ok := p.str(kv.value, "id")
				if !ok {
					continue
				}
				switch {
				case !optionIDPattern.MatchString(id):
					p.errorf(kv.value, "%s: option id %q must be letters, digits, '-' or '_'", name, id)
				case seen[id]:
					p.errorf(kv.value, "%s: duplicate option id %q", name, id)
				default:
					seen[id] = true
					o.ID = id
				}
			case "text":
				hasText = true
				o.Text = p.text(kv.value, "text", true)
			case "feedback":
				// Feedback is optional, but once written it should exist in both languages.
				o.Feedback = p.text(kv.value, "feedback", true)
			case "correct":
				if q.Type == Order {
					p.errorf(kv.keyNode, "%s: order questions take the correct order from the list; `correct` does not apply", name)
					continue
				}
				o.Correct, _ = p.boolean(kv.value, "correct")
			default:
				p.errorf(kv.keyNode, "%s: unknown key %q in an option (known: %s)", name, kv.key, strings.Join(optionKeys, ", "))
			}
		}
		if !hasID {
			p.errorf(item, "%s: option without `id`", name)
		}
		if !hasText {
			p.errorf(item, "%s: option %q without `text`", name, o.ID)
		}
		if o.ID == "" {
			continue
		}
		if o.Correct {
			correct++
		}
		q.Options = append(q.Options, o)
	}
	if len(items) < 2 {
		p.errorf(list, "%s: %s questions need at least 2 options, found %d", name, q.Type, len(items))
	}
	switch q.Type {
	case Single:
		if correct != 1 {
			p.errorf(list, "%s: single-choice questions need exactly one option with `correct: true`, found %d", name, correct)
		}
	case Multi:
		if correct == 0 {
			p.errorf(list, "%s: multi-choice questions need at least one option with `correct: true`", name)
		}
	}
}

// unwrap looks through anchors and tags to the node carrying the value.
func unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		default:
			return n
		}
	}
}

// scalarText is the text of a scalar as written (so "12.50" stays "12.50").
func scalarText(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return n.GetToken().Value, true
	case *ast.NullNode:
		return "", true
	}
	return "", false
}

func kindOf(n ast.Node) string {
	switch n.(type) {
	case nil:
		return "nothing"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.NullNode:
		return "an empty value"
	case *ast.AliasNode:
		return "an alias"
	}
	return "a " + strings.ToLower(n.Type().String())
}

// lineOf is the 1-based line where n starts (0 if unknown).
func lineOf(n ast.Node) int {
	if n == nil {
		return 0
	}
	if m, ok := n.(*ast.MappingNode); ok && len(m.Values) > 0 {
		n = m.Values[0].Key
	}
	if mv, ok := n.(*ast.MappingValueNode); ok {
		n = mv.Key
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return 0
	}
	return tk.Position.Line
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// ValidQuestionID reports whether id has the form of a question id
// ("lesson/question", lower case, digits, '.', '_' and '-'). Lessons use it
// for ::quiz directives so both places accept the same ids.
func ValidQuestionID(id string) bool {
	return questionIDPattern.MatchString(id)
}
