package lessons

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/yuin/goldmark"
	highlighting "github.com/yuin/goldmark-highlighting/v2"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/rdmalab/rdmalab/quiz"
)

// markdown is shared by every load: goldmark keeps per-document state in the
// parser.Context, so one configured instance serves concurrent renders.
// Raw HTML is not enabled (goldmark's default): lesson files may come from an
// instructor's folder and must not inject markup or scripts.
var markdown = goldmark.New(
	goldmark.WithExtensions(
		extension.GFM, // tables, strikethrough, task lists, autolinks
		// "\ " between two Chinese characters is a break point that renders
		// nothing. Soft line breaks and emphasis next to Chinese are cjk.go's.
		extension.NewCJK(extension.WithEscapedSpace()),
		highlighting.NewHighlighting(
			// CSS classes (chroma's standard short names under .chroma), not
			// inline styles, so the site's CSS can theme code for light and dark.
			highlighting.WithFormatOptions(chromahtml.WithClasses(true)),
			highlighting.WithGuessLanguage(false),
		),
	),
	goldmark.WithParserOptions(
		parser.WithAutoHeadingID(),
		parser.WithAttribute(), // "## Heading {#stable-id}" for anchors shared by both languages
		parser.WithInlineParsers(util.Prioritized(cjkEmphasisParser{}, 499)),
		parser.WithASTTransformers(util.Prioritized(cjkSoftBreaks{}, 100)),
	),
)

// headingIDs makes heading ids that keep Unicode letters (so Chinese headings
// get readable ids instead of goldmark's ASCII-only "heading-1") and stay
// unique on a page by numbering repeats.
type headingIDs struct{ used map[string]bool }

func (h *headingIDs) Generate(value []byte, _ ast.NodeKind) []byte {
	base := slugify(string(value))
	id := base
	for i := 1; h.used[id]; i++ {
		id = base + "-" + strconv.Itoa(i)
	}
	h.used[id] = true
	return []byte(id)
}

func (h *headingIDs) Put(value []byte) { h.used[string(value)] = true }

// slugify lowercases letters and digits of any script and joins the rest with
// single dashes: "为什么需要 RDMA：内核旁路" → "为什么需要-rdma-内核旁路".
func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(unicode.ToLower(r))
		default:
			dash = true
		}
	}
	if b.Len() == 0 {
		return "section"
	}
	return b.String()
}

// calloutLabels are the visible labels of :::note, :::warning and :::takeaway.
var calloutLabels = map[string]map[string]string{
	"note":     {"zh": "注意", "en": "Note"},
	"warning":  {"zh": "警告", "en": "Warning"},
	"takeaway": {"zh": "要点", "en": "Takeaways"},
}

// directiveNames lists the known one-line directives, for error messages.
const directiveNames = "::experiment, ::quiz, ::checkpoint, ::diagram, ::terminal"

// linkRef is an internal link whose target can only be checked once every
// lesson of the course is rendered.
type linkRef struct {
	file, lang string
	line       int
	slug       string // target lesson; "" = the same page
	fragment   string // heading id, "" = none
}

// pageRenderer turns one lesson file's body into segments.
type pageRenderer struct {
	ld            *loader
	checkpointAll bool // front matter `checkpoint: all`
	lesson        *Lesson
	file          string
	lang          string
	diags         *[]Diagnostic
	pc            parser.Context // shared by every Markdown piece: heading ids stay unique on the page
	buf           bytes.Buffer
	body          []Segment
	toc           []Heading
	ids           map[string]int // heading id → line
	qids          []string
	links         []linkRef
	callout       []piece // open callouts (and an open :::task)
	task          *openTask
	taskIDs       map[string]int // task id → line, on this page
	programIDs    map[string]int // program id → line, on this page
}

func (r *pageRenderer) errAt(line int, format string, args ...any) {
	*r.diags = append(*r.diags, Diagnostic{File: r.file, Line: line, Severity: Error, Message: fmt.Sprintf(format, args...)})
}

func (r *pageRenderer) warnAt(line int, format string, args ...any) {
	*r.diags = append(*r.diags, Diagnostic{File: r.file, Line: line, Severity: Warning, Message: fmt.Sprintf(format, args...)})
}

