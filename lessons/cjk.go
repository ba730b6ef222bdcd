package lessons

import (
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Two things CommonMark gets wrong for Chinese, fixed here instead of by
// goldmark's CJK extension's line-break styles:
//
//   - A soft line break between two Chinese characters must vanish (a space
//     there is a typo in Chinese), but every other soft break must stay a
//     space, as CommonMark says. goldmark's EastAsianLineBreaksCSS3Draft also
//     drops the break after any Unicode punctuation, ASCII '.', ',' and ')'
//     included ("First sentence.⏎Second" became "First sentence.Second"), and
//     every style of it drops the break outright when the next line starts
//     with emphasis, code or a link. cjkSoftBreaks decides from the real
//     characters on both sides instead.
//   - CommonMark's flanking rules refuse `**胶囊（capsule）**发`: the closing
//     `**` follows punctuation and is not followed by whitespace or
//     punctuation. Chinese puts no spaces around words, so the CommonMark
//     "CJK-friendly" amendment treats a CJK character on the other side like
//     whitespace; cjkEmphasisParser scans delimiters that way.

// wide reports a character that Chinese (or Japanese) prose sets without
// spaces around it: East Asian Wide or Fullwidth (Han, kana, full-width
// punctuation such as ，。（）「」), Hangul left out (Korean uses spaces).
func wide(r rune) bool {
	switch util.EastAsianWidth(r) {
	case "F", "W":
		return !unicode.Is(unicode.Hangul, r)
	}
	return false
}

// cjkSoftBreaks removes the soft line breaks that join two wide characters.
type cjkSoftBreaks struct{}

func (cjkSoftBreaks) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	src := reader.Source()
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		t, ok := n.(*ast.Text)
		if !entering || !ok || !t.SoftLineBreak() || t.HardLineBreak() {
			return ast.WalkContinue, nil
		}
		v := t.Segment.Value(src)
		if len(v) == 0 {
			return ast.WalkContinue, nil
		}
		last, _ := utf8.DecodeLastRune(v)
		if next, ok := firstRuneAfter(t, src); ok && wide(last) && wide(next) {
			t.SetSoftLineBreak(false)
		}
		return ast.WalkContinue, nil
	})
}

// firstRuneAfter is the first character rendered after n: in its next
// sibling (descending into emphasis, links and code), or after its parent
// when n ends an inline container.
func firstRuneAfter(n ast.Node, src []byte) (rune, bool) {
	for cur := n; cur != nil; cur = cur.Parent() {
		if cur.Type() == ast.TypeBlock {
			return 0, false
		}
		for s := cur.NextSibling(); s != nil; s = s.NextSibling() {
			if r, ok := firstRuneIn(s, src); ok {
				return r, true
			}
		}
	}
	return 0, false
}

// firstRuneIn is the first character of the text inside n, if any.
func firstRuneIn(n ast.Node, src []byte) (rune, bool) {
	var r rune
	found := false
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		var v []byte
		switch t := c.(type) {
		case *ast.Text:
			v = t.Segment.Value(src)
		case *ast.String:
			v = t.Value
		default:
			return ast.WalkContinue, nil
		}
		if len(v) > 0 {
			r, _ = utf8.DecodeRune(v)
			found = true
			return ast.WalkStop, nil
		}
		return ast.WalkContinue, nil
	})
	return r, found
}

// cjkEmphasisParser parses '*' and '_' runs like goldmark's emphasis parser,
// with the CJK-friendly flanking rules. It runs before goldmark's (lower
// priority number) and so replaces it.
type cjkEmphasisParser struct{}

func (cjkEmphasisParser) Trigger() []byte { return []byte{'*', '_'} }

func (cjkEmphasisParser) Parse(_ ast.Node, block text.Reader, pc parser.Context) ast.Node {
	before := block.PrecendingCharacter()
	line, segment := block.PeekLine()
	d := scanCJKDelimiter(line, before)
	if d == nil {
		return nil
	}
	d.Segment = segment.WithStop(segment.Start + d.OriginalLength)
	block.Advance(d.OriginalLength)
	pc.PushDelimiter(d)
	return d
}

// scanCJKDelimiter is parser.ScanDelimiter with the amendment: punctuation on
// one side of a run still lets it open (close) when the other side is a
// wide character, as it would when that side were whitespace.
func scanCJKDelimiter(line []byte, before rune) *parser.Delimiter {
	if len(line) == 0 || (line[0] != '*' && line[0] != '_') {
		return nil
	}
	c := line[0]
	j := 0
	for j < len(line) && line[j] == c {
		j++
	}
	after := ' '
	if j < len(line) {
		after = util.ToRune(line, j)
	}
	beforePunct, beforeSpace := util.IsPunctRune(before), util.IsSpaceRune(before)
	afterPunct, afterSpace := util.IsPunctRune(after), util.IsSpaceRune(after)
	left := !afterSpace && (!afterPunct || beforeSpace || beforePunct || wide(before))
	right := !beforeSpace && (!beforePunct || afterSpace || afterPunct || wide(after))
	var canOpen, canClose bool
	if c == '_' {
		canOpen = left && (!right || beforePunct)
		canClose = right && (!left || afterPunct)
	} else {
		canOpen, canClose = left, right
	}
	return parser.NewDelimiter(canOpen, canClose, j, c, emphasisDelimiters{})
}

// emphasisDelimiters pairs '*' with '*' and '_' with '_', as CommonMark does.
type emphasisDelimiters struct{}

func (emphasisDelimiters) IsDelimiter(b byte) bool { return b == '*' || b == '_' }

func (emphasisDelimiters) CanOpenCloser(opener, closer *parser.Delimiter) bool {
	return opener.Char == closer.Char
}

func (emphasisDelimiters) OnMatch(consumes int) ast.Node { return ast.NewEmphasis(consumes) }
