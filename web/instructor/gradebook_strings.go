package instructor

import (
	"github.com/rdmalab/rdmalab/web/page"
)

// Strings of the gradebook (gradebook.go).
var gradebookStrings = page.Table{
	"zh": {
		"grade.title":       "成绩册",
		"grade.link":        "成绩册",
		"grade.lede":        "每位学员在每一课：答对的题数/题目总数（至少答对过一次）、✓ 表示已完成、作答次数、该课实验的运行次数、在终端里经检查完成的任务数/该课任务总数，以及编程练习：通过数/练习总数、运行次数、看过的提示条数和看过答案的练习数（点开可看最后一次提交的代码）。",
		"grade.csv":         "下载成绩册 CSV",
		"grade.hardest":     "全课程最难的题（按通过率从低到高）",
		"grade.question":    "题目",
		"grade.noanswers":   "还没有人作答。",
		"grade.tasks":       "终端任务",
		"grade.programs.of": "编程练习通过 %d/%d（运行 %d 次，看提示 %d 条，看答案 %d 题）",
		"grade.seen":        "看过答案的题",
		// Counts (views.Count): zh has no plural form.
		"count.learners":     "名学员",
		"count.learners.one": "名学员",
		"count.attempts":     "次作答",
		"count.attempts.one": "次作答",
		"count.runs":         "次运行",
		"count.runs.one":     "次运行",
	},
	"en": {
		"grade.title":        "Gradebook",
		"grade.link":         "Gradebook",
		"grade.lede":         "Each learner on each lesson: questions answered right (at least once) out of the lesson's questions, ✓ when completed, answers submitted, runs of the lesson's experiments, terminal tasks verified done out of the lesson's tasks, and programs: exercises passed out of the lesson's, checked runs, hints revealed and solutions shown (open it for the last code submitted).",
		"grade.csv":          "Download the gradebook CSV",
		"grade.hardest":      "Hardest questions of the course (lowest facility first)",
		"grade.question":     "Question",
		"grade.noanswers":    "Nobody has answered yet.",
		"grade.tasks":        "terminal tasks",
		"grade.programs.of":  "programs passed %d/%d (runs: %d, hints: %d, solutions shown: %d)",
		"grade.seen":         "answers seen",
		"count.learners":     "learners",
		"count.learners.one": "learner",
		"count.attempts":     "attempts",
		"count.attempts.one": "attempt",
		"count.runs":         "runs",
		"count.runs.one":     "run",
	},
}