// render renders the body pieces into r.body, r.toc and r.links.
func (r *pageRenderer) render(pieces []piece) {
	r.pc = parser.NewContext(parser.WithIDs(&headingIDs{used: map[string]bool{}}))
	r.ids = map[string]int{}
	for _, p := range pieces {
		switch p.kind {
		case pieceMarkdown:
			r.markdown(p)
		case pieceOpen:
			r.openCallout(p)
		case pieceClose:
			if len(r.callout) == 0 {
				r.errAt(p.line, "::: closes a callout that was never opened")
				continue
			}
			top := r.callout[len(r.callout)-1]
			r.callout = r.callout[:len(r.callout)-1]
			if top.name == "task" || top.name == "program" {
				r.closeTask()
				continue
			}
			if top.name == "task-nested" {
				continue
			}
			r.buf.WriteString("</aside>\n")
		case pieceDirective:
			r.directive(p)
		case pieceMistyped:
			r.errAt(p.line, "%q is shown as text, not run as a directive: %s", strings.TrimSpace(string(p.src)), p.args)
			r.markdown(piece{kind: pieceMarkdown, line: p.line, src: p.src})
		}
	}
	for i := len(r.callout) - 1; i >= 0; i-- {
		if r.callout[i].name == "task-nested" {
			continue
		}
		r.errAt(r.callout[i].line, ":::%s is never closed (add a line with just :::)", r.callout[i].name)
		if r.callout[i].name == "task" || r.callout[i].name == "program" {
			r.closeTask()
			continue
		}
		r.buf.WriteString("</aside>\n")
	}
	r.flush()
	r.finish()
	r.tasksNeedTerminal()
	r.checkSources()
}

// flush moves buffered HTML into a segment.
func (r *pageRenderer) flush() {
	if r.buf.Len() == 0 {
		return
	}
	r.body = append(r.body, Segment{Kind: SegHTML, HTML: template.HTML(r.buf.String())})
	r.buf.Reset()
}

func (r *pageRenderer) openCallout(p piece) {
	if p.name == "task" || p.name == "program" {
		r.openTask(p) // task.go, program.go
		return
	}
	labels, ok := calloutLabels[p.name]
	if !ok {
		r.errAt(p.line, "unknown callout :::%s (known: :::note, :::warning, :::takeaway, :::task, :::program)", p.name)
		labels = calloutLabels["note"]
	}
	label := labels[r.lang]
	if p.args != "" {
		label = p.args
	}
	r.callout = append(r.callout, p)
	if endsWithHeading(r.buf.String()) && p.args == "" {
		// Right under a heading ("## Takeaways"): the heading is its title.
		fmt.Fprintf(&r.buf, "<aside class=\"callout callout-%s\" role=\"note\" aria-label=\"%s\">\n",
			html.EscapeString(p.name), html.EscapeString(label))
		return
	}
	fmt.Fprintf(&r.buf, "<aside class=\"callout callout-%s\" role=\"note\">\n<p class=\"callout-label\">%s</p>\n",
		html.EscapeString(p.name), html.EscapeString(label))
}

func (r *pageRenderer) directive(p piece) {
	args, err := splitArgs(p.args)
	if err != nil {
		r.errAt(p.line, "::%s: %v", p.name, err)
		return
	}
	if r.task != nil {
		r.errAt(p.line, "::%s cannot be inside a :::%s (close the %s with ::: first)", p.name, r.task.name, r.task.name)
		return
	}
	seg := Segment{Line: p.line}
	switch p.name {
	case "experiment":
		if len(args) == 0 || strings.Contains(args[0], "=") {
			r.errAt(p.line, "::experiment needs an experiment id first: ::experiment ID key=value…")
			return
		}
		if !idPattern.MatchString(args[0]) {
			r.errAt(p.line, "::experiment: id %q must be lower case letters, digits and dashes", args[0])
			return
		}
		params, err := parseParams(args[1:])
		if err != nil {
			r.errAt(p.line, "::experiment %s: %v", args[0], err)
			return
		}
		if r.ld.opt.CheckExperiment != nil {
			if err := r.ld.opt.CheckExperiment(args[0], params); err != nil {
				r.errAt(p.line, "::experiment %s: %v", args[0], err)
				return
			}
		}
		seg.Kind, seg.ID, seg.Params = SegExperiment, args[0], params
	case "quiz":
		if len(args) != 1 {
			r.errAt(p.line, "::quiz takes exactly one question id: ::quiz lesson/question")
			return
		}
		id := args[0]
		if !quiz.ValidQuestionID(id) {
			r.errAt(p.line, "::quiz: malformed question id %q", id)
			return
		}
		if r.ld.course.Questions[id] == nil {
			if len(r.ld.brokenQuiz) > 0 {
				// A quiz.yaml that cannot be read may hold this question: its
				// YAML error, reported first, is the one to fix.
				return
			}
			r.errAt(p.line, "::quiz %s: no question with this id in any quiz.yaml of the course", id)
			return
		}
		seg.Kind, seg.ID = SegQuiz, id
	case "checkpoint":
		if len(args) != 0 {
			r.errAt(p.line, "::checkpoint takes no arguments")
			return
		}
		if r.lesson.Quiz == nil || len(r.lesson.Quiz.Questions) == 0 {
			if r.ld.brokenQuiz[r.lesson.Slug] {
				return
			}
			r.errAt(p.line, "::checkpoint needs questions in %s/quiz.yaml", r.lesson.Slug)
			return
		}
		seg.Kind = SegCheckpoint // Questions are filled in by finish, once every ::quiz is known
		// The author's own heading right above it titles the checkpoint:
		// the widget then adds none of its own (one heading, one id).
		if n := len(r.toc); n > 0 {
			h := r.toc[n-1]
			seg.AfterHeading = h.ID == "checkpoint" || h.Text == "Checkpoint" || h.Text == "检查点"
			if seg.AfterHeading {
				seg.ID = h.ID // the heading the checkpoint section is labelled by
			}
		}
	case "diagram":
		if len(args) != 1 {
			r.errAt(p.line, "::diagram takes exactly one diagram id: ::diagram ID")
			return
		}
		d := diagrams[args[0]]
		if d == nil {
			r.errAt(p.line, "::diagram: unknown diagram %q (known: %s)", args[0], strings.Join(diagramIDs(), ", "))
			return
		}
		seg.Kind, seg.ID, seg.HTML = SegDiagram, args[0], d(r.lang)
	case "terminal":
		if len(args) != 0 {
			r.errAt(p.line, "::terminal takes no arguments")
			return
		}
		seg.Kind = SegTerminal
	case "task":
		r.errAt(p.line, "a task holds its text: write :::task ID SCRIPT on one line, the text, then a line with just :::")
		return
	default:
		r.errAt(p.line, "unknown directive ::%s (known: %s)", p.name, directiveNames)
		return
	}
	r.flush()
	r.body = append(r.body, seg)
}

