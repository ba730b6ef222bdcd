package lessons

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rdmalab/rdmalab/quiz"
)

// Options tune a load.
type Options struct {
	// CheckExperiment validates an ::experiment directive's id and preset
	// params against the sandbox registry; nil skips the check (tests, or a
	// build without the sandbox wired in).
	CheckExperiment func(id string, params map[string]string) error
	// CheckScript reads a :::task verify script for syntax without running
	// it (labserver: `sh -n`); it returns the line of the first error (0 if
	// unknown) and the shell's message. nil skips the check.
	CheckScript func(script []byte) (line int, msg string, err error)
	// CompileC compiles a :::program's C source (linking libs) and returns
	// the compiler's output; an error when it does not compile. Set by cmd
	// when the host has the guest's compiler (tcc); nil skips the check
	// (the guest suite compiles every program anyway).
	CompileC func(src []byte, libs []string) (string, error)
}

// LoadError is returned by Load when the content has errors. Its message is
// the diagnostics as "file:line: message" lines, the same as Check prints.
type LoadError struct {
	Diagnostics []Diagnostic // errors and warnings, sorted by file and line
}

func (e *LoadError) Error() string {
	var b strings.Builder
	for i, d := range e.Diagnostics {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.String())
	}
	return b.String()
}

// String formats the diagnostic as "file:line: message" ("file: message" when
// the finding has no line), with "warning: " before a warning's message.
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.File)
	if d.Line > 0 {
		b.WriteString(":" + strconv.Itoa(d.Line))
	}
	b.WriteString(": ")
	if d.Severity == Warning {
		b.WriteString("warning: ")
	}
	b.WriteString(d.Message)
	return b.String()
}

// slugPattern is the lesson folder name: a number for ordering, then words.
var slugPattern = regexp.MustCompile(`^[0-9]{2,}-[a-z0-9]+(-[a-z0-9]+)*$`)

// Load reads and renders every lesson folder at the root of fsys. Every page
// is rendered here, once; requests only assemble segments. Content errors
// come back as *LoadError; warnings ride along in Course.Warnings.
func Load(fsys fs.FS, opt Options) (*Course, error) {
	c, diags := load(fsys, opt)
	for _, d := range diags {
		if d.Severity == Error {
			return nil, &LoadError{Diagnostics: diags}
		}
	}
	c.Warnings = diags
	// Drafts load beside the course; their errors never stop it (drafts.go).
	c.Drafts, c.DraftFindings = loadDrafts(fsys, opt, c)
	return c, nil
}

// Check validates the course in fsys and returns its errors and warnings,
// sorted by file and line. An empty result means the course is clean.
func Check(fsys fs.FS, opt Options) []Diagnostic {
	c, diags := load(fsys, opt)
	// Drafts are checked too, their findings under _drafts/ (drafts.go).
	_, drafts := loadDrafts(fsys, opt, c)
	return append(diags, drafts...)
}

type loader struct {
	fsys   fs.FS
	opt    Options
	course *Course
	diags  []Diagnostic

	prereqs    map[string]frontMatter   // by file, for the cross-lesson checks
	brokenQuiz map[string]bool          // slugs whose quiz.yaml could not be read at all
	scripts    map[string]scriptResult  // task verify scripts by slug/path (task.go)
	programs   map[string]programResult // :::program folders by slug/dir (program.go)
	peerZh     map[string]peerZhResult  // peers' Chinese by slug/path (peerreport.go)

	// Drafts (drafts.go): outer is the course the drafts sit beside (nil
	// for the course itself), whose lessons drafts may link to and require
	// and whose question ids they may not reuse; slugs are this load's own
	// lesson folders.
	outer *Course
	slugs map[string]bool
}

func (ld *loader) errAt(file string, line int, format string, args ...any) {
	ld.diags = append(ld.diags, Diagnostic{File: file, Line: line, Severity: Error, Message: fmt.Sprintf(format, args...)})
}

func (ld *loader) warnAt(file string, line int, format string, args ...any) {
	ld.diags = append(ld.diags, Diagnostic{File: file, Line: line, Severity: Warning, Message: fmt.Sprintf(format, args...)})
}

// lessonSource is what load found in one folder before rendering.
type lessonSource struct {
	lesson *Lesson
	files  map[string]string // lang → file path
}

