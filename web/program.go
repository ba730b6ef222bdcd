package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// A lesson's :::program exercises (issue 25): the learner writes C in the
// page, the code is saved on the server as they type, and Run compiles
// and runs it in the learner's own guest (Config.Programs), after the lab's
// peer; the exercise's check judges by what the device did. A program
// run is stored like an experiment run (experiment "program", its events
// through the run hub, web/runhub), so the page follows it over the same event stream
// and /runs/{id} replays it.
//
//	GET  /api/lessons/{slug}/programs/{id}           the learner's code and record
//	PUT  /api/lessons/{slug}/programs/{id}/code      {"source"} autosave
//	POST /api/lessons/{slug}/programs/{id}/run       {"source"} → {"run"}
//	POST /api/lessons/{slug}/programs/{id}/solution  the solution, recorded
//	POST /api/lessons/{slug}/programs/{id}/hint      the next hint, recorded
//	POST /api/lessons/{slug}/programs/{id}/reset     the starter, the code it replaces kept

// ProgramExperiment is the experiment id a program run is stored under.
const ProgramExperiment = "program"

// maxProgramSource bounds a learner's source (the body limit is 64 KiB
// of JSON, escapes included).
const maxProgramSource = 40 << 10

// programRunning holds the learners whose program runs now: one each.
var programRunning sync.Map