// finish gives each ::checkpoint every question of the lesson and lists
// the page's questions in order of first appearance.
func (r *pageRenderer) finish() {
	seen := map[string]bool{}
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			r.qids = append(r.qids, id)
		}
	}
	for i := range r.body {
		s := &r.body[i]
		switch s.Kind {
		case SegQuiz:
			add(s.ID)
		case SegCheckpoint:
			// By default the checkpoint asks what the text did not: a
			// question placed with ::quiz (answered, credited) would open
			// the checkpoint half done. `checkpoint: all` in the front
			// matter asks every question again as a self-test. A lesson
			// whose text asks them all gets a checkpoint that asks none
			// again (re-asking the text's questions checks nothing new).
			placed := map[string]bool{}
			for _, o := range r.body {
				if o.Kind == SegQuiz {
					placed[o.ID] = true
				}
			}
			for _, q := range r.lesson.Quiz.Questions {
				if r.checkpointAll || !placed[q.ID] {
					s.Questions = append(s.Questions, q.ID)
				}
			}
			if len(s.Questions) == 0 && len(r.lesson.Quiz.Questions) > 0 {
				s.AllInBody = true
				r.warnAt(s.Line, "::checkpoint asks nothing the text did not: every question of quiz.yaml is placed with ::quiz, so the checkpoint shows only the score; add questions for the checkpoint to quiz.yaml, or write `checkpoint: all` in the front matter to ask them all again")
			}
			for _, id := range s.Questions {
				add(id)
			}
		}
	}
}

