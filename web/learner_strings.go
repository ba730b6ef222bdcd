package web

// Strings of issue 14's learner fixes (run widget, /runs, quizzes), kept
// in their own file so parallel edits of i18n.go stay small.
var learnerStrings = uiTable{
	"zh": {
		"run.live.other":         "你的另一个实验（%s）正在排队或运行：它结束后这里才能运行。",
		"run.live.open":          "查看那次运行",
		"run.lab.details":        "查看实验环境",
		"run.preset.cue":         "已按预设“%s”填好参数：按“运行”开始。",
		"run.yes":                "是",
		"run.no":                 "否",
		"lesson.skip_toc":        "跳过目录，直接读正文",
		"lesson.runs":            "我的实验记录（每次运行都可回放）",
		"quiz.reveal":            "显示答案",
		"instr.reveals":          "人选择了显示答案",
		"instr.format_errors":    "次数字格式无法识别",
		"quiz.revealed":          "答案如下（你选择了查看答案，老师能看到这一点）。",
		"quiz.wrong.try":         "✗ 还不对：看看对你所选内容的反馈和提示，再试一次。",
		"quiz.reveal.after":      "再答错 %d 次后会显示答案；也可以现在按“显示答案”。",
		"quiz.reveal.only":       "想看答案可以按“显示答案”。",
		"quiz.mark.answer":       "✓ 正确答案",
		"quiz.mark.order.answer": "✓ 这一步在这里",
	},
	"en": {
		"run.live.other":         "Another run of yours (%s) is queued or running: Run works here once it ends.",
		"run.live.open":          "Open that run",
		"run.lab.details":        "see the lab",
		"run.preset.cue":         "Preset “%s” filled in the parameters: press Run to start.",
		"run.yes":                "yes",
		"run.no":                 "no",
		"lesson.skip_toc":        "Skip the contents, go to the lesson",
		"lesson.runs":            "My runs (every run can be replayed)",
		"quiz.reveal":            "Show answer",
		"instr.reveals":          "chose “show answer”",
		"instr.format_errors":    "unreadable number format(s)",
		"quiz.revealed":          "Here is the answer (you chose to see it; your instructor can see that).",
		"quiz.wrong.try":         "✗ Not yet: read the feedback on what you chose and the hint, then try again.",
		"quiz.reveal.after":      "The answer shows after %d more wrong attempt(s), or choose “Show answer” now.",
		"quiz.reveal.only":       "Choose “Show answer” if you want to see it.",
		"quiz.mark.answer":       "✓ correct answer",
		"quiz.mark.order.answer": "✓ this step goes here",
	},
}
