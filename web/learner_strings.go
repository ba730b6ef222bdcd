package web

// Strings of issue 14's learner fixes (run widget, /runs, quizzes), kept
// in their own file so parallel edits of i18n.go stay small.
func init() {
	addStrings("zh", map[string]string{
		"run.live.other":  "你的另一个实验（%s）正在排队或运行：它结束后这里才能运行。",
		"run.live.open":   "查看那次运行",
		"run.preset.cue":  "已按预设“%s”填好参数：按“运行”开始。",
		"run.yes":         "是",
		"run.no":          "否",
		"lesson.skip_toc": "跳过目录，直接读正文",
		"lesson.runs":     "我的实验记录（每次运行都可回放）",
	})
	addStrings("en", map[string]string{
		"run.live.other":  "Another run of yours (%s) is queued or running: Run works here once it ends.",
		"run.live.open":   "Open that run",
		"run.preset.cue":  "Preset “%s” filled in the parameters: press Run to start.",
		"run.yes":         "yes",
		"run.no":          "no",
		"lesson.skip_toc": "Skip the contents, go to the lesson",
		"lesson.runs":     "My runs (every run can be replayed)",
	})
}
