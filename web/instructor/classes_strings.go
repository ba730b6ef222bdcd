package instructor

import "github.com/rdmalab/rdmalab/web/page"

// Strings of classes (classes.go), the instructor's page (the learner's /join has its own in web/join.go).
var cohortStrings = page.Table{
	"zh": {
		"cls.title":        "班级",
		"cls.link":         "加入链接",
		"cls.lede":         "为每个班级创建一个条目，把加入链接或加入码发给学员。学员加入后，班级概览和 CSV 可以只看这个班级。学期结束时归档班级：数据保留，加入码失效，这些学员不再出现在“全部学员”中。",
		"cls.name":         "班级名称",
		"cls.name.example": "例如：2026 春季 A 组",
		"cls.create":       "创建班级",
		"cls.none":         "还没有班级。",
		"cls.code":         "加入码",
		"cls.archived":     "已归档",
		"cls.lms":          "学习平台的课程：学员从学习平台进入，没有加入码",
		"cls.archive":      "归档",
		"cls.reopen":       "重新开放",
		"cls.showarchived": "显示已归档的班级",
		"cls.badname":      "班级名称需要 1 到 %d 个字符，且不能包含控制字符。",
		"cls.all":          "全部学员",
		"cls.filter":       "班级",
		"cls.manage":       "班级",
	},
	"en": {
		"cls.title":        "Classes",
		"cls.link":         "Join link",
		"cls.lede":         "Create one entry per class and send learners its join link or code. Once they join, the dashboard and the CSV exports can show that class alone. At the end of a term, archive the class: its data stays, its code stops working, and its learners leave the \"all learners\" view.",
		"cls.name":         "Class name",
		"cls.name.example": "e.g. 2026 spring, group A",
		"cls.create":       "Create class",
		"cls.none":         "No classes yet.",
		"cls.code":         "Join code",
		"cls.archived":     "archived",
		"cls.lms":          "an LMS course: learners come in from the LMS, no join code",
		"cls.archive":      "Archive",
		"cls.reopen":       "Reopen",
		"cls.showarchived": "Show archived classes",
		"cls.badname":      "The class name must have 1 to %d characters and no control characters.",
		"cls.all":          "All learners",
		"cls.filter":       "Class",
		"cls.manage":       "Classes",
	},
}