func load(fsys fs.FS, opt Options) (*Course, []Diagnostic) {
	return loadBeside(fsys, opt, nil)
}

// loadBeside loads the lessons of fsys; outer, when set, is the course
// they are drafts of (drafts.go).
func loadBeside(fsys fs.FS, opt Options, outer *Course) (*Course, []Diagnostic) {
	ld := &loader{
		fsys:       fsys,
		opt:        opt,
		course:     &Course{Questions: map[string]*quiz.Question{}, fsys: fsys},
		prereqs:    map[string]frontMatter{},
		brokenQuiz: map[string]bool{},
		outer:      outer,
		slugs:      map[string]bool{},
	}
	srcs := ld.scan()
	for _, s := range srcs {
		ld.slugs[s.lesson.Slug] = true
	}
	for _, s := range srcs {
		ld.readQuiz(s.lesson)
	}
	var links []linkRef
	for _, s := range srcs {
		links = append(links, ld.readPages(s)...)
	}
	ld.crossCheck(srcs, links)

	for _, s := range srcs {
		if len(s.lesson.Pages) > 0 {
			ld.course.Lessons = append(ld.course.Lessons, s.lesson)
		}
	}
	sort.SliceStable(ld.course.Lessons, func(i, j int) bool {
		a, b := ld.course.Lessons[i], ld.course.Lessons[j]
		if a.Order != b.Order {
			return a.Order < b.Order
		}
		return a.Slug < b.Slug
	})
	// A quiz.yaml that YAML cannot read comes first in its lesson folder:
	// fixing it is what makes the rest of the findings meaningful.
	brokenFirst := func(file string) string {
		dir, base := path.Split(file)
		if base == "quiz.yaml" && ld.brokenQuiz[strings.TrimSuffix(dir, "/")] {
			return dir + "\x00"
		}
		return file
	}
	sort.SliceStable(ld.diags, func(i, j int) bool {
		a, b := ld.diags[i], ld.diags[j]
		if fa, fb := brokenFirst(a.File), brokenFirst(b.File); fa != fb {
			return fa < fb
		}
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	return ld.course, ld.diags
}

// scan finds lesson folders: every directory at the root holding an
// index.<lang>.md. Hidden and "_"-prefixed folders are skipped.
func (ld *loader) scan() []*lessonSource {
	entries, err := fs.ReadDir(ld.fsys, ".")
	if err != nil {
		ld.errAt(".", 0, "cannot read the course folder: %v", err)
		return nil
	}
	var out []*lessonSource
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			continue
		}
		files, err := fs.ReadDir(ld.fsys, name)
		if err != nil {
			ld.errAt(name, 0, "cannot read lesson folder: %v", err)
			continue
		}
		src := &lessonSource{lesson: &Lesson{Slug: name, Pages: map[string]*Page{}}, files: map[string]string{}}
		misnamed := 0
		for _, f := range files {
			if f.Name() == "index.md" && !f.IsDir() {
				// The most common slip: the page is there but has no language.
				ld.errAt(name+"/index.md", 0, "a lesson page is named index.LANG.md: rename this file to index.zh.md or index.en.md")
				misnamed++
				continue
			}
			lang, ok := strings.CutPrefix(f.Name(), "index.")
			lang, ok2 := strings.CutSuffix(lang, ".md")
			if !ok || !ok2 || f.IsDir() {
				continue
			}
			if !isLang(lang) {
				want := "index.zh.md or index.en.md"
				if l := strings.ToLower(lang); strings.HasPrefix(l, "zh") {
					want = "index.zh.md"
				} else if strings.HasPrefix(l, "en") {
					want = "index.en.md"
				}
				ld.errAt(name+"/"+f.Name(), 0, "language %q is not served (known: %s): rename this file to %s", lang, strings.Join(Langs, ", "), want)
				misnamed++
				continue
			}
			src.files[lang] = name + "/" + f.Name()
		}
		if len(src.files) == 0 {
			if misnamed == 0 {
				ld.warnAt(name, 0, "folder has no index.zh.md or index.en.md; not a lesson, ignored (drafts go in _drafts/, which only instructors see)")
			}
			continue
		}
		if !slugPattern.MatchString(name) {
			ld.errAt(name, 0, "lesson folder name %q must look like NN-slug (digits, dash, lower-case words), e.g. 01-why-rdma", name)
			continue
		}
		out = append(out, src)
	}
	return out
}