var programStrings = page.Table{
	"zh": {
		"prog.heading":       "练习 %d",
		"prog.editor":        "练习 %d 的 C 源代码",
		"prog.keys":          "键盘：Tab 键离开编辑器，去往下一个控件（和页面上其他地方一样）；Ctrl-] 缩进一行，Ctrl-[ 取消缩进。打开「Tab 键缩进」后，Tab 键在编辑器里缩进；要离开编辑器，先按 Esc，再按 Tab。",
		"prog.tabindent":     "Tab 键缩进",
		"prog.run":           "运行",
		"prog.running":       "正在你的虚拟机里编译和运行……",
		"prog.reset":         "恢复为起始代码",
		"prog.reset.confirm": "用起始代码替换你的代码？你现在的代码会保存下来，之后可以用「找回重置前的代码」取回。",
		"prog.restore":       "找回重置前的代码",
		"prog.restore.ask":   "用重置前的代码替换编辑器里现在的代码？",
		"prog.hint":          "看提示",
		"prog.hint.next":     "看提示（第 %d 条，共 %d 条）",
		"prog.hints":         "提示（每看一条都会被记录下来）",
		"prog.diff":          "与起始代码比较",
		"prog.diff.hide":     "收起比较",
		"prog.diff.h":        "和起始代码相比：以 + 开头的行是你加的，以 − 开头的行是你删的（%d 行新增，%d 行删除）。",
		"prog.diff.same":     "你的代码和起始代码完全一样。",
		"prog.solution":      "查看参考答案",
		"prog.solution.ask":  "查看参考答案？这会被记录下来。先自己再试一次也许更有收获。",
		"prog.solution.h":    "参考答案",
		"prog.saved":         "已保存",
		"prog.saving":        "正在保存……",
		"prog.savefail":      "没能保存：%s",
		"prog.noscript":      "编辑器和「运行」按钮需要 JavaScript。",
		"prog.output":        "输出",
		"prog.diags":         "编译器的提示",
		"prog.line":          "第 %d 行",
		"prog.record":        "运行并检查 %d 次，通过 %d 次",
		"prog.passed":        "通过：检查确认了设备上发生的事。",
		"prog.failed":        "还没有通过。检查的提示：",
		"prog.compile":       "没有编译通过：看编辑器里标出的行。",
		"prog.peerfail":      "实验室的对端程序没能启动（这是实验室的问题，不是你的）：%s",
		"prog.timedout":      "你的程序运行超过了 %d 秒，被结束了。没有截止时间的等待（等完成、等对端）会一直等到这个时限；实验机繁忙时，正确的程序也可能超时——如果它平时能跑完，请再运行一次。",
		"prog.capped":        "你的程序输出超过了 %d KiB，被结束了。",
		"prog.exit":          "你的程序以状态 %d 退出。",
		"prog.signal":        "你的程序被信号结束：%s。",
		"prog.phase.peer":    "启动实验室在 rxe1 上的对端",
		"prog.phase.harness": "启动实验室的测试框架：由它给各个 rank 发输入、计时并核对结果",
		"prog.phase.compile": "用 tcc 编译",
		"prog.phase.run":     "运行你的程序",
		"prog.phase.check":   "检查设备上发生了什么",
		"prog.peer":          "对端看到的：",
		"prog.busy":          "你的上一个程序还在运行，请稍等。",
		"prog.rate":          "你运行得太频繁了：请 %d 秒后再试。",
		"prog.unknown":       "这一课没有这个练习。",
		"prog.error":         "程序没能运行：%s",
		"prog.error.lab":     "程序没能运行：实验室这边出了问题（不是你的代码的问题），请稍后再试。",
		"prog.error.timeout": "程序没能在时间上限内跑完：实验室的机器太忙或没有应答（不是你的代码的问题），请稍后再试。",
		"prog.toolong":       "代码太长：最多 %d KiB。",
		"prog.times":         "编译 %d 毫秒，运行 %d 毫秒（在此测得，仿真环境）",
	},
	"en": {
		"prog.heading":       "Exercise %d",
		"prog.editor":        "C source of exercise %d",
		"prog.keys":          "Keys: Tab leaves the editor for the next control (as everywhere on the page); Ctrl-] indents a line, Ctrl-[ dedents it. With “Tab indents” on, Tab indents inside the editor; to leave the editor, press Esc, then Tab.",
		"prog.tabindent":     "Tab indents",
		"prog.run":           "Run",
		"prog.running":       "Compiling and running in your machine…",
		"prog.reset":         "Reset to starter",
		"prog.reset.confirm": "Replace your code with the starter code? Your current code is kept: “Restore code from before the reset” brings it back.",
		"prog.restore":       "Restore code from before the reset",
		"prog.restore.ask":   "Replace the code in the editor with the code you had before the reset?",
		"prog.hint":          "Show a hint",
		"prog.hint.next":     "Show hint %d of %d",
		"prog.hints":         "Hints (each one you open is recorded)",
		"prog.diff":          "Compare with the starter",
		"prog.diff.hide":     "Hide the comparison",
		"prog.diff.h":        "Against the starter: lines starting with + are yours, lines starting with − you removed (%d added, %d removed).",
		"prog.diff.same":     "Your code is the starter code, unchanged.",
		"prog.solution":      "Show solution",
		"prog.solution.ask":  "Show the solution? This is recorded. Trying once more yourself may teach you more.",
		"prog.solution.h":    "Solution",
		"prog.saved":         "Saved",
		"prog.saving":        "Saving…",
		"prog.savefail":      "Could not save: %s",
		"prog.noscript":      "The editor and the Run button need JavaScript.",
		"prog.output":        "Output",
		"prog.diags":         "What the compiler said",
		"prog.line":          "line %d",
		"prog.record":        "runs checked: %d, passed: %d",
		"prog.passed":        "Passed: the check confirmed what happened on the device.",
		"prog.failed":        "Not passed yet. The check's hint:",
		"prog.compile":       "It did not compile: see the lines marked in the editor.",
		"prog.peerfail":      "The lab's peer program did not start (the lab's fault, not yours): %s",
		"prog.timedout":      "Your program ran longer than %d s and was ended. A wait without a deadline (for a completion, or for the peer) lasts until this limit; on a busy lab a right program can run out of time too — if yours usually finishes, run it again.",
		"prog.capped":        "Your program printed more than %d KiB and was ended.",
		"prog.exit":          "Your program exited with status %d.",
		"prog.signal":        "Your program was ended by a signal: %s.",
		"prog.phase.peer":    "Starting the lab's peer on rxe1",
		"prog.phase.harness": "Starting the lab's harness: it hands the ranks their inputs, times them and checks the result",
		"prog.phase.compile": "Compiling with tcc",
		"prog.phase.run":     "Running your program",
		"prog.phase.check":   "Checking what happened on the device",
		"prog.peer":          "What the peer saw:",
		"prog.busy":          "Your previous program is still running; wait a moment.",
		"prog.rate":          "You are running too often: try again in %d s.",
		"prog.unknown":       "This lesson has no such exercise.",
		"prog.error":         "The program could not run: %s",
		"prog.error.lab":     "The program could not run: something failed on the lab's side (not in your code); try again later.",
		"prog.error.timeout": "The program run did not finish within the lab's time limit: the machine was too busy or did not answer (not your code's fault); try again later.",
		"prog.toolong":       "The code is too long: at most %d KiB.",
		"prog.times":         "compiled in %d ms, ran %d ms (measured here, under emulation)",
	},
}

