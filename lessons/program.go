package lessons

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/i18n"
)

// A program is an exercise where the learner writes C in the page's
// editor; the lab compiles and runs it in the learner's own guest and
// judges it by what the device did:
//
//	:::program open-device programs/open-device
//	What to write, in this language
//	:::
//
// DIR, a folder of the lesson, holds
//   - starter.c: what the editor starts with (it must compile and fail the check);
//   - solution.c: a known-good answer (never sent before the learner asks
//     for it or has failed SolutionAfter checks; it must pass the check);
//   - check.sh: run with the guest's /bin/sh after the program, like a task's
//     verify script, with LAB_EXIT (the program's exit status), LAB_OUT (a
//     file with its output), LAB_PEER_OUT (what the lab's peer reported),
//     LAB_COUNTERS_BEFORE / LAB_COUNTERS_AFTER (the rxe devices' counters),
//     LAB_TRACE (the verbs calls the kernel saw the program make),
//     LAB_SIZE and LAB_FAILED_RANK (with ranks: how many ran, and which
//     one LAB_EXIT is of) and LAB_LANG; exit 0 = passed, its first lines
//     are the hint; a line "figure NAME VALUE" (NAME [a-z][a-z0-9_]*,
//     VALUE a decimal number) is not shown but becomes the run's figure
//     NAME, the number the check's words quote (web/program.go);
//   - program.yaml (optional): ProgramConfig.
//
// The guest suite compiles and runs every solution and starter; `check`
// compiles both with the host's tcc when Options.CompileC is set.

// Program is one :::program of a lesson, its files read at load.
type Program struct {
	ID       string
	Dir      string // folder in the lesson (programs/open-device)
	Starter  []byte
	Solution []byte
	Check    []byte
	Config   ProgramConfig
	Peer     []byte     // the peer's C source (Config.Peer), nil without one
	peerZh   []peerLine // the Chinese of the peer's report (PeerReport)
	Line     int        // the directive's line in the first language's page
}

// ProgramConfig is a program's program.yaml.
type ProgramConfig struct {
	// Args are the program's arguments (argv[1:]).
	Args []string `yaml:"args"`
	// Libs are linked with -l: ibverbs (default), rdmacm, m.
	Libs []string `yaml:"libs"`
	// Timeout bounds the run in seconds (default 10, at most MaxProgramTimeout).
	Timeout int `yaml:"timeout"`
	// CheckTimeout bounds check.sh in seconds (default 30, at most
	// MaxCheckTimeout); the script reads it as LAB_CHECK_TIMEOUT.
	CheckTimeout int `yaml:"check_timeout"`
	// Peer is a C file in the lesson folder (peers/write-target.c) that
	// the lab compiles and starts on rxe1 before the learner's program; it
	// publishes what the learner's side needs in /run/lab-peer and reports
	// what it saw on its standard output (LAB_PEER_OUT for check.sh).
	Peer string `yaml:"peer"`
	// PeerArgs are the peer's arguments.
	PeerArgs []string `yaml:"peer_args"`
	// Ranks (2 to 8) runs that many copies of the learner's program at
	// once, a collective's ranks, each with LAB_RANK (0..Ranks-1) and
	// LAB_SIZE in its environment, sharing the one time limit, output
	// budget and cgroup; the peer, started first, is then the harness
	// that feeds them and sees what they produced. 0 is one copy.
	Ranks int `yaml:"ranks"`
	// SolutionAfter is the number of failed checks after which the
	// solution is offered (default 3); the learner may also ask for it.
	SolutionAfter int `yaml:"solution_after"`
	// Hints are revealed one at a time at the learner's request, each
	// reveal recorded (web/program.go), before the solution: each in
	// both languages ({en: …, zh: …}), plain text where `code` is code.
	Hints []i18n.Text `yaml:"hints"`
	// Leaderboard names the figure an opt-in class leaderboard ranks,
	// higher first (web/leaderboard.go): the check reports it with
	// "figure NAME VALUE" lines, its interval as NAME_low and NAME_high.
	// Empty: the exercise has no leaderboard.
	Leaderboard string `yaml:"leaderboard"`
}

