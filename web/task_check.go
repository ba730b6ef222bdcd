package web

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/textclip"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// A lesson's :::task steps (issue 20): the learner does something in their
// terminal, presses Check, and the lab runs the task's verify script (from
// the lesson folder) inside that learner's own guest, beside their shell.
// Exit status 0 marks the task done for the learner; otherwise the
// script's short output is the hint. POST /api/lessons/{slug}/tasks/{id}/check
// is a learner write like the others: cross-origin protection and the
// per-address write limit apply (routes.go), plus a per-learner limit on
// checks here, since each one runs a script in a guest.

// TaskVerdict is what a verify script said (the domain's).
type TaskVerdict = rdmalab.TaskVerdict

// ErrNoTerminal: the learner has no open terminal to check a task in.
var ErrNoTerminal = rdmalab.ErrNoTerminal

// ErrTaskBusy: another check of the learner's runs right now.
var ErrTaskBusy = errors.New("another check is running")

// taskChecking holds the learners whose check runs now: one at a time each.
var taskChecking sync.Map

const (
	taskCheckBurst = 6               // checks at once per learner
	taskCheckEvery = 5 * time.Second // then one per
	// taskHintMax bounds the hint shown from a failing script's output.
	taskHintLines = 8
	taskHintBytes = 800
)

// taskStrings are the :::task widget's and the Check endpoint's texts.
var taskStrings = page.Table{
	"zh": {
		"task.heading":     "任务 %d",
		"task.check":       "检查",
		"task.checking":    "正在你的虚拟机里检查……",
		"task.done":        "已完成 ✓",
		"task.todo":        "尚未完成",
		"task.checks":      "已检查 %d 次",
		"task.checks1":     "已检查 1 次",
		"task.noscript":    "检查按钮需要 JavaScript。",
		"task.passed":      "通过：检查脚本在你的虚拟机里确认了这一步：",
		"task.failed":      "还没有通过（%s）。检查脚本的提示：",
		"task.failed.kept": "这次没有通过（%s），但你之前已经完成过这个任务，它仍然算完成。检查脚本的提示：",
		"task.noterm":      "你的终端还没有打开：先打开上面的终端（如果你在排队等空位，等到出现提示符），在里面完成这一步，再按“检查”。（%s没有按键虚拟机就会被回收，那时需要重新做一遍。）",
		"task.busy":        "上一次检查还在进行，请稍等。",
		"task.rate":        "你检查得太频繁了：请 %d 秒后再试。",
		"task.unknown":     "这一课没有这个任务。",
		"task.error":       "检查没能运行：%s",
		"task.timeout":     "超时",
		"task.exit":        "退出状态 %s",
	},
	"en": {
		"task.heading":     "Task %d",
		"task.check":       "Check",
		"task.checking":    "Checking in your machine…",
		"task.done":        "Done ✓",
		"task.todo":        "Not done yet",
		"task.checks":      "checked %d times",
		"task.checks1":     "checked once",
		"task.noscript":    "The Check button needs JavaScript.",
		"task.passed":      "Passed: the check script confirmed this step in your machine:",
		"task.failed":      "Not passed yet (%s). The check script's hint:",
		"task.failed.kept": "This check did not pass (%s), but you completed the task before, so it stays done. The check script's hint:",
		"task.noterm":      "Your terminal is not open yet: open the terminal above (if you are waiting in line for a machine, wait until its prompt appears), do the step in it, then press Check. (A machine is discarded after %s without a keystroke; you would do the step again.)",
		"task.busy":        "The previous check is still running; wait a moment.",
		"task.rate":        "You are checking too often: try again in %d s.",
		"task.unknown":     "This lesson has no such task.",
		"task.error":       "The check could not run: %s",
		"task.timeout":     "timed out",
		"task.exit":        "exit status %s",
	},
}

// taskCheckResponse is the Check endpoint's answer.
type taskCheckResponse struct {
	Status  string `json:"status"`           // passed, failed, no-terminal
	Done    bool   `json:"done"`             // the task is done for the learner (now or before)
	Message string `json:"message"`          // in the learner's language
	Hint    string `json:"hint,omitempty"`   // the script's short output (what it found)
	Checks  int    `json:"checks,omitempty"` // checks so far
	// ChecksText is Checks in words ("checked 3 times"), for the page's
	// line beside Check, which the page rendered before this check.
	ChecksText string `json:"checks_text,omitempty"`
}

// checksText is "checked once" / "checked N times" in lang; "" for none.
func checksText(lang string, n int) string {
	switch {
	case n <= 0:
		return ""
	case n == 1:
		return tr(lang)("task.checks1")
	}
	return trf(lang, "task.checks", n)
}

