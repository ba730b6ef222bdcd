package web

import (
	"context"
	"net/url"

	"github.com/rdmalab/rdmalab/web/page"
)

// Task setups: a lesson's :::task may name a setup script (setup=…), lesson
// code the lab runs as root in the learner's own guest each time the
// terminal is opened on that lesson's page, after the machine is up and
// before the terminal takes keystrokes. It prepares what the task needs and
// the learner's shell (uid 1000) may not do itself — load modules, export
// an NVMe-oF target — and grants the one right the task needs (lesson 08:
// group access to /dev/nvme-fabrics). Only the page's lesson slug comes from
// the browser; the scripts are the lesson's own files, never learner input.
// They run through the same path as a task check (root, bounded in time and
// output, one at a time per guest).

// terminalEndpoint is the terminal widget's WebSocket path for a lesson:
// with ?lesson= when the lesson has task setups to run.
func terminalEndpoint(lr *lessonRequest) string {
	if lr.Lesson == nil || len(lr.Lesson.Setups()) == 0 {
		return "/api/terminal"
	}
	return "/api/terminal?lesson=" + url.QueryEscape(lr.Lesson.Slug)
}

// runTaskSetups runs the setups of lesson slug in learner's guest; what
// failed is said to the learner (status) and logged, and the terminal
// opens anyway (the task's check then says what is missing).
func (s *Server) runTaskSetups(ctx context.Context, learner, slug, lang string, status func(string)) {
	l := s.course().Lesson(slug)
	if l == nil {
		return
	}
	v := s.cfg.Terminals
	if v == nil {
		return
	}
	for _, t := range l.Tasks {
		if t.Setup == nil {
			continue
		}
		status(tr(lang)("term.setup"))
		verdict, err := v.Verify(ctx, learner, t.Setup, lang)
		if err == nil && verdict.Passed {
			continue
		}
		detail := verdict.Detail
		if err != nil {
			detail = err.Error()
		}
		s.log.Warn("task setup", "lesson", slug, "task", t.ID, "setup", t.SetupPath, "detail", detail, "output", taskHint(string(verdict.Output)))
		status(trf(lang, "term.setupfailed", t.ID))
	}
}

// termSetupStrings are what the learner reads while a setup runs.
var termSetupStrings = page.Table{
	"zh": {
		"term.setup":       "正在为本课的任务准备你的虚拟机……",
		"term.setupfailed": "没能为任务「%s」准备好你的虚拟机；检查时会告诉你缺了什么。",
	},
	"en": {
		"term.setup":       "Preparing your machine for this lesson's tasks…",
		"term.setupfailed": "Your machine could not be prepared for the task “%s”; its check will say what is missing.",
	},
}
