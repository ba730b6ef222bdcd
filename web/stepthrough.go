package web

import (
	"encoding/json"

	"github.com/a-h/templ"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// interactive returns experiment id when it takes commands (the
// step-through), else nil.
func (s *Server) interactive(id string) *sandbox.Experiment {
	if s.cfg.Experiments == nil {
		return nil
	}
	if e := s.cfg.Experiments.Get(id); e != nil && e.Interactive() {
		return e
	}
	return nil
}

// stepThroughSegment renders `::experiment ID` of an interactive
// experiment as the step-through widget.
func (s *Server) stepThroughSegment(lang string, exp *sandbox.Experiment) templ.Component {
	t := tr(lang)
	w := views.StepThroughWidget{T: t, Lang: lang, ID: exp.ID, Title: exp.Title.Get(lang), Summary: exp.Summary.Get(lang)}
	if !s.sandboxOn() {
		w.Unavailable = t("run.off")
	}
	strs := map[string]string{}
	for _, k := range stepClientKeys {
		strs[k] = t(k)
	}
	for _, c := range exp.Commands {
		label := c.Title.Get(lang)
		if label == "" {
			label = c.Name
		}
		w.Commands = append(w.Commands, views.StepCommand{Name: c.Name, Label: label})
		strs["cmd."+c.Name] = label
	}
	b, _ := json.Marshal(strs)
	w.Strings = string(b)
	return views.StepThrough(w)
}

// interactiveAssets adds the step-through's assets to a lesson page that
// places an interactive experiment.
func (s *Server) interactiveAssets(page *lessons.Page) []views.Assets {
	for _, seg := range page.Body {
		if seg.Kind == lessons.SegExperiment && s.interactive(seg.ID) != nil {
			return []views.Assets{views.StepThroughAssets}
		}
	}
	return nil
}

// stepItems turns a stored run's command and step events into the replay's
// step list: each step with the command that asked for it.
func stepItems(events []sandbox.Event, lang string) []views.StepItem {
	var out []views.StepItem
	pending := ""
	for _, ev := range events {
		switch ev.Type {
		case sandbox.EvCommand:
			pending = ev.Name
		case sandbox.EvStep:
			it := views.StepItem{Command: pending, Name: ev.Name, Title: localized(ev, lang), Call: ev.Call, Code: ev.Code,
				Detail: ev.Detail.Get(lang), OK: ev.OK == nil || *ev.OK, Status: ev.ErrnoName}
			if tb := ev.Table.In(lang); tb != nil {
				it.Columns, it.Rows = tb.Columns, tb.Rows
			}
			out = append(out, it)
			pending = ""
		}
	}
	return out
}

// stepClientKeys are the UI strings stepthrough.js needs.
var stepClientKeys = []string{
	"steps.code", "steps.result", "steps.you", "steps.waiting", "steps.ready", "steps.ended", "steps.failed",
	"steps.lab.booting", "steps.lab.ready", "steps.lab.failed", "steps.lab.none", "steps.queued", "steps.running",
	"steps.done", "steps.cancelled", "steps.timed-out", "steps.interrupted", "steps.err", "run.connection",
}

var stepStrings = page.Table{
	"zh": {
		"steps.kicker":      "单步实验",
		"steps.start":       "开始",
		"steps.toolbar":     "单步操作",
		"steps.nojs":        "这个实验需要 JavaScript：每一步都是对一次正在进行的运行发出的请求。",
		"steps.code":        "C 代码：",
		"steps.result":      "设备返回",
		"steps.you":         "你的操作：",
		"steps.waiting":     "设备正在执行……",
		"steps.ready":       "等你选择下一步。",
		"steps.ended":       "运行结束：所有资源都已释放。“开始”可以再走一遍。",
		"steps.failed":      "运行失败：%s",
		"steps.lab.booting": "Soft-RoCE 实验环境：启动中……（就绪后即可开始）",
		"steps.lab.ready":   "Soft-RoCE 实验环境：就绪",
		"steps.lab.failed":  "Soft-RoCE 实验环境：启动失败——%s",
		"steps.lab.none":    "这台机器没有 Soft-RoCE 实验环境：%s",
		"steps.queued":      "排队中（前面还有 %d 个）……",
		"steps.running":     "已连接到实验环境。",
		"steps.done":        "完成",
		"steps.cancelled":   "已取消：进程结束时内核收回了全部资源。",
		"steps.timed-out":   "长时间没有操作：运行已拆除资源并结束。",
		"steps.interrupted": "服务器在运行期间停止了。",
		"steps.err":         "出错了：%s",
	},
	"en": {
		"steps.kicker":      "Step-through",
		"steps.start":       "Start",
		"steps.toolbar":     "Step controls",
		"steps.nojs":        "This experiment needs JavaScript: each step is a request to a live run.",
		"steps.code":        "C code:",
		"steps.result":      "What the device returned",
		"steps.you":         "You chose: ",
		"steps.waiting":     "The device is working…",
		"steps.ready":       "Your move: choose the next step.",
		"steps.ended":       "The run has ended and freed everything. Start walks it again.",
		"steps.failed":      "The run failed: %s",
		"steps.lab.booting": "Soft-RoCE lab: booting… (Start works once it is ready)",
		"steps.lab.ready":   "Soft-RoCE lab: ready",
		"steps.lab.failed":  "Soft-RoCE lab: failed to start — %s",
		"steps.lab.none":    "This machine has no Soft-RoCE lab: %s",
		"steps.queued":      "Queued (%d ahead)…",
		"steps.running":     "Connected to the lab.",
		"steps.done":        "Done",
		"steps.cancelled":   "Cancelled: the kernel reclaimed everything when the process ended.",
		"steps.timed-out":   "No command for a long time: the run tore everything down and ended.",
		"steps.interrupted": "The server stopped during the run.",
		"steps.err":         "Something went wrong: %s",
	},
}