// markdown renders one Markdown piece: parse, check and rewrite links, collect
// headings, then render block by block so tables can get a scroll wrapper.
func (r *pageRenderer) markdown(p piece) {
	// goldmark is third-party code fed with author input: a panic in it
	// must become a finding, never take the server (or a reload) down.
	defer func() {
		if v := recover(); v != nil {
			r.errAt(p.line, "the Markdown renderer failed on this part of the file (%v); please report it with the file", v)
		}
	}()
	src := p.src
	doc := markdown.Parser().Parse(text.NewReader(src), parser.WithContext(r.pc))
	lineAt := func(off int) int { return p.line + bytes.Count(src[:min(off, len(src))], []byte("\n")) }
	htmlWarned := map[int]bool{}
	r.spacedImages(p)

	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			line := lineAt(blockOffset(n))
			idv, _ := n.AttributeString("id")
			id, _ := idv.([]byte)
			if prev, dup := r.ids[string(id)]; dup {
				r.errAt(line, "duplicate heading id %q (also on line %d)", id, prev)
			} else if reservedID(string(id)) {
				r.errAt(line, "heading id %q is used by the page itself: choose another {#id}", id)
			} else {
				r.ids[string(id)] = line
			}
			if n.Level == 1 {
				r.warnAt(line, "level-1 heading in the body: the page title comes from front matter, start sections at ##")
			}
			if n.Level == 2 || n.Level == 3 {
				r.toc = append(r.toc, Heading{Level: n.Level, ID: string(id), Text: plainText(n, src)})
			}
		case *ast.Link:
			n.Destination = []byte(r.resolve(string(n.Destination), false, lineAt(inlineOffset(n))))
		case *ast.Image:
			n.Destination = []byte(r.resolve(string(n.Destination), true, lineAt(inlineOffset(n))))
		case *ast.RawHTML, *ast.HTMLBlock:
			// One warning per line however many tags it holds; comments
			// (an author's notes) are fine.
			if raw := strings.TrimSpace(rawHTMLText(n, src)); strings.HasPrefix(raw, "<!--") {
				break
			}
			if line := lineAt(inlineOffset(n)); !htmlWarned[line] {
				htmlWarned[line] = true
				r.warnAt(line, "raw HTML is not rendered in lessons (use Markdown or a directive)")
			}
		}
		return ast.WalkContinue, nil
	})

	for c := doc.FirstChild(); c != nil; c = c.NextSibling() {
		_, isTable := c.(*extast.Table)
		if isTable {
			r.buf.WriteString("<div class=\"table-scroll\">\n")
		}
		if err := markdown.Renderer().Render(&r.buf, src, c); err != nil {
			r.errAt(lineAt(blockOffset(c)), "rendering Markdown: %v", err)
		}
		if isTable {
			r.buf.WriteString("</div>\n")
		}
	}
}

// reservedIDs are element ids the lesson page uses itself; a heading with
// one would duplicate it (skip link target, completion box…). "checkpoint"
// is not among them: the author's checkpoint heading carries it, and the
// ::checkpoint section under it then renders no id of its own.
var reservedIDs = map[string]bool{
	"main": true, "checkpoint-h": true, "complete": true, "lesson-body": true,
	"objectives-h": true, "prereqs-h": true, "refs-h": true, "toc-h": true, "theme-toggle": true,
	"worth-it": true, "worth-it-h": true, "cpu-budget-h": true,
}

// reservedID reports whether a heading id would clash with the page's own
// ids, including the question anchors (q-…, cp-…).
func reservedID(id string) bool {
	return reservedIDs[id] || strings.HasPrefix(id, "q-") || strings.HasPrefix(id, "cp-")
}

// rawHTMLText is the source text of a raw HTML node.
func rawHTMLText(n ast.Node, src []byte) string {
	var b strings.Builder
	switch n := n.(type) {
	case *ast.RawHTML:
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			b.Write(seg.Value(src))
		}
	case *ast.HTMLBlock:
		for i := 0; i < n.Lines().Len(); i++ {
			seg := n.Lines().At(i)
			b.Write(seg.Value(src))
		}
	}
	return b.String()
}

// spacedImage is an image whose path holds a space: CommonMark ends the
// destination at the space, so the image renders as text.
var spacedImage = regexp.MustCompile(`!\[[^\]]*\]\(([^)<>"']*\s[^)]*)\)`)

// spacedImages reports images whose path holds a space (outside code).
func (r *pageRenderer) spacedImages(p piece) {
	var fence byte
	var fenceN int
	for i, l := range strings.Split(string(p.src), "\n") {
		if fence != 0 {
			if c, k, info := fenceOf(l); c == fence && k >= fenceN && strings.TrimSpace(info) == "" {
				fence = 0
			}
			continue
		}
		if c, k, _ := fenceOf(l); c != 0 {
			fence, fenceN = c, k
			continue
		}
		for _, m := range spacedImage.FindAllStringSubmatch(l, -1) {
			dest := strings.TrimSpace(m[1])
			f := strings.Fields(dest)
			if len(f) >= 2 && strings.ContainsAny(f[1][:1], "\"'(") {
				continue // dest "title"
			}
			r.errAt(p.line+i, "image path %q has a space, so it shows as text: rename the file, or write %s",
				dest, strings.ReplaceAll(dest, " ", "%20"))
		}
	}
}

