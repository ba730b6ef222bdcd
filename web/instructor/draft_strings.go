package instructor

import "github.com/rdmalab/rdmalab/web/page"

// Strings of the drafts index and preview (drafts.go, web/draft_preview.go).
var draftStrings = page.Table{
	"zh": {
		"draft.link":          "草稿",
		"draft.title":         "草稿课程",
		"draft.lede":          "课程文件夹里 _drafts/ 下的课程：只有教师能在这里预览，学习者看不到（不在课程列表里，/lessons/ 下打不开，也不计入进度和统计）。草稿里的错误不影响正式课程，列在每篇草稿下面。",
		"draft.none":          "课程文件夹里没有 _drafts/ 文件夹。把课程文件夹（例如 _drafts/06-new-topic/index.zh.md）放进去，保存后这里就会列出。",
		"draft.empty":         "_drafts/ 里还没有能加载的课程文件夹。",
		"draft.clean":         "检查通过，没有发现问题。",
		"draft.other":         "草稿文件夹的其他问题",
		"draft.banner":        "草稿预览",
		"draft.banner.more":   "学习者看不到这一页；这里的作答、完成状态都不会记录。",
		"draft.banner.errors": "这篇草稿有错误，查看检查结果",
		"draft.quiz":          "预览：不能在草稿里作答，答案不会记录。",
		"draft.complete":      "预览：草稿不能标记为完成。",
		"draft.task":          "预览：草稿里的任务不能检查，也不会记录。",
	},
	"en": {
		"draft.link":          "Drafts",
		"draft.title":         "Draft lessons",
		"draft.lede":          "Lessons in the course folder's _drafts/: only instructors can preview them here; learners never see them (not in the course list, not at /lessons/, no progress or statistics). A draft's errors never affect the course; they are listed under each draft.",
		"draft.none":          "The course folder has no _drafts/ folder. Put lesson folders there (e.g. _drafts/06-new-topic/index.en.md) and they are listed here once saved.",
		"draft.empty":         "_drafts/ holds no lesson folder that could be loaded yet.",
		"draft.clean":         "Check found nothing.",
		"draft.other":         "Other findings in the drafts folder",
		"draft.banner":        "Draft preview",
		"draft.banner.more":   "Learners cannot see this page; answers and completion are not recorded here.",
		"draft.banner.errors": "This draft has errors: see the findings",
		"draft.quiz":          "Preview: questions cannot be answered in a draft; nothing is recorded.",
		"draft.complete":      "Preview: a draft cannot be marked complete.",
		"draft.task":          "Preview: a draft's tasks cannot be checked; nothing is recorded.",
	},
}