// FigureName is what a check's figure name may be ("figure NAME VALUE").
var FigureName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// Bounds of a program's files and settings.
const (
	MaxProgramSource  = 32 << 10
	MaxProgramTimeout = 30
	// MaxCheckTimeout bounds a program's check_timeout (the guest's own
	// bound, vmproto.ProgramCheckMaxS, is the same).
	MaxCheckTimeout = 90
	MaxProgramRanks = 8   // copies of one program run at once (vmproto.ProgramRanksMax)
	MaxProgramHints = 8   // hints of one program
	MaxProgramHint  = 600 // bytes of one hint in one language
)

// ProgramLibs are the libraries a program may link.
var ProgramLibs = []string{"ibverbs", "rdmacm", "m"}

var argPattern = regexp.MustCompile(`^[A-Za-z0-9._:/=,+-]{1,64}$`)

// Program returns the lesson's program with this id, or nil.
func (l *Lesson) Program(id string) *Program {
	for _, p := range l.Programs {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// openProgram checks a :::program line; its text is collected like a
// task's (openTask), closed by closeTask.
func (r *pageRenderer) programArgs(p piece, t *openTask, args []string) {
	switch {
	case len(args) != 2:
		r.errAt(p.line, ":::program needs an id and a folder: :::program ID programs/NAME")
		return
	case !idPattern.MatchString(args[0]):
		r.errAt(p.line, ":::program: id %q must be lower case letters, digits and dashes", args[0])
		return
	}
	id, dir := args[0], args[1]
	if r.programIDs == nil {
		r.programIDs = map[string]int{}
	}
	if prev, dup := r.programIDs[id]; dup {
		r.errAt(p.line, ":::program %s: the id is used twice on this page (also on line %d)", id, prev)
		return
	}
	r.programIDs[id] = p.line
	if _, msgs := r.ld.program(r.lesson.Slug, dir); len(msgs) > 0 {
		for _, m := range msgs {
			r.errAt(p.line, ":::program %s: %s", id, m)
		}
		return
	}
	t.seg.ID, t.seg.Script, t.ok = id, dir, true
}

// programResult is a program folder read once per load.
type programResult struct {
	prog *Program
	msgs []string
}

// program reads program folder dir of lesson slug, or says what is wrong.
func (ld *loader) program(slug, dir string) (*Program, []string) {
	key := slug + "/" + dir
	if c, ok := ld.programs[key]; ok {
		return c.prog, c.msgs
	}
	prog, msgs := ld.readProgram(slug, dir)
	if ld.programs == nil {
		ld.programs = map[string]programResult{}
	}
	ld.programs[key] = programResult{prog, msgs}
	return prog, msgs
}

func (ld *loader) readProgram(slug, dir string) (*Program, []string) {
	var msgs []string
	bad := func(m string) {
		if m != "" {
			msgs = append(msgs, m)
		}
	}
	if _, m := readLessonFile(ld.fsys, slug, dir+"/starter.c", "folder", 1); strings.Contains(m, "must be") {
		return nil, []string{fmt.Sprintf("folder %q must be a plain path inside the lesson folder (no .., no ./, no //)", dir)}
	}
	p := &Program{Dir: dir, Config: ProgramConfig{Timeout: 10, SolutionAfter: 3, Libs: []string{"ibverbs"}}}
	var m string
	p.Starter, m = readLessonFile(ld.fsys, slug, dir+"/starter.c", "starter", MaxProgramSource)
	bad(m)
	p.Solution, m = readLessonFile(ld.fsys, slug, dir+"/solution.c", "solution", MaxProgramSource)
	bad(m)
	p.Check, m = readTaskScript(ld.fsys, slug, dir+"/check.sh")
	bad(m)
	full := slug + "/" + dir + "/program.yaml"
	if _, err := statFS(ld.fsys, full); err == nil {
		data, m := readLessonFile(ld.fsys, slug, dir+"/program.yaml", "program settings", 4<<10)
		bad(m)
		if m == "" {
			var c ProgramConfig
			if err := yaml.UnmarshalWithOptions(data, &c, yaml.DisallowUnknownField()); err != nil {
				bad(fmt.Sprintf("%s: %s", full, strings.ReplaceAll(yaml.FormatError(err, false, false), "\n", " ")))
			} else {
				msgs = append(msgs, p.configure(c, full)...)
			}
		}
	}
	if p.Config.Peer != "" {
		p.Peer, m = readLessonFile(ld.fsys, slug, p.Config.Peer, "peer program", MaxProgramSource)
		bad(m)
		if m == "" {
			p.peerZh, m = ld.peerReport(slug, p.Config.Peer) // peerreport.go
			bad(m)
		}
	}
	if len(msgs) == 0 && ld.opt.CompileC != nil {
		for _, f := range []struct {
			name string
			src  []byte
		}{{dir + "/starter.c", p.Starter}, {dir + "/solution.c", p.Solution}, {p.Config.Peer, p.Peer}} {
			if f.src == nil {
				continue
			}
			if out, err := ld.opt.CompileC(f.src, p.Config.Libs); err != nil {
				bad(fmt.Sprintf("%s does not compile: %s", path.Join(slug, f.name), firstLine(out, err)))
			}
		}
	}
	if len(msgs) > 0 {
		return nil, msgs
	}
	return p, nil
}

// firstLine is the compiler's first error line, or err.
func firstLine(out string, err error) string {
	for l := range strings.SplitSeq(out, "\n") {
		if strings.Contains(l, "error") {
			return strings.TrimSpace(l)
		}
	}
	return err.Error()
}

// configure takes program.yaml's settings after checking them.
func (p *Program) configure(c ProgramConfig, file string) []string {
	var msgs []string
	if c.Timeout != 0 {
		if c.Timeout < 1 || c.Timeout > MaxProgramTimeout {
			msgs = append(msgs, fmt.Sprintf("%s: timeout %d must be 1 to %d seconds", file, c.Timeout, MaxProgramTimeout))
		}
		p.Config.Timeout = c.Timeout
	}
	if c.CheckTimeout != 0 {
		if c.CheckTimeout < 1 || c.CheckTimeout > MaxCheckTimeout {
			msgs = append(msgs, fmt.Sprintf("%s: check_timeout %d must be 1 to %d seconds", file, c.CheckTimeout, MaxCheckTimeout))
		}
		p.Config.CheckTimeout = c.CheckTimeout
	}
	if c.SolutionAfter != 0 {
		if c.SolutionAfter < 1 || c.SolutionAfter > 20 {
			msgs = append(msgs, fmt.Sprintf("%s: solution_after %d must be 1 to 20", file, c.SolutionAfter))
		}
		p.Config.SolutionAfter = c.SolutionAfter
	}
	if len(c.Libs) > 0 {
		for _, l := range c.Libs {
			if !slices.Contains(ProgramLibs, l) {
				msgs = append(msgs, fmt.Sprintf("%s: library %q is not one of %s", file, l, strings.Join(ProgramLibs, ", ")))
			}
		}
		p.Config.Libs = c.Libs
	}
	for _, a := range append(slices.Clone(c.Args), c.PeerArgs...) {
		if !argPattern.MatchString(a) {
			msgs = append(msgs, fmt.Sprintf("%s: argument %s: letters, digits and ._:/=,+- only, at most 64", file, strconv.Quote(a)))
		}
	}
	if len(c.Args) > 8 || len(c.PeerArgs) > 8 {
		msgs = append(msgs, fmt.Sprintf("%s: at most 8 arguments each", file))
	}
	if len(c.Hints) > MaxProgramHints {
		msgs = append(msgs, fmt.Sprintf("%s: %d hints, at most %d", file, len(c.Hints), MaxProgramHints))
	}
	for i, h := range c.Hints {
		for lang := range h {
			if !slices.Contains(Langs, lang) {
				msgs = append(msgs, fmt.Sprintf("%s: hint %d: language %q is not one of %s", file, i+1, lang, strings.Join(Langs, ", ")))
			}
		}
		for _, lang := range Langs {
			switch t := strings.TrimSpace(h[lang]); {
			case t == "":
				msgs = append(msgs, fmt.Sprintf("%s: hint %d has no %s text: every hint needs %s", file, i+1, lang, strings.Join(Langs, " and ")))
			case len(t) > MaxProgramHint:
				msgs = append(msgs, fmt.Sprintf("%s: hint %d (%s) is %d bytes, at most %d", file, i+1, lang, len(t), MaxProgramHint))
			}
		}
	}
	p.Config.Hints = c.Hints
	if c.Ranks != 0 && (c.Ranks < 2 || c.Ranks > MaxProgramRanks) {
		msgs = append(msgs, fmt.Sprintf("%s: ranks %d must be 2 to %d (leave it out for one copy)", file, c.Ranks, MaxProgramRanks))
	}
	p.Config.Ranks = c.Ranks
	if c.Leaderboard != "" && !FigureName.MatchString(c.Leaderboard) {
		msgs = append(msgs, fmt.Sprintf("%s: leaderboard %q must be a figure name (a-z, 0-9 and _, starting with a letter, at most 32)", file, c.Leaderboard))
	}
	p.Config.Leaderboard = c.Leaderboard
	p.Config.Args, p.Config.PeerArgs, p.Config.Peer = c.Args, c.PeerArgs, c.Peer
	if c.Peer != "" && !strings.HasSuffix(c.Peer, ".c") {
		msgs = append(msgs, fmt.Sprintf("%s: peer %q must be a C file (.c) in the lesson folder", file, c.Peer))
	}
	return msgs
}

// lessonPrograms fills l.Programs from its pages, as lessonTasks does for
// tasks: every language has the same programs in the same order.
func (ld *loader) lessonPrograms(l *Lesson) {
	var first *Page
	var firstProgs []Segment
	for _, lang := range Langs {
		p := l.Pages[lang]
		if p == nil || p.Fallback {
			continue
		}
		var ps []Segment
		for _, s := range p.Body {
			if s.Kind == SegProgram {
				ps = append(ps, s)
			}
		}
		if first == nil {
			first, firstProgs = p, ps
			continue
		}
		if len(ps) != len(firstProgs) {
			ld.errAt(p.File, 1, "%d programs here, %d in %s: every language needs the same :::program exercises", len(ps), len(firstProgs), first.File)
			continue
		}
		for i, s := range ps {
			f := firstProgs[i]
			if s.ID != f.ID || s.Script != f.Script {
				ld.errAt(p.File, s.Line, ":::program %s %s differs from %s:%d (:::program %s %s): every language needs the same ids, in the same order, with the same folders",
					s.ID, s.Script, first.File, f.Line, f.ID, f.Script)
			}
		}
	}
	for _, s := range firstProgs {
		prog, _ := ld.program(l.Slug, s.Script)
		if prog == nil {
			continue
		}
		cp := *prog
		cp.ID, cp.Line = s.ID, s.Line
		l.Programs = append(l.Programs, &cp)
	}
}

// Request is the run of src as this exercise: its libraries, arguments,
// time limits, peer, ranks and check, as the learner's guest takes it.
func (p *Program) Request(src []byte) rdmalab.Program {
	return rdmalab.Program{Source: src, Libs: p.Config.Libs, Args: p.Config.Args, TimeoutS: p.Config.Timeout,
		Peer: p.Peer, PeerArgs: p.Config.PeerArgs, Ranks: p.Config.Ranks, Check: p.Check, CheckTimeoutS: p.Config.CheckTimeout}
}