func isLang(l string) bool {
	for _, k := range Langs {
		if k == l {
			return true
		}
	}
	return false
}

// readQuiz parses <slug>/quiz.yaml when present and adds its questions to
// the course, so ::quiz ids can be resolved from any lesson.
func (ld *loader) readQuiz(l *Lesson) {
	file := l.Slug + "/quiz.yaml"
	data, err := fs.ReadFile(ld.fsys, file)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		ld.errAt(file, 0, "cannot read: %v", err)
		return
	}
	set, err := quiz.Parse(file, data)
	if err != nil {
		var fe quiz.FileErrors
		if !errors.As(err, &fe) {
			ld.errAt(file, 0, "%v", err)
			return
		}
		for _, e := range fe {
			sev := Error
			if e.Warning {
				sev = Warning
			}
			f := e.File
			if f == "" {
				f = file
			}
			ld.diags = append(ld.diags, Diagnostic{File: f, Line: e.Line, Severity: sev, Message: e.Message})
		}
	}
	if set == nil {
		ld.brokenQuiz[l.Slug] = true // reported above; spare the lesson's ::checkpoint a second error
		return
	}
	l.Quiz = set
	RenderQuiz(set)
	for _, q := range set.Questions {
		ld.quizHTML(file, q)
	}
	for _, q := range set.Questions {
		if prev := ld.course.Questions[q.ID]; prev != nil {
			ld.errAt(file, q.Line, "question id %q is already used at %s:%d", q.ID, prev.File, prev.Line)
			continue
		}
		if prev := ld.outerQuestion(q.ID); prev != nil {
			ld.errAt(file, q.Line, "question id %q is already used by the course at %s:%d: give the draft's question an id of its own", q.ID, prev.File, prev.Line)
			continue
		}
		ld.course.Questions[q.ID] = q
	}
}

// readPages parses and renders every language file of a lesson and fills in
// fallback pages for missing translations.
func (ld *loader) readPages(s *lessonSource) []linkRef {
	var links []linkRef
	l := s.lesson
	for _, lang := range Langs {
		file, ok := s.files[lang]
		if !ok {
			continue
		}
		data, err := fs.ReadFile(ld.fsys, file)
		if err != nil {
			ld.errAt(file, 0, "cannot read: %v", err)
			continue
		}
		p, pl := ld.page(l, lang, file, data)
		if p != nil {
			l.Pages[lang] = p
			links = append(links, pl...)
		}
	}
	if len(l.Pages) == 0 {
		return links
	}
	first := l.Pages[Langs[0]]
	if first == nil {
		for _, lang := range Langs {
			if first = l.Pages[lang]; first != nil {
				break
			}
		}
	}
	l.Order = first.Order
	if fm := ld.prereqs[first.File]; fm.HasOrder && ld.outer == nil { // drafts are renumbered when published
		// "06-…" with order: 2 shows a second "02" on the home page.
		if n, ok := folderNumber(l.Slug); ok && n != fm.Order {
			ld.warnAt(first.File, fm.OrderLine, "order %d but the folder is numbered %02d: the course shows the lesson as number %02d, sorted by order; make them agree (rename the folder or change order)", fm.Order, n, fm.Order)
		}
	}
	ld.lessonTasks(l) // before fallback pages are made: they repeat another language's tasks
	ld.lessonPrograms(l)
	for _, lang := range Langs {
		p := l.Pages[lang]
		if p == nil {
			ld.warnAt(first.File, 1, "missing translation: no %s/index.%s.md, the %s page is shown instead", l.Slug, lang, first.SourceLang)
			fb := *first
			fb.Lang, fb.Fallback = lang, true
			l.Pages[lang] = &fb
			continue
		}
		if p != first && p.Order != first.Order && ld.prereqs[p.File].HasOrder && ld.prereqs[first.File].HasOrder {
			ld.warnAt(p.File, 1, "order %d differs from %s (order %d); the lesson is sorted by %d", p.Order, first.File, first.Order, first.Order)
		}
	}
	return links
}

