package instructor

import "github.com/rdmalab/rdmalab/web/page"

// Strings of one learner's programs (learner_programs.go).
var learnerProgramsStrings = page.Table{
	"zh": {
		"lprog.title":     "%s 的编程练习",
		"lprog.back":      "← 成绩册",
		"lprog.lede":      "每道编程练习：运行并检查的次数、通过次数、看过的提示、是否看过参考答案，以及最后一次提交运行的代码。",
		"lprog.exercise":  "练习 %d（%s）",
		"lprog.record":    "运行并检查 %d 次，通过 %d 次，看提示 %d/%d 条",
		"lprog.passed":    "已通过",
		"lprog.solution":  "看过参考答案",
		"lprog.submitted": "最后一次提交：%s，%s 字节",
		"lprog.run":       "打开这次运行的记录",
		"lprog.nosub":     "还没有提交过代码。",
		"lprog.none":      "这一课没有编程练习。",
		"lprog.code":      "最后一次提交的代码",
	},
	"en": {
		"lprog.title":     "Programs of %s",
		"lprog.back":      "← Gradebook",
		"lprog.lede":      "Each program exercise: checked runs, passes, hints revealed, whether the solution was shown, and the code last submitted to run.",
		"lprog.exercise":  "Exercise %d (%s)",
		"lprog.record":    "checked runs: %d, passed: %d, hints: %d of %d",
		"lprog.passed":    "passed",
		"lprog.solution":  "solution shown",
		"lprog.submitted": "last submitted %s, %s bytes",
		"lprog.run":       "Open that run",
		"lprog.nosub":     "Nothing submitted yet.",
		"lprog.none":      "This lesson has no program exercises.",
		"lprog.code":      "The code last submitted",
	},
}
