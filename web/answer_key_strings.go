package web

// Strings of the answer key (answer_key.go).
var answerKeyStrings = uiTable{
	"zh": {
		"key.title":        "答案与解析",
		"key.link":         "答案与解析",
		"key.lede":         "全课程每道题的正确答案、各选项的反馈和解析，只对教师开放。打印时只保留题目内容，每课从新的一页开始。",
		"key.answer":       "答案",
		"key.hint":         "提示",
		"key.explanation":  "解析",
		"key.type.single":  "单选",
		"key.type.multi":   "多选",
		"key.type.numeric": "数值",
		"key.type.order":   "排序",
	},
	"en": {
		"key.title":        "Answer key",
		"key.link":         "Answer key",
		"key.lede":         "Every question of the course with its answer, each option's feedback and the explanation; instructors only. Printing keeps only the questions, each lesson on a new page.",
		"key.answer":       "Answer",
		"key.hint":         "Hint",
		"key.explanation":  "Explanation",
		"key.type.single":  "single choice",
		"key.type.multi":   "multiple choice",
		"key.type.numeric": "number",
		"key.type.order":   "order",
	},
}