// programFor finds the request's lesson and program, or writes 404.
func (s *Server) programFor(w http.ResponseWriter, r *http.Request) (*lessons.Lesson, *lessons.Program, bool) {
	l := s.course().Lesson(chi.URLParam(r, "slug"))
	var p *lessons.Program
	if l != nil {
		p = l.Program(chi.URLParam(r, "id"))
	}
	if p == nil {
		s.WriteError(w, r, page.Errorf(page.CodeNotFound, tr(page.LangOf(r))("prog.unknown")))
		return nil, nil, false
	}
	return l, p, true
}

// programState is GET …/programs/{id}: what the editor starts with.
type programState struct {
	Source        string `json:"source"`  // the learner's saved code, else the starter
	Starter       string `json:"starter"` // for Reset
	Saved         bool   `json:"saved"`
	Attempts      int    `json:"attempts"`
	Passes        int    `json:"passes"`
	Passed        bool   `json:"passed"`
	Record        string `json:"record,omitempty"` // attempts and passes in words
	SolutionAfter int    `json:"solution_after"`   // failed checks before the solution is offered
	SolutionSeen  bool   `json:"solution_seen"`
	programHints
	// BeforeReset is the code the learner's last reset replaced, so it
	// can be brought back ("" without one).
	BeforeReset string `json:"before_reset,omitempty"`
	// Leaderboard: the exercise has a class leaderboard and the learner
	// is in a class that does not hide it (the page then shows its link).
	Leaderboard bool `json:"leaderboard,omitempty"`
}

// programHints are the hints the learner revealed, in the request's
// language, and how many the exercise has.
type programHints struct {
	Hints      []string `json:"hints"`
	HintsTotal int      `json:"hints_total"`
}

func hintsOf(p *lessons.Program, revealed int, lang string) programHints {
	h := programHints{Hints: []string{}, HintsTotal: len(p.Config.Hints)}
	for i := 0; i < revealed && i < len(p.Config.Hints); i++ {
		h.Hints = append(h.Hints, p.Config.Hints[i].Get(lang))
	}
	return h
}