// page reads one index.<lang>.md: front matter, then the rendered body.
func (ld *loader) page(l *Lesson, lang, file string, data []byte) (*Page, []linkRef) {
	if !utf8.Valid(data) {
		// Go on with U+FFFD in place of the bad bytes, so the author sees
		// every other finding too (and goldmark never sees invalid UTF-8).
		ld.errAt(file, invalidUTF8Line(data), "file is not valid UTF-8 (save it as UTF-8)")
		data = bytes.ToValidUTF8(data, []byte("\uFFFD"))
	}
	yamlSrc, body, bodyLine, ok, openLine := splitFrontMatter(data)
	if openLine > 0 {
		ld.errAt(file, openLine, "front matter is opened with --- but never closed")
		return nil, nil
	}
	if !ok {
		ld.errAt(file, 1, "missing front matter: start the file with --- then title:, summary:, order: and close it with ---")
		return nil, nil
	}
	fm := parseFrontMatter(file, yamlSrc, 2, &ld.diags)
	ld.prereqs[file] = fm

	r := &pageRenderer{ld: ld, lesson: l, file: file, lang: lang, diags: &ld.diags, checkpointAll: fm.Checkpoint == "all"}
	r.render(splitBody(body, bodyLine))
	p := &Page{
		Lang:          lang,
		SourceLang:    lang,
		File:          file,
		Title:         fm.Title,
		Summary:       fm.Summary,
		Order:         fm.Order,
		Duration:      duration(fm.Duration, lang),
		Objectives:    fm.Objectives,
		Prerequisites: fm.Prerequisites,
		Aliases:       fm.Aliases,
		References:    fm.References,
		TOC:           r.toc,
		Body:          r.body,
		QuestionIDs:   r.qids,
		CheckpointAll: fm.Checkpoint == "all",
		RevealAfter:   fm.RevealAfter,
		headingIDs:    r.ids,
	}
	if p.RevealAfter < 0 {
		p.RevealAfter = DefaultRevealAfter
	}
	for i := range r.links {
		if r.links[i].slug == "" {
			r.links[i].slug = l.Slug
		}
	}
	return p, r.links
}

// invalidUTF8Line is the line of the first byte that is not valid UTF-8.
func invalidUTF8Line(data []byte) int {
	line := 1
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		if r == utf8.RuneError && n <= 1 {
			return line
		}
		if r == '\n' {
			line++
		}
		data = data[n:]
	}
	return line
}

// duration turns a bare number of minutes into text in the page language.
func duration(d, lang string) string {
	if _, err := strconv.Atoi(d); err != nil || d == "" {
		return d
	}
	if lang == "zh" {
		return d + " 分钟"
	}
	return d + " min"
}

// crossCheck verifies what needs the whole course: prerequisites and links
// to other lessons or headings.
func (ld *loader) crossCheck(srcs []*lessonSource, links []linkRef) {
	bySlug := map[string]*Lesson{}
	if ld.outer != nil { // a draft may require and link to the course's lessons
		for _, l := range ld.outer.Lessons {
			bySlug[l.Slug] = l
		}
	}
	for _, s := range srcs {
		bySlug[s.lesson.Slug] = s.lesson
	}
	for _, s := range srcs {
		for _, lang := range Langs {
			file, ok := s.files[lang]
			if !ok {
				continue
			}
			fm := ld.prereqs[file]
			for i, slug := range fm.Prerequisites {
				switch {
				case slug == s.lesson.Slug:
					ld.errAt(file, fm.PrereqLines[i], "prerequisites: a lesson cannot require itself")
				case bySlug[slug] == nil || len(bySlug[slug].Pages) == 0:
					ld.errAt(file, fm.PrereqLines[i], "prerequisites: unknown lesson %q (prerequisites are lesson folder names)", slug)
				}
			}
		}
	}
	ld.prereqConsistency(srcs)
	ld.unshownQuestions(srcs) // unshown.go
	ld.aliasCheck(srcs)       // aliases.go
	for _, lr := range links {
		target := bySlug[lr.slug]
		if target == nil || len(target.Pages) == 0 {
			ld.errAt(lr.file, lr.line, "broken link: no lesson %q", lr.slug)
			continue
		}
		if lr.fragment == "" {
			continue
		}
		p := target.Pages[lr.lang]
		if p == nil {
			continue
		}
		if _, ok := p.headingIDs[lr.fragment]; !ok {
			ld.errAt(lr.file, lr.line, "broken link: %s has no heading #%s", path.Join(lr.slug, "index."+p.SourceLang+".md"), lr.fragment)
		}
	}
}