func (s *Server) taskCheck(w http.ResponseWriter, r *http.Request) {
	lang := page.LangOf(r)
	t := tr(lang)
	l := s.course().Lesson(chi.URLParam(r, "slug"))
	var task *lessons.Task
	if l != nil {
		task = l.Task(chi.URLParam(r, "id"))
	}
	if task == nil {
		s.WriteError(w, r, page.Errorf(page.CodeNotFound, t("task.unknown")))
		return
	}
	v := s.cfg.Terminals
	if v == nil {
		s.WriteError(w, r, page.Errorf(page.CodeUnavailable, t("term.off")))
		return
	}
	learner := learnerID(r)
	if ok, wait := s.limits.taskCheck.allow(learner); !ok {
		s.WriteError(w, r, page.Errorf(page.CodeRateLimited, trf(lang, "task.rate", page.RetryAfter(w, wait))))
		return
	}
	if _, busy := taskChecking.LoadOrStore(learner, struct{}{}); busy {
		s.WriteError(w, r, page.Errorf(page.CodeConflict, t("task.busy")))
		return
	}
	verdict, err := v.Verify(r.Context(), learner, task.Script, lang)
	taskChecking.Delete(learner)
	switch {
	case errors.Is(err, ErrNoTerminal):
		page.WriteJSON(w, http.StatusOK, taskCheckResponse{Status: "no-terminal", Message: trf(lang, "task.noterm", minutesSpan(lang, s.reclaimsAfter()))})
		return
	case errors.Is(err, ErrTaskBusy):
		s.WriteError(w, r, page.Errorf(page.CodeConflict, t("task.busy")))
		return
	case err != nil:
		s.log.Warn("task check", "lesson", l.Slug, "task", task.ID, "err", err)
		s.WriteError(w, r, page.Errorf(page.CodeUnavailable, trf(lang, "task.error", err.Error())))
		return
	}
	if err := s.cfg.Store.RecordTaskCheck(r.Context(), learner, l.Slug, task.ID, verdict.Passed); err != nil {
		s.WriteError(w, r, err)
		return
	}
	if verdict.Passed {
		s.ltiQueueLesson(r.Context(), learner, l.Slug) // a task done may complete the lesson (lti_scores.go)
	}
	recs, err := s.cfg.Store.LessonTasks(r.Context(), learner, l.Slug)
	if err != nil {
		s.WriteError(w, r, err)
		return
	}
	rec := recs[task.ID]
	resp := taskCheckResponse{Done: rec.Done(), Checks: rec.Checks, ChecksText: checksText(lang, rec.Checks)}
	resp.Hint = taskHint(string(verdict.Output))
	if verdict.Passed {
		resp.Status, resp.Message = "passed", t("task.passed")
	} else {
		detail := verdict.Detail
		if n, ok := strings.CutPrefix(detail, "exit status "); ok {
			detail = trf(lang, "task.exit", n)
		} else if strings.HasPrefix(detail, "timed out") {
			detail = t("task.timeout")
		}
		key := "task.failed"
		if rec.Done() {
			key = "task.failed.kept"
		}
		resp.Status, resp.Message = "failed", trf(lang, key, detail)
	}
	page.WriteJSON(w, http.StatusOK, resp)
}

// taskHint is the first lines of a script's output, bounded, valid UTF-8.
func taskHint(out string) string {
	out = strings.ToValidUTF8(strings.TrimSpace(out), "")
	lines := strings.Split(out, "\n")
	if len(lines) > taskHintLines {
		lines = append(lines[:taskHintLines], "…")
	}
	return textclip.Bytes(strings.Join(lines, "\n"), taskHintBytes)
}

// taskSegment is one :::task of the page with the learner's record.
func (s *Server) taskSegment(lr *lessonRequest, seg lessons.Segment) templ.Component {
	n := 0
	for i, t := range lr.Lesson.Tasks {
		if t.ID == seg.ID {
			n = i + 1
		}
	}
	var rec store.TaskProgress
	if lr.Learner != "" && !lr.Draft { // a draft's preview reads no learner's records
		recs, err := s.learnerTasks(lr)
		if err != nil {
			return failing(err)
		}
		rec = recs[seg.ID]
	}
	w := views.TaskWidget{
		ID: seg.ID, Heading: trf(lr.Lang, "task.heading", n), Text: templ.Raw(seg.HTML), // trusted: rendered by lessons from the course's Markdown
		Endpoint: "/api/lessons/" + lr.Lesson.Slug + "/tasks/" + seg.ID + "/check", Lang: lr.Lang,
		Check: lr.T("task.check"), Checking: lr.T("task.checking"), NoScript: lr.T("task.noscript"),
		Done: rec.Done(), DoneText: lr.T("task.done"), Todo: lr.T("task.todo"), Checks: rec.Checks,
	}
	w.ChecksOf = checksText(lr.Lang, rec.Checks)
	if lr.Draft {
		w.Preview = lr.T("draft.task")
	}
	return views.Task(w)
}

// learnerTasks loads the learner's task records for the page once per
// request.
func (s *Server) learnerTasks(lr *lessonRequest) (map[string]store.TaskProgress, error) {
	if lr.tasks == nil {
		recs, err := s.cfg.Store.LessonTasks(lr.r.Context(), lr.Learner, lr.Lesson.Slug)
		if err != nil {
			return nil, err
		}
		lr.tasks = recs
	}
	return lr.tasks, nil
}
