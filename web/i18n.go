package web

import (
	"fmt"
	"sync"

	"github.com/rdmalab/rdmalab/web/views"
)

// langNames are the language switch labels, each in its own language.
var langNames = []struct{ Code, Label string }{
	{"zh", "中文"},
	{"en", "English"},
}

// uiTable is a set of UI texts by language and key.
type uiTable map[string]map[string]string

// uiStrings are the UI texts by language and key: the core table below and
// every feature's own table (declared in the feature's file), merged by
// mergeStrings in the one list here. Every key must exist in every language
// (TestStringsComplete); a key defined twice panics at start-up.
var uiStrings = mergeStrings(coreStrings,
	accountStrings, answerKeyStrings, bodyLimitStrings, cohortStrings, commandStrings,
	gradebookStrings, instructorStrings, labStrings, needsStrings,
	quizStrings, rateLimitStrings, runStrings, stepStrings, storeErrorStrings,
	taskStrings, terminalStrings, termSetupStrings, visualStrings, writeGuardStrings,
	draftStrings, labClassStrings, programStrings, rosterStrings, roleStrings, ltiStrings,
	gradedStrings,
)

// coreStrings are the UI texts shared by every page (layout, home, lesson, errors).
var coreStrings = uiTable{
	"zh": {
		"nav.skip":     "跳到正文",
		"nav.tools":    "语言与外观",
		"theme.toggle": "切换浅色/深色",
		"footer":       "rdmalab · 自托管的 RDMA 动手实验室",

		"home.title":    "课程",
		"home.heading":  "RDMA 动手实验室",
		"home.lede":     "在浏览器里读课、在真实的 Soft-RoCE 上做实验、用检查点题目检验自己。",
		"home.empty":    "课程里还没有课。",
		"home.fallback": "暂无中文版",

		"status.new":       "未开始",
		"status.opened":    "学习中",
		"status.completed": "已完成",

		"lesson.kicker":         "第 %s 课",
		"lesson.duration.value": "时长：%s",
		"lesson.objectives":     "学完这节你能做到",
		"lesson.prereqs":        "先修内容",
		"lesson.toc":            "本节目录",
		"lesson.references":     "延伸阅读",
		"lesson.complete":       "标记本节为已完成",
		"lesson.completed":      "✓ 你已完成本节",
		"lesson.pager":          "上一节与下一节",
		"lesson.prev":           "上一节",
		"lesson.next":           "下一节",
		"lesson.fallback":       "本节还没有中文版，下面显示的是英文原文。",

		"error.home":        "回到课程首页",
		"error.404.title":   "找不到这个页面",
		"error.404.message": "这个地址没有对应的页面：链接可能有误，或者这节课已经改名或移走。",
		"error.403.title":   "请求被拒绝",
		"error.403.message": "这个表单来自其他网站，没有执行。请在本站页面上重新操作。",
		"error.405.title":   "不支持这个请求方法",
		"error.405.message": "这个地址不接受这种请求。",
		"error.500.title":   "出错了",
		"error.500.message": "服务器处理请求时出错了，请稍后再试。错误已记录在服务器日志中。",
		"lesson.skip_toc":   "跳过目录，直接读正文",
		"lesson.runs":       "我的实验记录（每次运行都可回放）",
	},
	"en": {
		"nav.skip":     "Skip to content",
		"nav.tools":    "Language and appearance",
		"theme.toggle": "Toggle light/dark theme",
		"footer":       "rdmalab · a self-hosted, hands-on RDMA lab",

		"home.title":    "Course",
		"home.heading":  "The hands-on RDMA lab",
		"home.lede":     "Read the lessons in your browser, run real experiments on Soft-RoCE, and check yourself with checkpoint questions.",
		"home.empty":    "This course has no lessons yet.",
		"home.fallback": "Not yet in English",

		"status.new":       "Not started",
		"status.opened":    "In progress",
		"status.completed": "Completed",

		"lesson.kicker":         "Lesson %s",
		"lesson.duration.value": "Duration: %s",
		"lesson.objectives":     "After this lesson you can",
		"lesson.prereqs":        "Before this lesson",
		"lesson.toc":            "On this page",
		"lesson.references":     "Further reading",
		"lesson.complete":       "Mark this lesson complete",
		"lesson.completed":      "✓ You completed this lesson",
		"lesson.pager":          "Previous and next lesson",
		"lesson.prev":           "Previous",
		"lesson.next":           "Next",
		"lesson.fallback":       "This lesson is not available in English yet; the Chinese original is shown below.",

		"error.home":        "Back to the course",
		"error.404.title":   "Page not found",
		"error.404.message": "Nothing lives at this address: the link may be wrong, or the lesson was renamed or moved.",
		"error.403.title":   "Request refused",
		"error.403.message": "This form came from another site and was not acted on. Please use the button on this site's page.",
		"error.405.title":   "Method not allowed",
		"error.405.message": "This address does not accept this kind of request.",
		"error.500.title":   "Something went wrong",
		"error.500.message": "The server failed to handle this request; please try again later. The error is in the server log.",
		"lesson.skip_toc":   "Skip the contents, go to the lesson",
		"lesson.runs":       "My runs (every run can be replayed)",
	},
}

// mergeStrings merges the tables into one. A language must be in the first
// table; a key defined twice is a programming error and panics.
func mergeStrings(tables ...uiTable) uiTable {
	out := uiTable{}
	for lang := range tables[0] {
		out[lang] = map[string]string{}
	}
	for _, t := range tables {
		for lang, m := range t {
			dict, ok := out[lang]
			if !ok {
				panic("web: mergeStrings: unknown language " + lang)
			}
			for k, v := range m {
				if _, dup := dict[k]; dup {
					panic("web: mergeStrings: duplicate key " + k)
				}
				dict[k] = v
			}
		}
	}
	return out
}

// translators are built once, from uiStrings.
var translators = sync.OnceValue(func() map[string]views.Tr {
	out := map[string]views.Tr{}
	for lang, dict := range uiStrings {
		out[lang] = func(key string) string {
			if s, ok := dict[key]; ok {
				return s
			}
			missingStrings.Store(key, lang)
			return key // visible in the page; the crawl test fails on it
		}
	}
	return out
})

// missingStrings records keys asked for but defined in no table (key →
// language), so tests that render pages can fail on them.
var missingStrings sync.Map

// tr returns the translator for lang (zh when lang is unknown).
func tr(lang string) views.Tr {
	if t, ok := translators()[lang]; ok {
		return t
	}
	return translators()[defaultLang]
}

// trf formats the string key with args.
func trf(lang, key string, args ...any) string {
	return fmt.Sprintf(tr(lang)(key), args...)
}
