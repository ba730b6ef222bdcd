package web

import (
	"errors"
	"net/http"

	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/web/page"
)

// Runner is what the run handlers need from runner.Runner.
type Runner interface {
	Submit(learner, experiment string, raw map[string]any) (sandbox.RunInfo, error)
	Cancel(runID string) error
	Lookup(runID string) (sandbox.RunInfo, bool)
}

// errSandboxOff answers experiment requests on a server started without
// a runner.
var errSandboxOff = page.Errorf(page.CodeUnavailable, "experiments are not enabled on this server")

// sandboxOn reports whether runs can be submitted and streamed.
func (s *Server) sandboxOn() bool {
	return s.cfg.Runner != nil && s.cfg.Runs != nil && s.cfg.Experiments != nil
}

// submitError turns a Submit error into a user-facing one in the
// learner's language.
func submitError(r *http.Request, err error) error {
	t := tr(page.LangOf(r))
	var pe *sandbox.ParamError
	switch {
	case errors.As(err, &pe):
		// 400 as the interface promises; the message names the param and its bounds.
		msg := pe.Message
		if m := pe.Messages.Get(page.LangOf(r)); m != "" {
			msg = m // the bounds in the learner's language, not English inside Chinese
		}
		return &page.Error{Code: page.CodeBadRequest, Message: trf(page.LangOf(r), "run.err.param", pe.Param, msg), Err: err}
	case errors.Is(err, sandbox.ErrUnknownExperiment):
		return &page.Error{Code: page.CodeBadRequest, Message: t("run.err.unknown") + ": " + err.Error(), Err: err}
	case errors.Is(err, runner.ErrLearnerActive):
		return &page.Error{Code: page.CodeConflict, Message: t("run.err.active"), Err: err}
	case errors.Is(err, runner.ErrBusy):
		return &page.Error{Code: page.CodeBusy, Message: t("run.err.busy"), Err: err}
	case errors.Is(err, runner.ErrClosed):
		return &page.Error{Code: page.CodeUnavailable, Message: t("run.err.closed"), Err: err}
	}
	return err
}

