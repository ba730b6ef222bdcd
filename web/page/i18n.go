package page

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

// Table is a set of UI texts by language and key. A feature declares its
// own (`var xxxStrings = page.Table{"zh": {…}, "en": {…}}`) in its file,
// and its audience's package lists it in the one NewStrings call of its
// i18n.go.
type Table map[string]map[string]string

// coreStrings are the UI texts shared by every page of both audiences
// (layout, home, lesson, errors); NewStrings puts them, and the words of
// a busy database (store_errors.go), first in every set.
var coreStrings = Table{
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

		"run.refused":       "没能开始运行",
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

		"run.refused":       "The run could not start",
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

// Merge merges the tables into one. A language must be in the first
// table; a key defined twice is a programming error and panics.
func Merge(tables ...Table) Table {
	out := Table{}
	for lang := range tables[0] {
		out[lang] = map[string]string{}
	}
	for _, t := range tables {
		for lang, m := range t {
			dict, ok := out[lang]
			if !ok {
				panic("page: Merge: unknown language " + lang)
			}
			for k, v := range m {
				if _, dup := dict[k]; dup {
					panic("page: Merge: duplicate key " + k)
				}
				dict[k] = v
			}
		}
	}
	return out
}

// Strings are one audience's UI texts: the core table and the audience's
// feature tables, merged, with a translator per language built at first
// use. Every key must exist in every language (each package's
// TestStringsComplete).
type Strings struct {
	Table       Table
	translators func() map[string]views.Tr
	// missing records keys asked for but defined in no table (key →
	// language), so tests that render pages can fail on them.
	missing sync.Map
}

// NewStrings merges the core texts and tables into one set.
func NewStrings(tables ...Table) *Strings {
	s := &Strings{Table: Merge(append([]Table{coreStrings, storeErrorStrings}, tables...)...)}
	s.translators = sync.OnceValue(func() map[string]views.Tr {
		out := map[string]views.Tr{}
		for lang, dict := range s.Table {
			out[lang] = func(key string) string {
				if v, ok := dict[key]; ok {
					return v
				}
				s.missing.Store(key, lang)
				return key // visible in the page; the crawl tests fail on it
			}
		}
		return out
	})
	return s
}

// Tr returns the translator for lang (zh when lang is unknown).
func (s *Strings) Tr(lang string) views.Tr {
	if t, ok := s.translators()[lang]; ok {
		return t
	}
	return s.translators()[DefaultLang]
}

// Trf formats the string key in lang with args.
func (s *Strings) Trf(lang, key string, args ...any) string {
	return fmt.Sprintf(s.Tr(lang)(key), args...)
}

// Has reports whether key has a text in lang.
func (s *Strings) Has(lang, key string) bool {
	_, ok := s.Table[lang][key]
	return ok
}

// Missing calls f with every key asked for that no table defines, and the
// language it was asked in.
func (s *Strings) Missing(f func(key, lang string)) {
	s.missing.Range(func(k, v any) bool {
		f(k.(string), v.(string))
		return true
	})
}
