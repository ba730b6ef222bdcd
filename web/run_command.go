package web

import (
	"errors"
	"io"
	"net/http"

	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/web/page"
)

// CommandRunner is the part of runner.Runner that delivers learner
// commands to interactive runs; a Runner without it has none.
type CommandRunner interface {
	Command(runID, learner string, c sandbox.Command) error
}

// runCommand is POST /api/runs/{id}/commands {"cmd": NAME}: one learner
// command to their live interactive run (the step-through). The command is
// checked here against the experiment's declared set, by the runner, and
// again by the agent; its answer arrives on the run's event stream, after
// the stored "command" event.
func (s *Server) runCommand(w http.ResponseWriter, r *http.Request) {
	if !s.sandboxOn() {
		s.WriteError(w, r, errSandboxOff)
		return
	}
	lang := page.LangOf(r)
	t := tr(lang)
	body, err := io.ReadAll(r.Body) // at most page.MaxBody (body_limit.go)
	if err != nil {
		s.WriteError(w, r, page.Errorf(page.CodeBadRequest, err.Error()))
		return
	}
	cmd, err := sandbox.DecodeCommand(body)
	if err != nil {
		s.WriteError(w, r, page.Errorf(page.CodeBadRequest, err.Error()))
		return
	}
	run, err := s.loadRun(r)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	if run.Learner != learnerID(r) {
		s.WriteError(w, r, page.Errorf(page.CodeForbidden, t("run.err.cmd.notyours")))
		return
	}
	cr, ok := s.cfg.Runner.(CommandRunner)
	if !ok {
		s.WriteError(w, r, page.Errorf(page.CodeInvalid, t("run.err.cmd.none")))
		return
	}
	if err := cr.Command(run.ID, run.Learner, cmd); err != nil {
		var ce *sandbox.CommandError
		switch {
		case errors.As(err, &ce):
			s.WriteError(w, r, page.Errorf(page.CodeInvalid, trf(lang, "run.err.cmd.unknown", cmd.Cmd)))
		case errors.Is(err, sandbox.ErrNotInteractive):
			s.WriteError(w, r, page.Errorf(page.CodeInvalid, t("run.err.cmd.none")))
		case errors.Is(err, runner.ErrNotStarted):
			s.WriteError(w, r, page.Errorf(page.CodeConflict, t("run.err.cmd.queued")))
		case errors.Is(err, runner.ErrCommandBusy):
			s.WriteError(w, r, page.Errorf(page.CodeBusy, t("run.err.cmd.busy")))
		case errors.Is(err, runner.ErrUnknownRun):
			s.WriteError(w, r, page.Errorf(page.CodeConflict, t("run.err.finished")))
		default:
			s.WriteError(w, r, err)
		}
		return
	}
	page.WriteJSON(w, http.StatusAccepted, map[string]string{"id": run.ID, "cmd": cmd.Cmd})
}

var commandStrings = page.Table{
	"zh": {
		"run.err.cmd.notyours": "只有提交这个运行的人可以操作它。",
		"run.err.cmd.unknown":  "这个实验不接受命令“%s”。",
		"run.err.cmd.none":     "这个运行不接受命令。",
		"run.err.cmd.queued":   "运行还在排队：等它开始后再操作。",
		"run.err.cmd.busy":     "上一个操作还没有完成：等它的结果出来再继续。",
	},
	"en": {
		"run.err.cmd.notyours": "Only the learner who started this run can drive it.",
		"run.err.cmd.unknown":  "This experiment takes no command %q.",
		"run.err.cmd.none":     "This run takes no commands.",
		"run.err.cmd.queued":   "The run is still queued: wait for it to start.",
		"run.err.cmd.busy":     "The previous step has not finished: wait for its answer.",
	},
}