var runStrings = page.Table{
	"zh": {
		"run.kicker":             "实验",
		"run.run":                "运行",
		"run.cancel":             "取消",
		"run.presets":            "预设",
		"run.params":             "参数",
		"run.bounds":             "范围：%s。",
		"run.phases":             "阶段",
		"run.log":                "日志",
		"run.log.count":          "日志（%d）",
		"run.backend.line":       "%s：%s。",
		"run.metric.label":       "%s（%s）",
		"run.charts":             "实时曲线",
		"run.chart.data":         "本图的数据（表格）",
		"run.chart.named":        "曲线图：%s",
		"run.tables":             "结果表",
		"run.verdict":            "结论",
		"run.error":              "错误",
		"run.error.expected":     "预期中的错误（实验有意触发）",
		"run.backend":            "运行位置",
		"run.backend.name.host":  "本机（host）",
		"run.backend.name.vm":    "Soft-RoCE 虚拟机（vm）",
		"run.backend.host":       "在本服务器自己的 Linux 内核上运行，不需要 RDMA 设备：CPU 时间、吞吐和错误码都是这台机器的真实测量。",
		"run.backend.vm":         "在 Soft-RoCE 虚拟机（QEMU 里的 rdma_rxe）中运行。Soft-RoCE 是软件实现：操作的语义和哪个进程在运行是真实的；但它每次投递都要一次 write() 系统调用，报文由内核用 CPU 构造和拷贝，所以延迟、带宽和内核的 CPU 开销都不是硬件数字（硬件 RDMA 单向约 1–3 µs，课程资料）。",
		"run.backend.none":       "这台机器上没有能运行这个实验的后端。",
		"run.status.queued":      "排队中",
		"run.status.running":     "运行中",
		"run.status.done":        "完成",
		"run.status.failed":      "失败",
		"run.status.cancelled":   "已取消",
		"run.status.timed-out":   "超时",
		"run.status.interrupted": "被中断",
		"run.position":           "前面还有 %d 个运行（你排第 %d 位）",
		"run.replay":             "这次运行的回放页面",
		"run.history":            "我的实验记录",
		"run.history.lede":       "你运行过的每个实验都被完整保存，可以随时回放。",
		"run.history.empty":      "你还没有运行过实验。",
		"run.col.when":           "时间",
		"run.col.experiment":     "实验",
		"run.col.status":         "状态",
		"run.col.backend":        "后端",
		"run.col.verdict":        "结论",
		"run.col.series":         "曲线",
		"run.col.points":         "点数",
		"run.col.last":           "最后值",
		"run.col.min":            "最小",
		"run.col.max":            "最大",
		"run.title":              "实验运行 %s",
		"run.created":            "提交于",
		"run.refresh":            "运行还没结束：这个页面每 3 秒自动刷新一次。",
		"run.unavailable":        "实验 %s 在这个版本的服务器里不可用。",
		"run.off":                "本服务器没有开启实验沙箱，实验不能运行。",
		"run.lab.link":           "Soft-RoCE 实验环境：查看状态",
		"run.lab.booting":        "Soft-RoCE 实验环境：启动中…（就绪后即可运行）",
		"run.lab.ready":          "Soft-RoCE 实验环境：就绪（%s，内核 %s，%s）",
		"run.lab.failed":         "Soft-RoCE 实验环境：启动失败 —— %s",
		"run.lab.none":           "这台机器没有 Soft-RoCE 实验环境：%s",
		"run.lab.unknown":        "Soft-RoCE 实验环境：状态未知（%s）",
		"run.nojs":               "浏览器没有运行 JavaScript：按“运行”会打开这次运行的页面，页面会自动刷新直到结束。",
		"run.back":               "返回",
		"run.again":              "回到课文再运行一次",
		"run.err.param":          "参数 %s 不合法：%s",
		"run.err.unknown":        "没有这个实验",
		"run.err.active":         "你已经有一个实验在排队或运行：等它结束，或先取消它。",
		"run.err.busy":           "实验室正忙，请过一分钟再试。",
		"run.err.closed":         "实验室正在关闭，请稍后再试。",
		"run.err.notyours":       "只有提交这个运行的人可以取消它。",
		"run.err.finished":       "这个运行已经结束了。",
		"run.connection":         "与服务器的连接断了，正在重连……",
		"run.live.other":         "你的另一个实验（%s）正在排队或运行：它结束后这里才能运行。",
		"run.live.open":          "查看那次运行",
		"run.lab.details":        "查看实验环境",
		"run.preset.cue":         "已按预设“%s”填好参数：按“运行”开始。",
		"run.yes":                "是",
		"run.no":                 "否",
	},
	"en": {
		"run.kicker":             "Experiment",
		"run.run":                "Run",
		"run.cancel":             "Cancel",
		"run.presets":            "Presets",
		"run.params":             "Parameters",
		"run.bounds":             "range: %s.",
		"run.phases":             "Phases",
		"run.log":                "Log",
		"run.log.count":          "Log (%d)",
		"run.backend.line":       "%s: %s.",
		"run.metric.label":       "%s (%s)",
		"run.charts":             "Live charts",
		"run.chart.data":         "This chart's data (table)",
		"run.chart.named":        "Chart: %s",
		"run.tables":             "Results",
		"run.verdict":            "Verdict",
		"run.error":              "Error",
		"run.error.expected":     "Expected error (the experiment provoked it)",
		"run.backend":            "Ran on",
		"run.backend.name.host":  "host",
		"run.backend.name.vm":    "vm",
		"run.backend.host":       "Runs on this server's own Linux kernel and needs no RDMA device: CPU time, throughput and error codes are real measurements of this machine.",
		"run.backend.vm":         "Runs inside the Soft-RoCE guest (rdma_rxe in QEMU). Soft-RoCE is software: the semantics and which process runs are real, but every post is a write() system call and the kernel builds and copies the packets on the CPU, so latency, bandwidth and the kernel's CPU cost are not hardware figures (hardware RDMA: about 1–3 µs one way, per the course material).",
		"run.backend.none":       "No backend on this machine can run this experiment.",
		"run.status.queued":      "Queued",
		"run.status.running":     "Running",
		"run.status.done":        "Done",
		"run.status.failed":      "Failed",
		"run.status.cancelled":   "Cancelled",
		"run.status.timed-out":   "Timed out",
		"run.status.interrupted": "Interrupted",
		"run.position":           "runs ahead of yours: %d (you are number %d)",
		"run.replay":             "Replay page of this run",
		"run.history":            "My runs",
		"run.history.lede":       "Every experiment you ran is kept in full and can be replayed.",
		"run.history.empty":      "You have not run an experiment yet.",
		"run.col.when":           "When",
		"run.col.experiment":     "Experiment",
		"run.col.status":         "Status",
		"run.col.backend":        "Backend",
		"run.col.verdict":        "Verdict",
		"run.col.series":         "Series",
		"run.col.points":         "Points",
		"run.col.last":           "Last",
		"run.col.min":            "Min",
		"run.col.max":            "Max",
		"run.title":              "Run %s",
		"run.created":            "Submitted",
		"run.refresh":            "The run is not finished: this page refreshes every 3 seconds.",
		"run.unavailable":        "Experiment %s is not available in this build of the server.",
		"run.off":                "This server has no experiment sandbox enabled; experiments cannot run.",
		"run.lab.link":           "Soft-RoCE lab: see its state",
		"run.lab.booting":        "Soft-RoCE lab: booting… (Run enables when it is ready)",
		"run.lab.ready":          "Soft-RoCE lab: ready (%s, kernel %s, %s)",
		"run.lab.failed":         "Soft-RoCE lab: failed to start — %s",
		"run.lab.none":           "No Soft-RoCE lab on this machine: %s",
		"run.lab.unknown":        "Soft-RoCE lab: state unknown (%s)",
		"run.nojs":               "JavaScript is off: Run opens this run's page, which refreshes until the run ends.",
		"run.back":               "Back",
		"run.again":              "Back to the lesson to run it again",
		"run.err.param":          "param %s is not valid: %s",
		"run.err.unknown":        "no such experiment",
		"run.err.active":         "You already have a run queued or running: wait for it to finish, or cancel it.",
		"run.err.busy":           "The lab is busy, try again in a minute.",
		"run.err.closed":         "The lab is shutting down; try again shortly.",
		"run.err.notyours":       "Only the learner who started this run can cancel it.",
		"run.err.finished":       "This run has already finished.",
		"run.connection":         "The connection to the server dropped; reconnecting…",
		"run.live.other":         "Another run of yours (%s) is queued or running: Run works here once it ends.",
		"run.live.open":          "Open that run",
		"run.lab.details":        "see the lab",
		"run.preset.cue":         "Preset “%s” filled in the parameters: press Run to start.",
		"run.yes":                "yes",
		"run.no":                 "no",
	},
}