func (s *Server) programShow(w http.ResponseWriter, r *http.Request) {
	l, p, ok := s.programFor(w, r)
	if !ok {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	learner := learnerID(r)
	src, saved, err := s.cfg.Store.ProgramCode(r.Context(), learner, l.Slug, p.ID)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	if !saved {
		src = string(p.Starter)
	}
	st := programState{Source: src, Starter: string(p.Starter), Saved: saved, SolutionAfter: p.Config.SolutionAfter}
	recs, err := s.cfg.Store.LessonPrograms(r.Context(), learner, l.Slug)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	rec := recs[p.ID]
	st.Attempts, st.Passes, st.Passed, st.SolutionSeen = rec.Attempts, rec.Passes, rec.Passed(), !rec.SolutionAt.IsZero()
	if rec.Attempts > 0 {
		st.Record = trf(page.LangOf(r), "prog.record", rec.Attempts, rec.Passes)
	}
	st.programHints = hintsOf(p, rec.Hints, page.LangOf(r))
	if before, ok, err := s.cfg.Store.ProgramCodeBeforeReset(r.Context(), learner, l.Slug, p.ID); err != nil {
		s.WriteError(w, r, err)
		return
	} else if ok && before != src {
		st.BeforeReset = before
	}
	if p.Config.Leaderboard != "" {
		if st.Leaderboard, err = s.boardVisible(r.Context(), learner); err != nil {
			s.WriteError(w, r, err)
			return
		}
	}
	page.WriteJSON(w, http.StatusOK, st)
}

// programHint is POST …/hint: the next hint revealed and recorded; it
// answers every hint revealed so far (all of them once none is left).
func (s *Server) programHint(w http.ResponseWriter, r *http.Request) {
	l, p, ok := s.programFor(w, r)
	if !ok {
		return
	}
	n, err := s.cfg.Store.RevealProgramHint(r.Context(), learnerID(r), l.Slug, p.ID, len(p.Config.Hints))
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	page.WriteJSON(w, http.StatusOK, hintsOf(p, n, page.LangOf(r)))
}

// programReset is POST …/reset: the learner's code becomes the starter;
// the code it replaced is kept (programState.BeforeReset).
func (s *Server) programReset(w http.ResponseWriter, r *http.Request) {
	l, p, ok := s.programFor(w, r)
	if !ok {
		return
	}
	learner := learnerID(r)
	if err := s.cfg.Store.ResetProgramCode(r.Context(), learner, l.Slug, p.ID, string(p.Starter)); err != nil {
		s.WriteError(w, r, err)
		return
	}
	before, _, err := s.cfg.Store.ProgramCodeBeforeReset(r.Context(), learner, l.Slug, p.ID)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	page.WriteJSON(w, http.StatusOK, map[string]string{"source": string(p.Starter), "before_reset": before})
}

// programSource decodes {"source": …} and bounds it.
func (s *Server) programSource(w http.ResponseWriter, r *http.Request) (string, bool) {
	var body struct {
		Source string `json:"source"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.WriteError(w, r, page.Errorf(page.CodeBadRequest, "body: "+err.Error()))
		return "", false
	}
	if len(body.Source) > maxProgramSource || !utf8.ValidString(body.Source) {
		s.WriteError(w, r, page.Errorf(page.CodeBadRequest, trf(page.LangOf(r), "prog.toolong", maxProgramSource>>10)))
		return "", false
	}
	return body.Source, true
}

func (s *Server) programSave(w http.ResponseWriter, r *http.Request) {
	l, p, ok := s.programFor(w, r)
	if !ok {
		return
	}
	src, ok := s.programSource(w, r)
	if !ok {
		return
	}
	if err := s.cfg.Store.SaveProgramCode(r.Context(), learnerID(r), l.Slug, p.ID, src); err != nil {
		s.WriteError(w, r, err)
		return
	}
	page.WriteJSON(w, http.StatusOK, map[string]bool{"saved": true})
}

func (s *Server) programSolution(w http.ResponseWriter, r *http.Request) {
	l, p, ok := s.programFor(w, r)
	if !ok {
		return
	}
	if err := s.cfg.Store.RecordSolutionShown(r.Context(), learnerID(r), l.Slug, p.ID); err != nil {
		s.WriteError(w, r, err)
		return
	}
	page.WriteJSON(w, http.StatusOK, map[string]string{"solution": string(p.Solution)})
}

// programRun is POST …/run: saves the code, starts the run, answers its id;
// the page follows GET /api/runs/{id}/events.
func (s *Server) programRun(w http.ResponseWriter, r *http.Request) {
	lang := page.LangOf(r)
	t := tr(lang)
	l, p, ok := s.programFor(w, r)
	if !ok {
		return
	}
	runner := s.cfg.Programs
	if runner == nil || s.cfg.Runs == nil {
		s.WriteError(w, r, page.Errorf(page.CodeUnavailable, t("term.off")))
		return
	}
	src, ok := s.programSource(w, r)
	if !ok {
		return
	}
	learner := learnerID(r)
	if err := s.cfg.Store.SaveProgramCode(r.Context(), learner, l.Slug, p.ID, src); err != nil {
		s.WriteError(w, r, err)
		return
	}
	if ok, wait := s.limits.taskCheck.allow(learner); !ok {
		s.WriteError(w, r, page.Errorf(page.CodeRateLimited, trf(lang, "prog.rate", page.RetryAfter(w, wait))))
		return
	}
	// A run may start the learner's machine: it passes the terminal's
	// admission (terminal_fair.go), the one path to a machine, or six
	// cookies of one address held every machine and the queue through
	// program runs (issue 43 fall 3). The learner stays counted while
	// their machine is held.
	leave := func() {}
	if s.cfg.Terminals != nil {
		var refusal string
		if leave, refusal = s.termAdmit(r, learner, lang); refusal != "" {
			s.WriteError(w, r, page.Errorf(page.CodeRateLimited, refusal))
			return
		}
	}
	if _, busy := programRunning.LoadOrStore(learner, struct{}{}); busy {
		leave()
		s.WriteError(w, r, page.Errorf(page.CodeConflict, t("prog.busy")))
		return
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	info := sandbox.RunInfo{ID: id, Learner: learner, Experiment: ProgramExperiment,
		Params: sandbox.Params{"lesson": l.Slug, "program": p.ID}, Status: sandbox.StatusRunning, Created: time.Now()}
	if err := s.cfg.Runs.RunCreated(info); err != nil {
		programRunning.Delete(learner)
		leave()
		s.WriteError(w, r, err)
		return
	}
	// What an instructor opens as the learner's last submission: the
	// source as run, beside its run.
	if err := s.cfg.Store.RecordProgramSubmission(r.Context(), learner, l.Slug, p.ID, id, src); err != nil {
		s.log.Error("record program submission", "err", err)
	}
	req := p.Request([]byte(src))
	go func() {
		defer leave()
		defer programRunning.Delete(learner)
		s.runProgram(runner, id, learner, l.Slug, p, req, lang)
	}()
	page.WriteJSON(w, http.StatusCreated, map[string]string{"run": id, "events": "/api/runs/" + id + "/events"})
}

// diagLine matches tcc's (and gcc's) "main.c:LINE[:COL]: error|warning: text".
var diagLine = regexp.MustCompile(`^main\.c:(\d+):(?:(\d+):)?\s*(error|warning|note)?:?\s*(.*)$`)

// runProgram does one run and records it: events stored and streamed in
// order, diagnostics at their lines, the verdict in both languages, the
// attempt in the learner's record.
func (s *Server) runProgram(runner rdmalab.ProgramRunner, id, learner, lesson string, p *lessons.Program, req rdmalab.Program, lang string) {
	var seq atomic.Int64
	var mu sync.Mutex // one event at a time, in order
	emit := func(ev sandbox.Event) {
		mu.Lock()
		defer mu.Unlock()
		ev.Seq = seq.Add(1)
		if ev.Time.IsZero() {
			ev.Time = time.Now()
		}
		s.cfg.Runs.RunEvent(id, ev)
	}
	both := bothLangs
	start := time.Now()
	emit(sandbox.Event{Type: sandbox.EvStatus, Status: sandbox.StatusRunning})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var printed outputTail // what the program printed, for explainMistakes
	end, err := runner.RunProgram(ctx, learner, req, lang, func(ev sandbox.Event) {
		if ev.Type == sandbox.EvLog && (ev.Name == "stdout" || ev.Name == "stderr") {
			printed.add(ev.Message)
		}
		if ev.Type == sandbox.EvPhase {
			name := ev.Name
			if name == "peer" && req.Ranks > 1 {
				name = "harness" // a ranked program's peer is its harness, not a peer on rxe1
			}
			ev.Messages = both("prog.phase." + name)
			ev.Message = ev.Messages["en"]
		}
		if ev.Type == sandbox.EvLog && ev.Name == "peer" {
			ev.Messages = p.PeerReport(ev.Message) // the lesson's peers/NAME.zh.yaml
		}
		emit(ev)
	})
	final := sandbox.Event{Type: sandbox.EvStatus, Status: sandbox.StatusDone}
	if err != nil {
		s.log.Warn("program run", "lesson", lesson, "program", p.ID, "err", err)
		msg := programFailure(err)
		emit(sandbox.Event{Type: sandbox.EvError, Message: msg["en"], Messages: msg})
		final.Status, final.Message, final.Messages = sandbox.StatusFailed, msg["en"], msg
		// Observed before the final event: whoever sees the run end (a
		// scrape after it, a test) finds it counted.
		s.programDone("lab", false, time.Since(start)) // metrics: observe.go
		emit(final)
		return
	}
	for _, d := range placeMissingSemicolons(programDiagnostics(string(end.Compiler)), string(req.Source)) {
		emit(d)
	}
	ok := end.Passed
	res := sandbox.Event{Type: sandbox.EvResult, OK: &ok, Name: end.Stage,
		Figures: map[string]float64{"compile_ms": float64(end.Millis.Compile), "run_ms": float64(end.Millis.Run), "exit": float64(end.Exit)}}
	var why []sandbox.Text
	switch {
	case end.Stage == "peer":
		why = append(why, both("prog.peerfail", end.Detail))
	case end.Stage == "compile":
		why = append(why, both("prog.compile"))
	case end.Passed:
		why = append(why, both("prog.passed"))
	default:
		why = append(why, both("prog.failed"))
	}
	if end.Stage == "check" {
		switch {
		case end.TimedOut:
			why = append(why, both("prog.timedout", req.TimeoutS))
		case end.Capped:
			why = append(why, both("prog.capped", rdmalab.ProgramOutputMax>>10))
		case end.Signal != "":
			why = append(why, both("prog.signal", end.Signal))
		case end.Exit != 0:
			why = append(why, both("prog.exit", end.Exit))
		}
		if !end.Passed {
			why = append(why, explainMistakes(printed.String())...)
		}
	}
	res.Messages = sandbox.Text{}
	for _, l := range []string{"zh", "en"} {
		var parts []string
		for _, w := range why {
			parts = append(parts, w[l])
		}
		res.Messages[l] = strings.Join(parts, " ")
	}
	res.Message = res.Messages["en"]
	checkOut := string(end.Check)
	if end.Stage == "check" {
		// The figures the check quotes ("figure NAME VALUE" lines) join
		// the result's, as the check printed them; the learner reads the
		// rest. The lab's own figures are never overwritten.
		var figs map[string]float64
		figs, checkOut = checkFigures(checkOut)
		for k, v := range figs {
			if _, ours := res.Figures[k]; !ours {
				res.Figures[k] = v
			}
		}
	}
	if hint := taskHint(checkOut); hint != "" {
		// The check wrote it in the learner's language (LAB_LANG) only:
		// filed under that language alone, never as the other's text (a
		// zh hint in detail.en was Chinese in an English reader's verdict).
		res.Detail = sandbox.Text{lang: hint}
	}
	emit(res)
	if end.Stage == "check" {
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := s.cfg.Store.RecordProgramRun(rctx, learner, lesson, p.ID, end.Passed); err != nil {
			s.log.Error("record program run", "err", err)
		} else if end.Passed {
			s.ltiQueueLesson(rctx, learner, lesson) // a program passed may complete the lesson (lti_scores.go)
		}
		rcancel()
	}
	if !end.Passed {
		final.Status = sandbox.StatusFailed
		final.Message = "not passed"
	}
	s.programDone(end.Stage, end.Passed, time.Since(start)) // metrics: observe.go; before the end is seen
	emit(final)
}

// figureLine is a check's "figure NAME VALUE" line (lessons/program.go).
var figureLine = regexp.MustCompile(`^figure ([a-z][a-z0-9_]{0,31}) (-?[0-9]{1,12}(?:\.[0-9]{1,12})?)$`)

// maxCheckFigures bounds the figures one check may report.
const maxCheckFigures = 16

// checkFigures takes a check's figure lines out of its output: the
// figures by name, and the output without them. A line that only looks
// like one (a bad name or number) stays in the output, for the learner to
// read, and names no figure.
func checkFigures(out string) (map[string]float64, string) {
	var figs map[string]float64
	var rest []string
	for l := range strings.SplitSeq(out, "\n") {
		m := figureLine.FindStringSubmatch(strings.TrimRight(l, "\r"))
		if m == nil || len(figs) >= maxCheckFigures {
			rest = append(rest, l)
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			rest = append(rest, l)
			continue
		}
		if figs == nil {
			figs = map[string]float64{}
		}
		figs[m[1]] = v
	}
	return figs, strings.Join(rest, "\n")
}

// bothLangs is a string of the table in Chinese and English.
func bothLangs(key string, args ...any) sandbox.Text {
	return sandbox.Text{"zh": trf("zh", key, args...), "en": trf("en", key, args...)}
}

// programFailure is why a program could not run, in both languages, as
// it was written where the cause was known: a Reason's own text (the lab
// wrote it in both languages), or the time limit. An error nobody wrote in
// both languages (the guest's connection, the system) is said as "the lab
// failed" in each, and stays whole in the log (runProgram logs it):
// English never reaches a Chinese reader.
func programFailure(err error) sandbox.Text {
	var why *sandbox.Reason
	switch {
	case errors.As(err, &why):
		return sandbox.Text{"zh": trf("zh", "prog.error", why.Text.Get("zh")), "en": trf("en", "prog.error", why.Text.Get("en"))}
	case errors.Is(err, context.DeadlineExceeded):
		return bothLangs("prog.error.timeout")
	}
	return bothLangs("prog.error.lab")
}

// programDiagnostics turns compiler output into error events at their
// lines (Figures line, column), at most 50.
func programDiagnostics(out string) []sandbox.Event {
	var evs []sandbox.Event
	for l := range strings.SplitSeq(out, "\n") {
		m := diagLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil || len(evs) >= 50 {
			continue
		}
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		kind := m[3]
		if kind == "" {
			kind = "error"
		}
		evs = append(evs, sandbox.Event{Type: sandbox.EvError, Call: "tcc", Name: kind, Message: m[4],
			Figures: map[string]float64{"line": float64(line), "column": float64(col)}})
	}
	return evs
}

// programSegment is one :::program of the page: its text and the editor,
// whose code and record the page's script loads (static/js/program.js),
// so the segment is the same for every learner.
func (s *Server) programSegment(lr *lessonRequest, seg lessons.Segment) templ.Component {
	n, board := 0, ""
	for i, p := range lr.Lesson.Programs {
		if p.ID == seg.ID {
			n = i + 1
			if p.Config.Leaderboard != "" {
				board = boardPath(lr.Lesson, p)
			}
		}
	}
	strs := map[string]string{}
	for _, k := range []string{"prog.running", "prog.reset.confirm", "prog.solution.ask", "prog.solution.h",
		"prog.saved", "prog.saving", "prog.savefail", "prog.line", "prog.peer", "prog.times",
		"prog.restore.ask", "prog.hint.next", "prog.diff", "prog.diff.hide", "prog.diff.h", "prog.diff.same"} {
		strs[strings.TrimPrefix(k, "prog.")] = lr.T(k)
	}
	js, _ := json.Marshal(strs)
	return views.Program(views.ProgramWidget{
		ID: seg.ID, Heading: trf(lr.Lang, "prog.heading", n), Text: templ.Raw(seg.HTML), // trusted: rendered by lessons from the course's Markdown
		Endpoint: "/api/lessons/" + lr.Lesson.Slug + "/programs/" + seg.ID, Lang: lr.Lang,
		Editor: trf(lr.Lang, "prog.editor", n), Keys: lr.T("prog.keys"), TabIndent: lr.T("prog.tabindent"), Run: lr.T("prog.run"), Reset: lr.T("prog.reset"), Solution: lr.T("prog.solution"),
		Hint: lr.T("prog.hint"), Hints: lr.T("prog.hints"), Diff: lr.T("prog.diff"), Restore: lr.T("prog.restore"),
		Output: lr.T("prog.output"), Diags: lr.T("prog.diags"), NoScript: lr.T("prog.noscript"),
		Strings: string(js), Preview: lr.Draft, Board: board, BoardText: lr.T("board.link"),
	})
}
