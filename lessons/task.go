package lessons

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"path"
	"strings"
)

// A task is a step the learner performs in their own terminal, written as
// a container so its text can hold Markdown (commands in code):
//
//	:::task memlock tasks/memlock.sh
//	Raise the locked-memory limit of your shell to 64 MiB …
//	:::
//
// The id names the task in the lesson (progress is stored by lesson and
// id); the script, a path inside the lesson folder, is what the lab runs in
// the learner's own guest when they press Check: exit status 0 means done,
// and its first lines of output are the hint shown otherwise. Scripts run
// with the guest's /bin/sh (dash); a #! line may name /bin/sh only, since
// bash is optional in the guest image. Rules checked here:
//   - id: lower case letters, digits and dashes, unique on the page;
//   - script: a relative path inside the lesson folder, a regular file (not
//     a symbolic link), not empty, at most MaxTaskScript bytes;
//   - the page has a ::terminal (the learner needs somewhere to do it);
//   - every language has the same tasks, in the same order, with the same
//     script (readPages compares them).

// MaxTaskScript bounds a verify script's size.
const MaxTaskScript = 16 << 10

// openTask is a :::task (or :::program) being rendered.
type openTask struct {
	name  string // task or program
	seg   Segment
	start int  // index in r.body where the task's text begins
	ok    bool // the opening line was valid: the task becomes a segment
}

func (r *pageRenderer) openTask(p piece) {
	r.callout = append(r.callout, p)
	if r.task != nil {
		r.errAt(p.line, ":::%s cannot be inside a :::%s (line %d): close that one with ::: first", p.name, r.task.name, r.task.seg.Line)
		// Its closing ::: will close this one; the outer task stays open.
		r.callout[len(r.callout)-1].name = "task-nested"
		return
	}
	r.flush()
	t := &openTask{seg: Segment{Kind: SegTask, Line: p.line}, start: len(r.body), name: p.name}
	r.task = t
	args, err := splitArgs(p.args)
	if err != nil {
		r.errAt(p.line, ":::%s: %v", p.name, err)
		return
	}
	if p.name == "program" {
		t.seg.Kind = SegProgram
		r.programArgs(p, t, args) // program.go
		return
	}
	setup := ""
	if len(args) == 3 {
		v, ok := strings.CutPrefix(args[2], "setup=")
		if !ok || v == "" {
			r.errAt(p.line, ":::task: the third word must be setup=tasks/SETUP.sh (a script run as root before the terminal takes keystrokes), not %q", args[2])
			return
		}
		setup, args = v, args[:2]
	}
	switch {
	case len(args) != 2:
		r.errAt(p.line, ":::task needs an id and a verify script: :::task ID tasks/SCRIPT.sh [setup=tasks/SETUP.sh]")
		return
	case !idPattern.MatchString(args[0]):
		r.errAt(p.line, ":::task: id %q must be lower case letters, digits and dashes", args[0])
		return
	}
	id, script := args[0], args[1]
	if r.taskIDs == nil {
		r.taskIDs = map[string]int{}
	}
	if prev, dup := r.taskIDs[id]; dup {
		r.errAt(p.line, ":::task %s: the id is used twice on this page (also on line %d)", id, prev)
		return
	}
	r.taskIDs[id] = p.line
	if _, msg := r.ld.taskScript(r.lesson.Slug, script); msg != "" {
		r.errAt(p.line, ":::task %s: %s", id, msg)
		return
	}
	if setup != "" {
		if _, msg := r.ld.taskScript(r.lesson.Slug, setup); msg != "" {
			r.errAt(p.line, ":::task %s: setup: %s", id, msg)
			return
		}
	}
	t.seg.ID, t.seg.Script, t.seg.Setup, t.ok = id, script, setup, true
}

// closeTask ends the open task: its text, rendered since openTask, becomes
// the segment's HTML.
func (r *pageRenderer) closeTask() {
	t := r.task
	if t == nil {
		return
	}
	r.task = nil
	r.flush()
	var b strings.Builder
	for _, s := range r.body[t.start:] {
		b.WriteString(string(s.HTML))
	}
	r.body = r.body[:t.start]
	if strings.TrimSpace(b.String()) == "" {
		r.errAt(t.seg.Line, ":::%s %s has no text: say what the learner should do, between :::%s and :::", t.name, t.seg.ID, t.name)
		return
	}
	if !t.ok {
		return
	}
	t.seg.HTML = template.HTML(b.String())
	r.body = append(r.body, t.seg)
}

// tasksNeedTerminal: a page with tasks must give the learner a terminal.
func (r *pageRenderer) tasksNeedTerminal() {
	var tasks []Segment
	for _, s := range r.body {
		switch s.Kind {
		case SegTerminal:
			return
		case SegTask:
			tasks = append(tasks, s)
		}
	}
	for _, s := range tasks {
		r.errAt(s.Line, ":::task %s: the page has no ::terminal to do it in (add one, e.g. just before the tasks)", s.ID)
	}
}

// taskScript reads a verify script of lesson slug, or says what is wrong
// with it ("" = fine). Results are cached: every language names the same
// scripts.
func (ld *loader) taskScript(slug, name string) ([]byte, string) {
	key := slug + "/" + name
	if c, ok := ld.scripts[key]; ok {
		return c.data, c.msg
	}
	data, msg := readTaskScript(ld.fsys, slug, name)
	if ld.scripts == nil {
		ld.scripts = map[string]scriptResult{}
	}
	ld.scripts[key] = scriptResult{data, msg}
	return data, msg
}