// prereqConsistency reports prerequisites that differ between a lesson's
// languages (a learner's path must not depend on the language) and cycles
// (no lesson on one could ever be started first).
func (ld *loader) prereqConsistency(srcs []*lessonSource) {
	graph := map[string][]string{}
	where := map[string]string{} // slug → the file its prerequisites come from
	for _, s := range srcs {
		var first []string
		firstFile := ""
		for _, lang := range Langs {
			file, ok := s.files[lang]
			if !ok {
				continue
			}
			pre := ld.prereqs[file].Prerequisites
			if firstFile == "" {
				first, firstFile = pre, file
				continue
			}
			a, b := append([]string(nil), first...), append([]string(nil), pre...)
			sort.Strings(a)
			sort.Strings(b)
			if strings.Join(a, ",") != strings.Join(b, ",") {
				line := 0
				if fm := ld.prereqs[file]; len(fm.PrereqLines) > 0 {
					line = fm.PrereqLines[0]
				}
				ld.errAt(file, line, "prerequisites [%s] differ from %s's [%s]: give every language the same list",
					strings.Join(pre, ", "), firstFile, strings.Join(first, ", "))
			}
		}
		graph[s.lesson.Slug] = first
		where[s.lesson.Slug] = firstFile
	}
	// Depth-first search; a back edge closes a cycle, reported once at the
	// file of the lesson where it was found.
	state := map[string]int{} // 0 new, 1 on the stack, 2 done
	var stack []string
	var visit func(slug string)
	visit = func(slug string) {
		state[slug] = 1
		stack = append(stack, slug)
		for _, next := range graph[slug] {
			if next == slug {
				continue // reported as "cannot require itself"
			}
			switch state[next] {
			case 0:
				if _, known := graph[next]; known {
					visit(next)
				}
			case 1:
				i := slices.Index(stack, next)
				cycle := append(append([]string(nil), stack[i:]...), next)
				ld.errAt(where[slug], 0, "prerequisites form a cycle: %s (no lesson on it could be started first)", strings.Join(cycle, " → "))
			}
		}
		stack = stack[:len(stack)-1]
		state[slug] = 2
	}
	slugs := make([]string, 0, len(graph))
	for slug := range graph {
		slugs = append(slugs, slug)
	}
	sort.Strings(slugs)
	for _, slug := range slugs {
		if state[slug] == 0 {
			visit(slug)
		}
	}
}

// rawHTMLTag finds an HTML tag in quiz text (comments excluded).
var rawHTMLTag = regexp.MustCompile(`<(/?[a-zA-Z][a-zA-Z0-9-]*)(\s[^<>]*)?/?>`)

// codeSpan matches inline code, where a tag is just text.
var codeSpan = regexp.MustCompile("`[^`]*`")

// quizHTML warns once per question text that holds raw HTML: question
// texts are Markdown, and raw HTML is not rendered (as in lessons).
func (ld *loader) quizHTML(file string, q *quiz.Question) {
	check := func(what string, t quiz.Text) {
		for _, lang := range Langs {
			if m := rawHTMLTag.FindString(codeSpan.ReplaceAllString(t[lang], "")); m != "" {
				ld.warnAt(file, q.Line, "%s: %s.%s has raw HTML %s, which is not rendered: use Markdown", q.ID, what, lang, m)
				return
			}
		}
	}
	check("prompt", q.Prompt)
	for _, o := range q.Options {
		check("option "+o.ID, o.Text)
		check("option "+o.ID+" feedback", o.Feedback)
	}
	check("explanation", q.Explanation)
	check("hint", q.Hint)
}

// folderNumber is the number a lesson folder's name starts with ("06-perf"
// → 6), if it starts with digits and a dash.
func folderNumber(slug string) (int, bool) {
	digits, _, ok := strings.Cut(slug, "-")
	if !ok || digits == "" || len(digits) > 4 {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil && allDigitsASCII(digits)
}

func allDigitsASCII(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