// resolve checks an internal link or image target and rewrites it to the URL
// the web layer serves: lesson pages at /lessons/<slug>, files of a lesson
// folder at /lessons/<slug>/assets/<path>. External URLs pass unchanged.
func (r *pageRenderer) resolve(dest string, image bool, line int) string {
	what := "link"
	if image {
		what = "image"
	}
	u, err := url.Parse(dest)
	if err != nil {
		r.errAt(line, "malformed %s target %q", what, dest)
		return dest
	}
	if u.Scheme != "" || u.Host != "" {
		return dest // external
	}
	if u.Path == "" { // "#fragment" or "?query" on this page
		if image {
			r.errAt(line, "image %q has no file name", dest)
		} else if u.Fragment != "" {
			r.links = append(r.links, linkRef{file: r.file, lang: r.lang, line: line, fragment: u.Fragment})
		}
		return dest
	}

	var rel string // target relative to the course root
	if strings.HasPrefix(u.Path, "/") {
		rest, ok := strings.CutPrefix(u.Path, "/lessons/")
		if !ok {
			if image {
				r.errAt(line, "image %q is an absolute path: put the file in the lesson folder and write a path relative to the lesson, e.g. images/%s",
					dest, path.Base(u.Path))
			}
			return dest // another page of the site (/lab, /runs): not ours to check
		}
		slug, file, _ := strings.Cut(strings.TrimSuffix(rest, "/"), "/")
		switch {
		case file == "":
			rel = slug
		case strings.HasPrefix(file, "assets/"):
			rel = slug + "/" + strings.TrimPrefix(file, "assets/")
		default:
			r.errAt(line, "broken %s %q: lesson files are served under /lessons/%s/assets/", what, dest, slug)
			return dest
		}
	} else {
		rel = path.Join(r.lesson.Slug, u.Path)
		if rel == "." || strings.HasPrefix(rel, "../") || rel == ".." {
			r.errAt(line, "broken %s %q: points outside the course folder", what, dest)
			return dest
		}
	}

	slug, file, _ := strings.Cut(rel, "/")
	out := &url.URL{RawQuery: u.RawQuery, Fragment: u.Fragment}
	if file == "" { // a lesson page
		if image {
			r.errAt(line, "image %q points to a lesson page, not a file", dest)
			return dest
		}
		r.links = append(r.links, linkRef{file: r.file, lang: r.lang, line: line, slug: slug, fragment: u.Fragment})
		out.Path = r.ld.lessonPath(slug)
		return out.String()
	}
	if !IsAsset(file) {
		r.errAt(line, "broken %s %q: only images and documents (%s) in a lesson folder are served", what, dest, strings.Join(assetExts, " "))
		return dest
	}
	if st, err := statFS(r.ld.fsys, slug+"/"+file); err != nil || st.IsDir() {
		r.errAt(line, "broken %s %q: no file %s", what, dest, slug+"/"+file)
		return dest
	}
	if link := symlinkIn(r.ld.fsys, slug, file); link != "" {
		// The server never follows links out of a lesson folder (OpenAsset).
		r.errAt(line, "%s %q: %s is a symbolic link, which the server does not serve: copy the file into the lesson folder", what, dest, link)
		return dest
	}
	out.Path = r.ld.lessonPath(slug) + "/assets/" + file
	return out.String()
}

// blockOffset is the byte offset of a block node's first line (or of its
// first descendant with lines, for containers such as lists).
func blockOffset(n ast.Node) int {
	for c := n; c != nil; c = c.FirstChild() {
		if c.Type() == ast.TypeBlock && c.Lines().Len() > 0 {
			return c.Lines().At(0).Start
		}
		if t, ok := c.(*ast.Text); ok {
			return t.Segment.Start
		}
	}
	return 0
}

// inlineOffset is the best known byte offset of an inline node: its first
// text, else the start of the enclosing block.
func inlineOffset(n ast.Node) int {
	var off = -1
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); ok && entering {
			off = t.Segment.Start
			return ast.WalkStop, nil
		}
		return ast.WalkContinue, nil
	})
	if off >= 0 {
		return off
	}
	if n.Type() == ast.TypeBlock && n.Lines().Len() > 0 {
		return n.Lines().At(0).Start
	}
	for p := n.Parent(); p != nil; p = p.Parent() {
		if p.Type() == ast.TypeBlock && p.Lines().Len() > 0 {
			return p.Lines().At(0).Start
		}
	}
	return 0
}

// plainText is the text of a heading without markup, for the TOC.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(src))
			if t.SoftLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(t.Value)
		}
		return ast.WalkContinue, nil
	})
	return strings.TrimSpace(b.String())
}

// headingAtEnd matches rendered HTML that ends with a heading.
var headingAtEnd = regexp.MustCompile(`(?s)<h[1-6][^>]*>(?:[^<]|<(?:[^/]|/[^h]))*</h[1-6]>\s*$`)

// endsWithHeading reports whether the HTML rendered so far ends with a
// heading (nothing but white space after it).
func endsWithHeading(html string) bool { return headingAtEnd.MatchString(html) }