type scriptResult struct {
	data []byte
	msg  string
}

func readTaskScript(fsys fs.FS, slug, name string) ([]byte, string) {
	data, msg := readLessonFile(fsys, slug, name, "verify script", MaxTaskScript)
	if msg != "" {
		return nil, msg
	}
	full := slug + "/" + name
	if bytes.HasPrefix(data, []byte("#!")) {
		first, _, _ := bytes.Cut(data, []byte("\n"))
		interp := strings.Fields(strings.TrimSpace(string(first[2:])))
		if len(interp) == 0 || !(interp[0] == "/bin/sh" || interp[0] == "/usr/bin/sh" ||
			(path.Base(interp[0]) == "env" && len(interp) > 1 && interp[1] == "sh")) {
			return nil, fmt.Sprintf("verify script %s starts with %q: scripts run with the guest's /bin/sh (bash is optional there), so write #!/bin/sh", full, strings.TrimSpace(string(first)))
		}
	}
	return data, ""
}

// readLessonFile reads file name of lesson slug (what, e.g. "verify
// script", names it in messages), or says what is wrong with it ("" =
// fine): a plain relative path inside the lesson folder, a regular file
// (not a symbolic link), not empty, at most limit bytes.
func readLessonFile(fsys fs.FS, slug, name, what string, limit int64) ([]byte, string) {
	short := strings.TrimPrefix(what, "verify ") // "script %q must be …"
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, `\`) {
		return nil, fmt.Sprintf("%s %q must be a path relative to the lesson folder, e.g. tasks/check.sh", short, name)
	}
	clean := path.Clean(name)
	if clean != name || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return nil, fmt.Sprintf("%s %q must be a plain path inside the lesson folder (no .., no ./, no //)", short, name)
	}
	full := slug + "/" + name
	if link := symlinkIn(fsys, slug, name); link != "" {
		return nil, fmt.Sprintf("%s %q: %s is a symbolic link; put the %s itself in the lesson folder", short, name, link, short)
	}
	st, err := statFS(fsys, full)
	if err != nil {
		return nil, fmt.Sprintf("no %s %s", what, full)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Sprintf("%s %s is not a regular file", what, full)
	}
	if st.Size() > limit {
		return nil, fmt.Sprintf("%s %s is %d bytes; at most %d", what, full, st.Size(), limit)
	}
	data, err := fs.ReadFile(fsys, full)
	if err != nil {
		return nil, fmt.Sprintf("cannot read %s %s: %v", what, full, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Sprintf("%s %s is empty", what, full)
	}
	return data, ""
}

// lessonTasks fills l.Tasks from its pages: the first language's tasks,
// with every other language checked to have the same ids, order and
// scripts (progress is stored by id, whatever the page's language).
func (ld *loader) lessonTasks(l *Lesson) {
	var first *Page
	var firstTasks []Segment
	for _, lang := range Langs {
		p := l.Pages[lang]
		if p == nil || p.Fallback {
			continue
		}
		var ts []Segment
		for _, s := range p.Body {
			if s.Kind == SegTask {
				ts = append(ts, s)
			}
		}
		if first == nil {
			first, firstTasks = p, ts
			continue
		}
		if len(ts) != len(firstTasks) {
			ld.errAt(p.File, 1, "%d tasks here, %d in %s: every language needs the same :::task steps", len(ts), len(firstTasks), first.File)
			continue
		}
		for i, s := range ts {
			f := firstTasks[i]
			if s.ID != f.ID || s.Script != f.Script {
				ld.errAt(p.File, s.Line, ":::task %s %s differs from %s:%d (:::task %s %s): every language needs the same ids, in the same order, with the same scripts",
					s.ID, s.Script, first.File, f.Line, f.ID, f.Script)
			} else if s.Setup != f.Setup {
				ld.errAt(p.File, s.Line, ":::task %s: setup %q differs from %s:%d (setup %q): every language needs the same setup",
					s.ID, s.Setup, first.File, f.Line, f.Setup)
			}
		}
	}
	for _, s := range firstTasks {
		data, _ := ld.taskScript(l.Slug, s.Script)
		task := &Task{ID: s.ID, Path: s.Script, Script: data, Line: s.Line}
		if s.Setup != "" {
			task.SetupPath = s.Setup
			task.Setup, _ = ld.taskScript(l.Slug, s.Setup)
		}
		l.Tasks = append(l.Tasks, task)
		for _, sc := range []struct{ path, what string }{{s.Script, "verify script"}, {s.Setup, "setup script"}} {
			data, _ := ld.taskScript(l.Slug, sc.path)
			if sc.path == "" || data == nil || ld.opt.CheckScript == nil {
				continue
			}
			// A syntax error would reach the learner as the hint
			// ("Syntax error: …") instead of failing here.
			line, msg, err := ld.opt.CheckScript(data)
			if err != nil {
				ld.errAt(l.Slug+"/"+sc.path, max(line, 1), "%s: %s (checked with sh -n; the guest runs it with /bin/sh)", sc.what, msg)
			}
		}
	}
}
